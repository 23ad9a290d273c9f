"""A link straight to a run starts opening it when the browser asks for the page (ui/early_open.py):
the page then opens nothing itself; behind a door nothing is opened for the request; odd queries open
nothing and fail nothing."""

from __future__ import annotations

import asyncio

import pytest
from apptest_helpers import BIG, FAILED_CODING, big_store, demo_store, empty_store, page, shown_step  # noqa: F401  (fixtures)

import ui.common
from ui import early_open

TIMELINE = "pages/timeline.py"


@pytest.fixture
def opened(monkeypatch) -> list[str]:
    """The runs open_timeline opens from now on, whoever asks."""
    ids: list[str] = []
    real = ui.common.open_timeline

    def counted(store, session_id):
        ids.append(session_id)
        return real(store, session_id)

    monkeypatch.setattr(ui.common, "open_timeline", counted)
    return ids


def test_the_page_finds_the_run_opened_when_its_link_was_asked_for(demo_store, opened):
    thread = early_open.start(f"session={FAILED_CODING}&step=18".encode())
    thread.join(timeout=60)
    assert opened == [FAILED_CODING]
    tl, _ = ui.common.load_run(demo_store, FAILED_CODING)
    assert [k for k in tl.cache if k[0] == "snapshot"]  # what the agent saw, rebuilt for the linked step
    at = page(TIMELINE, params={"session": FAILED_CODING, "step": "18"})
    assert not at.exception and shown_step(at)["heading"] == "📦 Tool result · step 18"
    assert opened == [FAILED_CODING]  # the page opened nothing itself


def test_the_early_open_adds_no_line_to_the_log(demo_store, opened):
    import logging

    seen: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = seen.append
    logger = logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context")
    logger.addHandler(handler)
    try:
        early_open.start(f"session={FAILED_CODING}".encode()).join(timeout=60)
    finally:
        logger.removeHandler(handler)
    assert opened == [FAILED_CODING] and seen == []


def test_a_long_run_opened_early_is_rebuilt_behind_from_its_first_steps(big_store, opened):
    early_open.start(f"session={BIG}".encode()).join(timeout=120)
    tl, _ = ui.common.load_run(big_store, BIG)
    pending = tl.cache.get(("snapshot pending", 0, len(tl.steps)))
    if pending is not None:
        pending[1].join(timeout=120)
    assert ("snapshot", 0, len(tl.steps)) in tl.cache and opened == [BIG]


def test_behind_a_door_nothing_is_opened_for_the_request(demo_store, opened, monkeypatch):
    monkeypatch.setenv("AGENT_REPLAY_PASSWORD", "a-test-door")
    early_open.start(f"session={FAILED_CODING}".encode()).join(timeout=60)
    assert opened == []


@pytest.mark.parametrize(
    "query",
    [b"", b"step=3", b"session=" + b"x" * 5000, b"a=1&" * 40, b"session=%ff%fe%00", b"session=no-such-run&step=" + b"9" * 40],
)
def test_odd_queries_open_nothing_and_fail_nothing(demo_store, opened, query):
    thread = early_open.start(query)
    if thread is not None:
        thread.join(timeout=60)
    assert opened == []
    assert early_open._busy.acquire(blocking=False)  # and the way is free for the next
    early_open._busy.release()


def test_one_opening_at_a_time(demo_store, opened):
    assert early_open._busy.acquire(blocking=False)
    try:
        assert early_open.start(f"session={FAILED_CODING}".encode()) is None
    finally:
        early_open._busy.release()
    assert opened == []


def test_a_step_past_the_end_is_the_last_step(demo_store, opened):
    early_open.start(f"session={FAILED_CODING}&step=123456".encode()).join(timeout=60)
    assert opened == [FAILED_CODING]


def test_the_middleware_starts_only_for_a_get_of_the_timeline_page(monkeypatch):
    started, passed = [], []
    monkeypatch.setattr(early_open, "start", started.append)

    async def app(scope, receive, send):
        passed.append(scope["path"])

    middleware = early_open.EarlyOpen(app)
    for method, path in [
        ("GET", "/timeline"),
        ("GET", "/base/timeline/"),
        ("POST", "/timeline"),
        ("GET", "/runs"),
        ("GET", "/api/v1/sessions"),
    ]:
        asyncio.run(middleware({"type": "http", "method": method, "path": path, "query_string": b"session=s"}, None, None))
    asyncio.run(middleware({"type": "websocket", "path": "/timeline"}, None, None))
    assert started == [b"session=s", b"session=s"]
    assert passed == ["/timeline", "/base/timeline/", "/timeline", "/runs", "/api/v1/sessions", "/timeline"]

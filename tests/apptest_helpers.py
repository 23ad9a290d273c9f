"""Shared pieces of the page tests: databases to point the app at, and AppTest runs of a page."""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
import textwrap
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import streamlit as st
import streamlit.components.v2.manifest_scanner as manifest_scanner
import streamlit.testing.v1.app_test as app_test_module
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest

from replay_core.cli.serve import answering, free_port
from replay_core.events import SessionEndEvent, SessionEvent, StepEvent
from replay_core.ingest.pipeline import ingest
from replay_core.storage.store import Store

REPO = Path(__file__).resolve().parent.parent
APP = str(REPO / "streamlit_app.py")
FAILED_CODING = "demo-02-coding-format-price-failed"
BIG = "big-run"
BIG_STEPS = 10_000


class _NavigationOnly(PagesManager):
    """What the served app does at start (see streamlit_app.py): never the old `pages/` folder mode.

    AppTest resets that switch before every run, and with it a page would run on its
    own, skipping the entry script with its sign-in door and navigation.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        PagesManager.uses_pages_directory = False


app_test_module.PagesManager = _NavigationOnly


# Every new AppTest scans the metadata of every installed distribution for component manifests
# (~170 here: 0.2 CPU-s, more than most page runs); what is installed does not change while the
# suite runs, so a test process scans once.
_scan_component_manifests = manifest_scanner.scan_component_manifests


@functools.cache
def _installed_component_manifests() -> tuple:
    return tuple(_scan_component_manifests())


manifest_scanner.scan_component_manifests = lambda max_workers=None: list(_installed_component_manifests())


def point_app_at(monkeypatch, url: str) -> None:
    """Point the app at a database and forget what an earlier test cached."""
    monkeypatch.setenv("AGENT_REPLAY_DB_URL", url)
    for name in ("AGENT_REPLAY_PASSWORD", "AGENT_REPLAY_EDITOR_PASSWORD", "AGENT_REPLAY_API_TOKENS"):
        monkeypatch.delenv(name, raising=False)
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def demo_store(demo_db, sqlite_database, monkeypatch) -> Store:
    """A private copy of the demo database (the test process's SQLite test database), with the app pointed at it."""
    from conftest import _copy_sqlite, _kept_store

    point_app_at(monkeypatch, sqlite_database)
    with _kept_store(sqlite_database, lambda store: _copy_sqlite(demo_db, store)) as store:
        yield store


@pytest.fixture
def demo_each_store(demo, monkeypatch) -> Store:
    """The demo runs on SQLite and on PostgreSQL (conftest's `demo`), with the app pointed at them: a page's AppTest
    on both databases, where what the page reads could differ by database (types, ordering, SQL)."""
    point_app_at(monkeypatch, demo.url)
    return demo


@pytest.fixture
def each_empty_store(store, monkeypatch) -> Store:
    """An empty database on SQLite and on PostgreSQL (conftest's `store`), with the app pointed at it: what
    `demo_each_store` is for the demo runs, for a test that writes its own."""
    point_app_at(monkeypatch, store.url)
    return store


@pytest.fixture
def empty_store(sqlite_store, monkeypatch) -> Store:
    """An empty database (`sqlite_store`), with the app pointed at it."""
    point_app_at(monkeypatch, sqlite_store.url)
    return sqlite_store


def big_events(n: int = BIG_STEPS, session_id: str = BIG) -> list:
    """A failed run of n steps: think → call → result → decision loops, an error every 997 steps,
    steps 5001–5004 missing."""
    t0 = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)
    events: list = [
        SessionEvent(
            session_id=session_id,
            name="ten thousand steps",
            model="gpt-4o",
            agent_id="bulk-agent",
            workflow="bulk",
            environment="test",
            started_at=t0,
        )
    ]
    kinds = ["think", "tool_call", "tool_result", "decision"]
    for seq in range(1, n + 1):
        if 5001 <= seq <= 5004:
            continue
        kind = kinds[(seq - 1) % 4]
        fields: dict = {
            "type": kind,
            "timestamp": t0 + timedelta(seconds=seq),
            "tokens_in": 100,
            "tokens_out": 10,
            "cost_usd": 0.0001,
        }
        if kind == "tool_call":
            fields.update(tool_name="lookup", tool_args={"row": seq}, tool_call_id=f"c{seq}")
        elif kind == "tool_result":
            fields.update(tool_name="lookup", tool_call_id=f"c{seq - 1}", content=f'{{"row": {seq}}}')
            if seq % 997 == 3:
                fields.update(status="error", error_class="LookupError", content=f"row {seq} not found")
        else:
            fields["content"] = f"Step {seq}: looking at row {seq}."
        events.append(StepEvent(session_id=session_id, event_id=f"e{seq}", seq=seq, **fields))
    events.append(
        SessionEndEvent(
            session_id=session_id,
            status="failed",
            error_class="LookupError",
            outcome="Stopped after too many lookup errors",
            ended_at=t0 + timedelta(seconds=n + 1),
        )
    )
    return events


@pytest.fixture
def big_store(empty_store) -> Store:
    ingest(empty_store, big_events())
    return empty_store


def page(path: str, *, params: dict | None = None, state: dict | None = None, timeout: float = 30) -> AppTest:
    """AppTest of one page through the app's navigation (with its door and sidebar), opened in one run
    as a deep link opens it where the page's URL path is its file name."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    for key, value in (state or {}).items():
        at.session_state[key] = value
    for key, value in (params or {}).items():
        at.query_params[key] = value
    by_file_name = at.switch_page(path)._page_hash  # before a run AppTest knows a page by its file name only
    at.run()
    if at.switch_page(path)._page_hash != by_file_name:  # a URL path of its own: the default page ran
        at.run()
    return at


def texts(at: AppTest) -> str:
    """Everything the page shows as text, in one string (for 'is it on the page' checks)."""
    parts = []
    for kind in (
        "title",
        "header",
        "subheader",
        "markdown",
        "caption",
        "text",
        "code",
        "info",
        "warning",
        "error",
        "success",
        "metric",
    ):
        for el in getattr(at, kind):
            parts.append(str(getattr(el, "value", "")))
            parts.append(str(getattr(el, "label", "")))
    parts += [b.label for b in at.button]
    parts += component_texts(at)
    return "\n".join(parts)


def component_data(at: AppTest, key: str) -> dict:
    """The data a page gave one of its components drawn by the browser (ui/components.py): AppTest
    holds such an element but not what its script draws from that data."""
    found = [el for el in at.get("bidi_component") if el.key == key]
    assert len(found) == 1, f"{len(found)} components keyed {key!r}"
    return json.loads(found[0].proto.json)


def cursor(at: AppTest) -> int:
    """The step the timeline's strip and slider show (ui/assets/strip.js)."""
    return component_data(at, "strip")["cursor"]


def jumps(at: AppTest) -> dict[str, int | None]:
    """Where the strip's jump buttons go (ui/assets/strip.js): name → seq, None for a button with nowhere to go."""
    return {name: seq for name, _, seq, _ in component_data(at, "strip")["jumps"]}


def jump(at: AppTest, name: str) -> AppTest:
    """A click on the strip's `name` jump button: the page run as after the browser sends its target."""
    target = jumps(at)[name]
    assert target is not None, f"the {name} button has nowhere to go"
    return trigger(at, "strip", "picked", target)


def shown_step(at: AppTest) -> dict:
    """What the timeline's selected-step view draws (ui/step_view.step_view): heading, facts, lines, call,
    error, content, notes."""
    return component_data(at, "step_view")


def filter_values(at: AppTest) -> dict:
    """What the runs' filter bar shows (ui/assets/filters.js): key → its field's value ("" for Any or empty)."""
    return {f["key"]: f["value"] for f in component_data(at, "filters")["fields"]}


def set_filter(at: AppTest, key: str, value) -> AppTest:
    """A field of the filter bar changed in the browser: what its script sends ("" or False lets the filter go)."""
    return trigger(at, "filters", "set", {"key": key, "value": value})


def metric_cards(at: AppTest, key: str) -> list[dict]:
    """The numbers of a row drawn by ui/components.metrics: each {"label", "value", "delta", "tone", "help"}."""
    return component_data(at, key)["cards"]


def component_texts(at: AppTest) -> list[str]:
    """Every text the page's components draw: the step rows', the numbers', the selected step's and the transcript's
    (ui/assets/*.js)."""
    parts = []
    for el in at.get("bidi_component"):
        data = json.loads(el.proto.json)
        parts += [row["text"] for row in data.get("rows", [])]
        parts += [text for card in data.get("cards", []) for text in (card["label"], card["value"], card["delta"] or "")]
        parts += data.get("notes", [])
        for message in data.get("messages", []):
            parts += [message["origin"], *(text for _, text in message["parts"])]
            parts += [text for call in message.get("calls", []) for text in (call["name"], call["arguments"])]
        if "heading" in data:  # the selected step: its texts, and its content and arguments as recorded
            call, content = data["call"] or {}, data["content"] or {}
            parts += [
                data["heading"],
                data["facts"],
                *data["lines"],
                data["error"] or "",
                *data["notes"],
                call.get("text", ""),
                *(text for _, text in call.get("long", [])),
                *(content.get(kind, "") for kind in ("line", "box", "recorded")),
            ]
    return parts


def trigger(at: AppTest, key: str, event: str, value) -> AppTest:
    """Run the page as the browser does after a component's script calls `setTriggerValue(event, value)`.
    AppTest has no call for it, so the widget state is made the way Streamlit's frontend makes it: a
    list of {event, value} under the component's trigger id."""
    from streamlit.components.v2.bidi_component.main import _make_trigger_id
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    [el] = [el for el in at.get("bidi_component") if el.key == key]
    states = at._tree.get_widget_states()
    states.widgets.append(
        WidgetState(id=_make_trigger_id(el.proto.id, "events"), json_trigger_value=json.dumps([{"event": event, "value": value}]))
    )
    return at._run(states)


DATABASES = [
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
]  # a module fixture's params: each of its tests on both


@contextmanager
def database(kind: str, folder: Path, demo_db: str | None = None):
    """A database of its own for one module's served app (its tests write, each on runs of its own): on SQLite a
    file in `folder`, on PostgreSQL a scratch database dropped after; with the demo runs when `demo_db` (the
    module's demo file) is given. Yields its URL."""
    from conftest import _scratch_pg_database

    if kind == "sqlite":
        path = folder / "replay.db"
        if demo_db:
            shutil.copyfile(demo_db, path)
        Store(f"sqlite:///{path}").close()
        yield f"sqlite:///{path}"
        return
    with _scratch_pg_database("agent_replay_served") as url:
        if demo_db:
            from replay_core.demo import load_demo

            store = Store(url, migrate=False)
            load_demo(store, only_if_empty=False)
            store.close()
        yield url


@contextmanager
def served_app(db_url: str, *, script: str = "streamlit_app.py", **env: str):
    """`streamlit run streamlit_app.py` (what `make run` starts; or another `script`) on a free port of
    127.0.0.1; yields its base URL."""
    port = free_port()
    argv = [
        str(Path(sys.executable).parent / "streamlit"),
        "run",
        script,
        "--server.headless",
        "true",
        "--server.address",
        "127.0.0.1",
        "--server.port",
        str(port),
        "--server.fileWatcherType",
        "none",
        "--browser.gatherUsageStats",
        "false",
    ]
    env = {**os.environ, "AGENT_REPLAY_DB_URL": db_url, **env}
    with answering(argv, f"http://127.0.0.1:{port}", "/_stcore/health", cwd=REPO, env=env) as base:
        yield base


def emit_agent_spans(tracer, conversation: str, queries: tuple[str, ...] = ("status of PO-1",)) -> None:
    """OpenTelemetry GenAI spans of one small agent run: the agent, a model call, a search per query."""
    conv = {"gen_ai.conversation.id": conversation}
    with tracer.start_as_current_span(
        "invoke_agent triage", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "triage", **conv}
    ):
        with tracer.start_as_current_span(
            "chat gpt-4o",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.input_tokens": 120,
                "gen_ai.usage.output_tokens": 12,
                **conv,
            },
        ):
            pass
        for query in queries:
            with tracer.start_as_current_span(
                "execute_tool search",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "search",
                    "gen_ai.tool.call.arguments": f'{{"q": "{query}"}}',
                    **conv,
                },
            ):
                pass


_SERVE_API = textwrap.dedent("""
    import sys, uvicorn
    from replay_core.server.api import create_app
    from replay_core.server.auth import Access
    from replay_core.storage.store import Store
    app = create_app(Store(sys.argv[1]), access=Access(api_tokens=(sys.argv[3],)))
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
""")


@contextmanager
def served_api(db_url: str, token: str):
    """The API alone under uvicorn in its own process (its own Store); yields its base URL."""
    port = free_port()
    with answering([sys.executable, "-c", _SERVE_API, db_url, str(port), token], f"http://127.0.0.1:{port}", "/healthz") as base:
        yield base

"""The first screen through AppTest: name and sentence, what needs attention (originals only), start points."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from apptest_helpers import FAILED_CODING, demo_store, empty_store, page, texts  # noqa: F401  (fixtures)

from replay_core.events import SessionEndEvent, SessionEvent
from replay_core.ingest.formats import registry
from replay_core.ingest.pipeline import ingest
from replay_core.storage.store import SessionFilter
from ui.common import md
from ui.home_view import PITCH, SDK_SNIPPET, attention, day_start, snippet_markdown

HOME = "pages/home.py"


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_the_first_screen_is_the_default_page(demo_store):
    at = page(HOME)
    assert not at.exception
    assert at.title[0].value == "Agent Replay" and at.markdown[0].value == PITCH
    shown = metrics(at)
    today = day_start()
    assert shown["Failed today"] == str(demo_store.count_sessions(SessionFilter(status="failed", since=today)))
    assert shown["Failed this week"] == str(
        demo_store.count_sessions(SessionFilter(status="failed", since=today - timedelta(days=6)))
    )
    assert shown["Still running"] == "1"
    assert shown["Waiting in your review queues"] == "0"  # no queue made yet
    body = texts(at)
    for fmt in registry().values():
        assert md(fmt.label) in body
    assert snippet_markdown() in [m.value for m in at.markdown]
    assert len(SDK_SNIPPET.splitlines()) == 3
    links = {(link.proto.page, link.proto.query_string) for link in at.get("page_link")}
    assert any(page.endswith("timeline") and FAILED_CODING in query for page, query in links), links


def test_counts_are_of_original_runs_only(empty_store):
    now = datetime.now(UTC)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    started = max(now - timedelta(minutes=5), midnight)  # today, also when the test runs just after midnight
    events = [
        SessionEvent(session_id="orig", name="a run", started_at=started),
        SessionEndEvent(session_id="orig", status="failed", error_class="Boom", ended_at=now),
        SessionEvent(session_id="rep", name="its replay", started_at=started + (now - started) / 2, replay_of="orig"),
        SessionEndEvent(session_id="rep", status="failed", ended_at=now),
    ]
    ingest(empty_store, events)
    assert {k: n for k, (n, _) in attention(empty_store).items()} == {
        "Failed today": 1,
        "Failed this week": 1,
        "Still running": 0,
    }
    at = page(HOME)
    assert metrics(at)["Failed today"] == "1"
    assert "its replay" not in texts(at)


def test_an_empty_database_still_shows_where_to_start(empty_store):
    at = page(HOME)
    assert not at.exception
    assert metrics(at)["Failed this week"] == "0"
    assert "No failed run recorded. 🎉" in texts(at)


def test_an_old_runs_link_to_the_root_still_opens_the_runs_list(demo_store):
    at = page(HOME, params={"status": "failed"})
    assert at.title[0].value == "Runs" and at.query_params["status"] == "failed"


def test_the_first_screen_counts_what_waits_in_your_review_queues(demo_store):
    from replay_core.storage.actor import Actor
    from replay_core.team import queues

    editor = Actor("Eve", "editor", "test")
    made = queues.create(demo_store, "Failed, twice over", flt=SessionFilter(status="failed"), reviews_per_item=2, actor=editor)
    queues.create(demo_store, "Ben's only", flt=SessionFilter(status="failed"), assignees=["Ben"], actor=editor)
    item = queues.next_item(demo_store, made["id"], "Ana", actor=editor)
    queues.save_review(demo_store, made["id"], item["id"], "Ana", "Bad", actor=editor)
    at = page(HOME, state={"reviewer": "Ana"})
    assert not at.exception
    assert metrics(at)["Waiting in your review queues"] == str(2 * made["items"] - 1)  # Ben's queue is not Ana's
    labels = [link.label for link in at.get("page_link")]
    assert any(label.startswith("Failed, twice over · 0 of") for label in labels), labels
    assert not any("Ben" in label for label in labels)

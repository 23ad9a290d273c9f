"""Storage and the ingestion pipeline, on SQLite and PostgreSQL alike."""

from datetime import UTC, datetime, timedelta

import orjson
import pytest
from sqlalchemy import text

from replay_core.events import SessionEndEvent, SessionEvent, StepEvent
from replay_core.ingest.pipeline import ImportRejected, import_bytes, ingest
from replay_core.storage.store import SessionFilter

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def step(sid, seq, kind="think", **kw):
    return StepEvent(session_id=sid, event_id=f"e{seq}", seq=seq, type=kind, timestamp=T0 + timedelta(seconds=seq), **kw)


def test_write_and_read_back(store):
    report = ingest(
        store,
        [
            SessionEvent(session_id="r1", name="refund", model="gpt-4o", agent_id="support", tags=["vip"], started_at=T0),
            step("r1", 1, content="look the order up", tokens_in=10, tokens_out=5, cost_usd=0.001),
            step("r1", 2, "tool_call", tool_name="get_order", tool_args={"order_id": "A-17"}, tool_call_id="c1"),
            step(
                "r1",
                3,
                "tool_result",
                tool_name="get_order",
                content='{"status": "shipped"}',
                tool_call_id="c1",
                context=[{"role": "user", "content": "refund please"}],
            ),
            SessionEndEvent(session_id="r1", status="succeeded", outcome="refunded"),
        ],
    )
    assert report.sessions == ["r1"] and report.steps == 3 and report.duplicates == 0
    session = store.get_session("r1")
    assert session["status"] == "succeeded" and session["outcome"] == "refunded"
    assert session["steps"] == 3 and session["tokens_in"] == 10 and session["tags"] == ["vip"]
    assert session["started_at"] == T0
    assert session["ended_at"] == T0 + timedelta(seconds=3)
    steps = store.load_steps("r1")
    assert [s.seq for s in steps] == [1, 2, 3]
    assert steps[1].tool_args == {"order_id": "A-17"}
    assert steps[0].timestamp == T0 + timedelta(seconds=1)
    assert store.context_event_ids("r1") == {"e3"}
    assert store.step_context("r1", "e3") == [{"role": "user", "content": "refund please"}]


def test_same_event_twice_is_stored_once(store):
    events = [SessionEvent(session_id="r1"), step("r1", 1), step("r1", 2)]
    ingest(store, events)
    again = ingest(store, events + [step("r1", 2), step("r1", 3)])
    assert again.steps == 1 and again.duplicates == 3
    assert [s.seq for s in store.load_steps("r1")] == [1, 2, 3]


def test_out_of_order_and_late_events_are_placed_by_seq(store):
    ingest(store, [step("r1", 3, content="c"), step("r1", 1, content="a")])
    ingest(store, [step("r1", 2, content="b")])
    assert [s.content for s in store.load_steps("r1")] == ["a", "b", "c"]


def test_steps_without_seq_go_after_the_last(store):
    ingest(store, [step("r1", 5)])
    ingest(store, [StepEvent(session_id="r1", type="think", content="x"), StepEvent(session_id="r1", type="think", content="y")])
    assert [(s.seq, s.content) for s in store.load_steps("r1")][1:] == [(6, "x"), (7, "y")]


def test_running_then_incomplete_then_revived(store):
    now = datetime.now(UTC)
    ingest(store, [StepEvent(session_id="r1", event_id="a", seq=1, type="think", timestamp=now - timedelta(hours=2))])
    assert store.get_session("r1")["status"] == "running"
    assert store.expire_idle(timedelta(minutes=30)) == 1
    assert store.get_session("r1")["status"] == "incomplete"
    ingest(store, [StepEvent(session_id="r1", event_id="b", seq=2, type="think", timestamp=now)])
    assert store.get_session("r1")["status"] == "running"
    assert store.expire_idle(timedelta(minutes=30)) == 0


def test_list_filters_and_paging(store):
    for i in range(7):
        ingest(
            store,
            [
                SessionEvent(
                    session_id=f"r{i}",
                    model="gpt-4o" if i % 2 else "claude",
                    started_at=T0 + timedelta(hours=i),
                    tags=["nightly"] if i == 3 else None,
                    environment="prod",
                ),
                step(f"r{i}", 1, content=f"searching for invoice {i}"),
                SessionEndEvent(session_id=f"r{i}", status="failed" if i == 4 else "succeeded"),
            ],
        )
    assert [r["id"] for r in store.list_sessions(limit=3)] == ["r6", "r5", "r4"]
    assert [r["id"] for r in store.list_sessions(limit=3, offset=3)] == ["r3", "r2", "r1"]
    assert store.count_sessions(SessionFilter(model="gpt-4o")) == 3
    assert [r["id"] for r in store.list_sessions(SessionFilter(status="failed"))] == ["r4"]
    assert [r["id"] for r in store.list_sessions(SessionFilter(tag="nightly"))] == ["r3"]
    assert [r["id"] for r in store.list_sessions(SessionFilter(text="INVOICE 5"))] == ["r5"]
    assert store.count_sessions(SessionFilter(since=T0 + timedelta(hours=5))) == 2
    assert store.distinct_values("model") == ["claude", "gpt-4o"]
    store.annotate("r2", "bad", "wrong refund amount", event_id="e1", author="ana")
    assert [r["id"] for r in store.list_sessions(SessionFilter(review="bad"))] == ["r2"]
    assert store.count_sessions(SessionFilter(review="unreviewed")) == 6
    assert store.annotations("r2")[0]["text"] == "wrong refund amount"
    with pytest.raises(ValueError, match="label"):
        store.annotate("r2", "meh")


def test_delete_cascades_and_retention(store):
    old = datetime.now(UTC) - timedelta(days=40)
    for sid, start in (("old", old), ("kept", old), ("new", datetime.now(UTC))):
        ingest(store, [SessionEvent(session_id=sid, started_at=start), step(sid, 1, context=[{"role": "user", "content": "x"}])])
    store.add_attachment("old", b"\x89PNG...", event_id="e1", name="shot.png", mime_type="image/png")
    store.annotate("kept", "good")
    assert store.delete_older_than(30, keep_annotated=True) == 1
    assert store.session_ids() == sorted(["kept", "new"], key=lambda s: 0 if s == "kept" else 1)
    with store.engine.connect() as conn:
        for table in ("steps", "step_contexts", "attachments"):
            assert conn.scalar(text(f"select count(*) from {table} where session_id = 'old'")) == 0


def test_attachments_are_listed_without_bytes(store):
    ingest(store, [SessionEvent(session_id="r1")])
    aid = store.add_attachment("r1", b"\x89PNG\r\n", event_id="e1", name="page.png", mime_type="image/png")
    listed = store.list_attachments("r1")
    assert listed[0]["name"] == "page.png" and "data" not in listed[0]
    assert store.attachment_data(aid) == b"\x89PNG\r\n"


def _native(*objs) -> bytes:
    return b"\n".join(orjson.dumps({"schema": "agent-replay/v1", **o}) for o in objs) + b"\n"


def test_malformed_file_is_refused_whole_with_line_numbers(store):
    data = (
        _native(
            {"kind": "session", "session_id": "r1"},
            {"kind": "step", "session_id": "r1", "event_id": "a", "type": "think"},
            {"kind": "step", "session_id": "r1", "event_id": "b", "type": "thinking"},
        )
        + b"{not json\n"
    )
    with pytest.raises(ImportRejected) as info:
        import_bytes(store, data, "run.jsonl")
    where = [e.where for e in info.value.errors]
    assert where == ["run.jsonl:3", "run.jsonl:4"]
    assert "type" in info.value.errors[0].reason
    assert store.count_sessions() == 0
    report = import_bytes(store, data, "run.jsonl", skip_bad=True)
    assert report.steps == 1 and [str(e) for e in report.errors][1].startswith("run.jsonl:4: invalid JSON")


def test_failed_write_keeps_what_was_stored(store, monkeypatch):
    ingest(store, [SessionEvent(session_id="r1"), step("r1", 1)])
    before = store.load_steps("r1")
    from replay_core.storage import store as store_module

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(store_module.Store, "_new_steps", boom)
    with pytest.raises(RuntimeError):
        ingest(store, [SessionEvent(session_id="r2"), step("r2", 1), SessionEndEvent(session_id="r1", status="failed")])
    assert store.get_session("r2") is None
    assert store.get_session("r1")["status"] == "running"
    assert store.load_steps("r1") == before


def test_source_defaults_to_the_format(store):
    report = import_bytes(store, _native({"kind": "step", "session_id": "r9", "type": "think", "content": "hi"}), "x.jsonl")
    assert report.files[0]["format"] == "native"
    assert store.get_session("r9")["source"] == "native"

"""A run's user and thread (`user_id`, `thread_id`) from every way in, on SQLite and PostgreSQL: the native
contract, the SDK, OpenTelemetry spans (`user.id`, `session.id`, `enduser.id`, `gen_ai.conversation.id`,
Langfuse's `langfuse.user.id` / `langfuse.session.id`), Langfuse exports (`userId`, `sessionId`), LangSmith
runs (`extra.metadata`: `user_id`, `thread_id` / `session_id` / `conversation_id`); redacted as identifiers
that stay apart; filtered on; kept by the migration both ways.

Real files: tests/fixtures/frameworks/pydantic-ai-v6-ok (pydantic-ai's spans carry `gen_ai.conversation.id`),
tests/fixtures/langsmith/batch-thread (the LangSmith SDK's requests for a run whose metadata names a user and a
thread; its other thread keys are that capture with the key renamed). Hand-made: the Langfuse exports
(tests/fixtures/langfuse/README.md), the OTLP spans built below, and the LangSmith export file's metadata.
"""

from __future__ import annotations

import json

import orjson
import pytest
from conftest import FIXTURES
from starlette.testclient import TestClient
from test_langsmith_runs import TOKEN, _post, _requests

from replay_core.events import SessionEndEvent, SessionEvent, StepEvent
from replay_core.ingest.pipeline import import_bytes, import_file
from replay_core.sdk.recorder import Recorder
from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.storage.store import SessionFilter


def _only(store) -> dict:
    [run] = store.list_sessions(SessionFilter(include_replays=True, experiments=True))
    return run


def test_the_native_contract_carries_them_and_export_gives_them_back(store):
    events = [
        SessionEvent(session_id="n1", user_id="customer-22", thread_id="support-7734"),
        StepEvent(session_id="n1", type="input", content="hello"),
        SessionEndEvent(session_id="n1"),
    ]
    lines = b"".join(orjson.dumps(e.to_json_dict()) + b"\n" for e in events)
    import_bytes(store, lines, "run.jsonl")
    run = _only(store)
    assert (run["user_id"], run["thread_id"]) == ("customer-22", "support-7734")
    exported = [e.to_json_dict() for e in store.export_events(["n1"])]
    assert exported[0]["user_id"] == "customer-22" and exported[0]["thread_id"] == "support-7734"


def test_a_user_id_longer_than_an_identifier_is_refused_naming_it():
    with pytest.raises(ValueError, match="user_id"):
        SessionEvent(session_id="x", user_id="u" * 201)


def test_the_sdk_takes_them_when_a_run_starts(store, tmp_path):
    rec = Recorder(store.url, spool_dir=str(tmp_path / "spool"), flush_interval=0.05)
    try:
        with rec.session("turn 1", user_id="tenant-a", thread_id="chat-1") as run:
            run.think("thinking")
    finally:
        rec.close()
    run = _only(store)
    assert (run["user_id"], run["thread_id"], run["source"]) == ("tenant-a", "chat-1", "sdk")


def test_otel_spans_of_pydantic_ai_name_their_conversation(store):
    import_file(store, FIXTURES / "frameworks" / "pydantic-ai-v6-ok" / "001.json")
    run = _only(store)
    assert run["thread_id"] == "01a24b35-bfa6-7025-a125-15c09950b95f" and run["user_id"] is None


def _span(span_id: str, attributes: dict, parent: str | None = None) -> dict:
    return {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": span_id,
        **({"parentSpanId": parent} if parent else {}),
        "name": "invoke_agent support" if parent is None else "chat gpt-4o-mini",
        "startTimeUnixNano": "1767225600000000000",
        "endTimeUnixNano": "1767225601000000000",
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }


def _otlp(*spans: dict) -> bytes:
    return json.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": list(spans)}]}]}).encode()


@pytest.mark.parametrize(
    ("root", "child", "expected"),
    [
        ({"user.id": "u-1", "session.id": "s-1"}, {}, ("u-1", "s-1")),
        ({"gen_ai.operation.name": "invoke_agent"}, {"enduser.id": "u-2", "gen_ai.conversation.id": "c-2"}, ("u-2", "c-2")),
        ({"langfuse.user.id": "u-3", "langfuse.session.id": "s-3"}, {}, ("u-3", "s-3")),
        ({"user.id": "root-user"}, {"user.id": "child-user"}, ("root-user", None)),  # the root's first
    ],
)
def test_otel_attributes_name_the_user_and_the_thread(store, root, child, expected):
    body = _otlp(_span("a1a1a1a1a1a1a1a1", root), _span("b2b2b2b2b2b2b2b2", child, parent="a1a1a1a1a1a1a1a1"))
    import_bytes(store, body, "spans.otlp.json")
    run = _only(store)
    assert (run["user_id"], run["thread_id"]) == expected


def test_otel_spans_sent_to_the_receiver_carry_them(store):
    with TestClient(create_app(store, access=Access(api_tokens=(TOKEN,)))) as client:
        body = _otlp(_span("a1a1a1a1a1a1a1a1", {"user.id": "u-9", "session.id": "s-9"}))
        headers = {"Authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
        res = client.post("/v1/traces", content=body, headers=headers)
        assert res.status_code == 200, res.text
    run = _only(store)
    assert (run["user_id"], run["thread_id"]) == ("u-9", "s-9")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ui_export_agent_run.json", ("user-481", "chat-2026-03-02-0007")),
        ("api_trace_failed.json", ("customer-22", "support-7734")),
    ],
)
def test_langfuse_exports_name_the_user_and_the_session(store, name, expected):
    import_file(store, FIXTURES / "langfuse" / name)
    run = _only(store)
    assert (run["user_id"], run["thread_id"]) == expected


def _send(store, requests) -> dict:
    with TestClient(create_app(store, access=Access(api_tokens=(TOKEN,)))) as client:
        for request in requests:
            _post(client, *request)
    return _only(store)


def test_the_langsmith_sdk_names_the_user_and_the_thread(store):
    run = _send(store, _requests("batch-thread"))  # captured: `langsmith_extra={"metadata": {...}}` on the call
    assert (run["user_id"], run["thread_id"], run["status"]) == ("customer-22", "support-7734", "succeeded")


@pytest.mark.parametrize("key", ["session_id", "conversation_id"])
def test_langsmiths_other_thread_keys(store, key):
    requests = []
    for path, content_type, body in _requests("batch-thread"):
        text = body.decode().replace('"thread_id":"support-7734"', f'"{key}":"support-7734"')
        requests.append((path, content_type, text.encode()))
    run = _send(store, requests)
    assert (run["user_id"], run["thread_id"]) == ("customer-22", "support-7734")


def test_a_langsmith_export_file_reads_them_too(store, tmp_path):
    doc = json.loads((FIXTURES / "langchain" / "langsmith_agent_run.json").read_text())
    doc["extra"]["metadata"] |= {"user_id": "u-5", "thread_id": "t-5"}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    import_file(store, path)
    run = _only(store)
    assert (run["user_id"], run["thread_id"]) == ("u-5", "t-5")


def test_e_mail_addresses_as_users_are_redacted_and_stay_two_users(store, monkeypatch):
    monkeypatch.setenv("AGENT_REPLAY_REDACT_EMAILS", "1")
    for sid, user in (("r1", "ana@example.com"), ("r2", "bo@example.com")):
        events = [
            SessionEvent(session_id=sid, user_id=user, thread_id=f"thread of {user}"),
            StepEvent(session_id=sid, type="input", content="hello"),
        ]
        import_bytes(store, b"".join(orjson.dumps(e.to_json_dict()) + b"\n" for e in events), f"{sid}.jsonl")
    users = {r["user_id"] for r in store.list_sessions()}
    threads = {r["thread_id"] for r in store.list_sessions()}
    assert len(users) == 2 and len(threads) == 2
    assert not any("example.com" in v for v in users | threads)


def test_filters_pick_a_users_and_a_threads_runs(store):
    events = []
    for sid, user, thread in (("a", "u1", "t1"), ("b", "u1", "t2"), ("c", "u2", "t2"), ("d", None, None)):
        events += [SessionEvent(session_id=sid, user_id=user, thread_id=thread), SessionEndEvent(session_id=sid)]
    store.write(events)
    assert sorted(store.session_ids(SessionFilter(user_id="u1"))) == ["a", "b"]
    assert sorted(store.session_ids(SessionFilter(thread_id="t2"))) == ["b", "c"]
    assert store.session_ids(SessionFilter(user_id="u2", thread_id="t1")) == []
    assert store.daily_rows(SessionFilter(user_id="u1")) is None  # the per-day cells keep no user: read per run
    with TestClient(create_app(store, access=Access(api_tokens=(TOKEN,)))) as client:
        page = client.get("/api/v1/sessions", params={"user_id": "u1"}, headers={"Authorization": f"Bearer {TOKEN}"}).json()
    assert sorted(r["id"] for r in page["sessions"]) == ["a", "b"] and page["total"] == 2


def test_a_later_session_event_sets_them_on_a_live_run(store):
    store.write([SessionEvent(session_id="live"), StepEvent(session_id="live", type="input", content="hi")])
    store.write([SessionEvent(session_id="live", user_id="late-user", thread_id="late-thread")])
    run = _only(store)
    assert (run["user_id"], run["thread_id"]) == ("late-user", "late-thread")


def test_the_migration_adds_and_drops_the_columns_keeping_the_runs(store):
    from alembic import command
    from sqlalchemy import inspect

    from replay_core.storage.migrations import alembic_config

    store.write([SessionEvent(session_id="kept", user_id="u", thread_id="t"), SessionEndEvent(session_id="kept")])
    command.downgrade(alembic_config(store.engine), "0016_monitors")
    assert {"user_id", "thread_id"}.isdisjoint(c["name"] for c in inspect(store.engine).get_columns("sessions"))
    command.upgrade(alembic_config(store.engine), "head")
    indexes = {i["name"] for i in inspect(store.engine).get_indexes("sessions")}
    assert {"ix_sessions_user_id_started_at", "ix_sessions_thread_id_started_at"} <= indexes
    run = _only(store)
    assert run["id"] == "kept" and run["user_id"] is None and run["status"] == "succeeded"


def test_an_otlp_export_keeps_them(store, tmp_path):
    import io

    from replay_core.ingest.formats import otlp_export
    from replay_core.storage.store import Store

    store.write(
        [
            SessionEvent(session_id="x1", name="turn", user_id="u-7", thread_id="conv-7"),
            StepEvent(session_id="x1", type="think", content="…", model="m"),
            SessionEndEvent(session_id="x1"),
        ]
    )
    out = io.BytesIO()
    otlp_export.write(store.export_events(["x1"]), out)
    back = Store(f"sqlite:///{tmp_path / 'back.db'}")
    import_bytes(back, out.getvalue(), "x1.otlp.json")
    run = _only(back)
    back.close()
    assert (run["user_id"], run["thread_id"]) == ("u-7", "conv-7")

"""GenAI events on /v1/logs joined to their spans: opentelemetry-instrumentation-openai-v2 in events mode
(tests/fixtures/frameworks/openai-v2-events-*) sends each model call's messages as a log record, before or
after the span it names; either way the model steps get their context and answer and the tool calls their
arguments, and every record is accounted for."""

from __future__ import annotations

import gzip
import json
import shutil

import orjson
import pytest
from framework_captures import FRAMEWORKS, ORDERS, post, requests
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from replay_core.ingest import otlp_logs
from replay_core.ingest.formats.otel.logs import span_contents
from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.storage.store import Store

CAPTURES = ("openai-v2-events-ok", "openai-v2-events-tool-error", "openai-v2-events-slow")
SYSTEM = "You are a concise travel assistant. Use the tools, then answer in one sentence."


def _model_steps(store):
    [run] = store.list_sessions()
    contexts = store.step_contexts(run["id"])
    steps = store.load_steps(run["id"])
    thinks = sorted((s for s in steps if s.type == "think"), key=lambda s: s.timestamp)
    return run, steps, [(s, contexts.get(s.event_id)) for s in thinks]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("capture", CAPTURES)
def test_message_content_reaches_the_steps_in_any_order(sqlite_store, capture, order):
    done = post(sqlite_store, capture, order, seed=7)
    assert done.unsent == []
    accounts = [r for r in done.reports if isinstance(r, dict)]
    assert sum(a["log_records"] for a in accounts) == sum(a["used"] for a in accounts) == 3
    assert all(a["spans_filled"] + a["spans_held"] == a["used"] for a in accounts)
    run, steps, thinks = _model_steps(sqlite_store)
    assert (run["tokens_in"], run["tokens_out"]) == (660, 36)
    assert [[m["role"] for m in c or []] for _, c in thinks] == [
        ["system", "user"],
        ["system", "user", "assistant", "tool"],
        ["system", "user", "assistant", "tool", "assistant", "tool"],
    ]
    assert thinks[0][1][0]["content"] == SYSTEM
    last = json.loads((FRAMEWORKS / capture / "manifest.json").read_text())["outcome"]["final_output"]
    assert thinks[-1][0].content == last
    calls = sorted((s for s in steps if s.type == "tool_call"), key=lambda s: s.timestamp)
    assert [(c.tool_name, c.tool_args, c.tool_call_id) for c in calls] == [
        ("get_weather", {"city": "Paris"}, "call_get_weather_1"),
        ("get_time", {"city": "Paris"}, "call_get_time_2"),
    ]
    rows = sqlite_store.otlp_state([thinks[0][0].metadata["otel"]["trace_id"]])[1]
    assert [r for r in rows if r["side"] == "log"] == []  # nothing left waiting once every span came


def test_events_after_their_spans_fill_the_stored_steps_on_both_databases(store):
    post(store, "openai-v2-events-ok", "reversed")  # the spans first, then the events
    run, steps, thinks = _model_steps(store)
    assert [len(c or []) for _, c in thinks] == [2, 4, 6]
    assert [s.tool_args for s in steps if s.type == "tool_call"] == [{"city": "Paris"}] * 2
    # the tool results' text, from the tool messages the next model call received; nothing left said missing
    results = {s.tool_name: (s.content, s.metadata["content_from"]["model_input"]) for s in steps if s.type == "tool_result"}
    assert results == {
        "get_weather": ("Sunny, 21 °C in Paris", thinks[1][0].event_id),
        "get_time": ("14:05 (CET) in Paris", thinks[2][0].event_id),
    }
    assert not any("not_recorded" in (s.metadata or {}) for s in steps)
    assert run["outcome"] == thinks[-1][0].content  # the root recorded no answer; the last call's came after it


def test_events_fill_only_what_is_missing_and_only_the_runs_last_answer(sqlite_store):
    """A log event cannot overwrite what a step holds, nor make a model call that asked for a tool the run's answer."""
    sent = requests("openai-v2-events-ok")
    spans, logs = [r for r in sent if r.path != "/v1/logs"], [r for r in sent if r.path == "/v1/logs"]
    from framework_captures import RECEIVERS

    for request in spans:
        RECEIVERS[request.path](sqlite_store, request)
    [run] = sqlite_store.list_sessions()
    sqlite_store.otlp_fill_steps(
        [
            {"session_id": run["id"], "event_id": s.event_id, "answer": "not the answer"}
            for s in sqlite_store.load_steps(run["id"])
            if s.type == "think"
        ][:2]  # two model calls that asked for tools, a call after each
    )
    assert sqlite_store.get_session(run["id"])["outcome"] is None
    for request in logs:
        RECEIVERS[request.path](sqlite_store, request)
    again = {s.event_id: s.content for s in sqlite_store.load_steps(run["id"])}
    for request in logs:  # delivered twice: nothing changes
        RECEIVERS[request.path](sqlite_store, request)
    assert {s.event_id: s.content for s in sqlite_store.load_steps(run["id"])} == again
    final = json.loads((FRAMEWORKS / "openai-v2-events-ok" / "manifest.json").read_text())["outcome"]["final_output"]
    assert sqlite_store.get_session(run["id"])["outcome"] == final


def test_events_of_a_span_that_never_comes_wait_then_expire_with_its_trace(sqlite_store, monkeypatch):
    [logs] = [r for r in requests("openai-v2-events-ok") if r.path == "/v1/logs"]
    account = otlp_logs.receive_logs(sqlite_store, logs.body, logs.content_type)
    assert (account["spans_held"], account["spans_filled"]) == (3, 0)
    trace = json.loads((FRAMEWORKS / "openai-v2-events-ok" / "001.json").read_text())["resourceLogs"][0]
    tid = trace["scopeLogs"][0]["logRecords"][0]["traceId"]
    assert len(sqlite_store.otlp_state([tid])[1]) == 3
    monkeypatch.setenv("AGENT_REPLAY_IDLE_MINUTES", "0")
    sqlite_store.otlp_commit({}, [], [], [])  # any later batch drops what idle traces left open
    assert sqlite_store.otlp_state([tid])[1] == []
    assert sqlite_store.list_sessions() == []  # events alone make no run


def test_older_per_message_events_and_records_that_are_not_genai_are_counted():
    """The older GenAI event convention (one record per message, the message in the body), hand-made."""

    def record(name, body, span="00000000000000aa"):
        return {
            "traceId": "0af7651916cd43dd8448eb211c80319c",
            "spanId": span,
            "eventName": name,
            "timeUnixNano": "1796557802473832130",
            "body": body,
        }

    kv = lambda **v: {"kvlistValue": {"values": [{"key": k, "value": x} for k, x in v.items()]}}  # noqa: E731
    body = {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            record("gen_ai.user.message", kv(content={"stringValue": "Weather in Paris?"})),
                            record(
                                "gen_ai.choice",
                                kv(index={"intValue": "0"}, message=kv(content={"stringValue": "Sunny."})),
                            ),
                            record("app.started", {"stringValue": "hello"}),
                            {"body": {"stringValue": "a plain log line"}},
                        ]
                    }
                ]
            }
        ]
    }
    from replay_core.ingest.formats.otel.logs import log_records

    contents = span_contents(log_records(orjson.dumps(body), "application/json"))
    assert contents.account() == {"log_records": 4, "used": 2, "ignored": {"not a GenAI event": 1, "no span id": 1}}
    [attrs] = contents.spans.values()
    assert attrs == {
        "gen_ai.input.messages": [{"content": "Weather in Paris?", "role": "user"}],
        "gen_ai.output.messages": [{"content": "Sunny.", "role": "assistant"}],
    }


def test_the_route_takes_logs_and_refuses_what_it_cannot_read(sqlite_store):
    [logs] = [r for r in requests("openai-v2-events-ok") if r.path == "/v1/logs"]
    with TestClient(create_app(sqlite_store, access=Access(api_tokens=("t-0000",)))) as client:
        auth = {"Authorization": "Bearer t-0000"}
        res = client.post("/v1/logs", content=logs.body, headers=auth | {"content-type": logs.content_type})
        assert res.status_code == 200 and res.content == b""
        res = client.post(
            "/v1/logs",
            content=gzip.compress(logs.body),
            headers=auth | {"content-type": logs.content_type, "content-encoding": "gzip"},
        )
        assert res.status_code == 200
        res = client.post("/v1/logs", content=b"\x0a\xff\xff", headers=auth | {"content-type": "application/x-protobuf"})
        assert res.status_code == 400 and "ExportLogsServiceRequest" in res.json()["detail"]
        res = client.post("/v1/logs", content=b"{}", headers=auth | {"content-type": "application/json"})
        assert res.status_code == 400 and "resourceLogs" in res.json()["detail"]
        plain = {"resourceLogs": [{"scopeLogs": [{"logRecords": [{"body": {"stringValue": "a plain log line"}}]}]}]}
        res = client.post("/v1/logs", json=plain, headers=auth)
        assert res.json() == {"partialSuccess": {"rejectedLogRecords": "1", "errorMessage": "not read: 1 no span id"}}
        assert client.post("/v1/logs", content=b"{}", headers={"content-type": "application/json"}).status_code == 401


def _contents(store) -> dict:
    """Each step's content, context, arguments and what it lacks by event id (where steps land is the OTLP ordering's
    concern), and how the run ended."""
    [run] = store.list_sessions()
    contexts = store.step_contexts(run["id"])
    steps = store.load_steps(run["id"])
    read = {
        s.event_id: (s.type, s.content, s.tool_args, contexts.get(s.event_id), (s.metadata or {}).get("not_recorded"))
        for s in steps
    }
    return read | {"outcome": (run["status"], run["outcome"])}


def _received(folder, template, sequence) -> dict:
    """The steps read after the slow capture's requests arrive in `sequence`, on a copy of the empty database
    (migrating a fresh file for each order took most of the time)."""
    from framework_captures import RECEIVERS

    sent = requests("openai-v2-events-slow")
    path = folder.mktemp("logs") / "r.db"
    shutil.copyfile(template, path)
    store = Store(f"sqlite:///{path}", migrate=False)
    for i in sequence:
        RECEIVERS[sent[i].path](store, sent[i])
    try:
        return _contents(store)
    finally:
        store.close()


@pytest.fixture(scope="module")
def in_sent_order(tmp_path_factory, sqlite_template) -> dict:
    return _received(tmp_path_factory, sqlite_template, range(len(requests("openai-v2-events-slow"))))


@settings(max_examples=8, deadline=None)
@given(order=st.permutations(range(len(requests("openai-v2-events-slow")))))
def test_any_arrival_order_of_spans_and_events_gives_the_same_steps(tmp_path_factory, sqlite_template, in_sent_order, order):
    assert _received(tmp_path_factory, sqlite_template, order) == in_sent_order

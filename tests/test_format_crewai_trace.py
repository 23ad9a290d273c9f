"""CrewAI's execution trace as crewai 1.15.30 exports it (OTLP/HTTP protobuf, captured from the real library by
scripts/capture_files/crewai_trace_events.py; tests/fixtures/crewai/README.md): the OTLP reader takes it,
each model call with its model and tokens, each tool call once, the raised tool one error, each agent's
final answer a decision, the crew's answer its CrewOutput `raw` text; posted to the OTLP receiver in one
request or span by span in any order, the same run."""

from __future__ import annotations

import json
import random

import pytest
from conftest import FIXTURES
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from reader_checks import reimport_changes_nothing

from replay_core.ingest import otlp_receiver
from replay_core.ingest.pipeline import import_file

OK, FAILED = FIXTURES / "crewai/crew_trace_ok.otlp.pb", FIXTURES / "crewai/crew_trace_tool_error.otlp.pb"
MODEL = "gpt-4o-mini-2024-07-18"
PROTOBUF = "application/x-protobuf"
AGENT_LOOP = ["think", "tool_call", "tool_result", "think", "tool_call", "tool_result", "decision"]
KINDS = {
    OK: ["span", "span", "span", *AGENT_LOOP],
    FAILED: ["span", "span", "span", *AGENT_LOOP, "span", "span", "decision"],
}


def _one(store, path):
    report = import_file(store, path)
    (sid,) = report.sessions
    return report.files[0], store.get_session(sid), store.load_steps(sid)


def _crew_raw(name: str) -> str:
    """CrewOutput.raw of the same crew, as crewai wrote it to a file of its own (tracing off)."""
    return json.loads((FIXTURES / "crewai" / name).read_text())["raw"]


def test_a_crew_trace_is_its_model_calls_with_tokens_and_its_tool_calls(sqlite_store):
    acc, session, steps = _one(sqlite_store, OK)
    assert (acc["format"], acc["records"], acc["used"], acc["unit"]) == ("otlp-proto", 8, 8, "spans")
    assert [s.type for s in steps] == KINDS[OK]
    # the scripted model's usage, per call, as crewai recorded it on its `call llm` spans
    assert [(s.tokens_in, s.tokens_out) for s in steps if s.tokens_in] == [(142, 17), (175, 16), (204, 19)]
    assert {s.model for s in steps if s.tokens_in} == {MODEL} and session["model"] == MODEL
    calls = [(s.tool_name, s.tool_args) for s in steps if s.type == "tool_call"]
    assert calls == [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})]
    results = [(s.tool_name, s.status, s.content) for s in steps if s.type == "tool_result"]
    assert results == [("get_weather", "ok", "Sunny, 18°C"), ("get_time", "ok", "10:14")]  # JSON-encoded on the span
    assert {s.agent_id for s in steps[2:]} == {"Weather agent"}  # its role, not the key crewai puts in gen_ai.agent.name
    assert (session["name"], session["status"]) == ("execute crew", "succeeded")
    assert session["outcome"] == steps[-1].content == _crew_raw("crew_output_ok.json")
    assert session["started_at"] is not None and session["ended_at"] >= session["started_at"]


def test_a_raised_tool_is_one_failed_call_and_the_second_task_is_kept(sqlite_store):
    acc, session, steps = _one(sqlite_store, FAILED)
    assert (acc["records"], acc["used"]) == (12, 12)  # the `tool failure` span read, into the failed result
    assert [s.type for s in steps] == KINDS[FAILED]
    assert [s.tool_name for s in steps if s.type == "tool_call"] == ["get_weather", "get_time"]
    (failed,) = [s for s in steps if s.status == "error"]
    assert (failed.type, failed.tool_name, failed.error_class) == ("tool_result", "get_time", "TimeoutError")
    assert failed.content == "time service unreachable for Paris"
    note = failed.metadata["tool_failure"]  # crewai's `tool failure` span, read into the result it describes
    assert note["span_id"] == "d0d980801eeaa9e7"
    assert {k: v for k, v in note["attributes"].items() if k.startswith("crewai.tool.failure.")} == {
        "crewai.tool.failure.message": "time service unreachable for Paris",
        "crewai.tool.failure.reason": "exception",
        "crewai.tool.failure.code": "TimeoutError",
        "crewai.tool.failure.retryable": False,
        "crewai.tool.failure.policy": "warn",
    }
    assert "gen_ai.tool.name" not in note["attributes"]  # what the `call tool` span says already
    assert [s.content for s in steps if s.type == "decision"] == [
        "I could not get the time.\nIt is sunny and 18°C in Paris.",
        "Sunny.",
    ]
    assert [(s.tokens_in, s.tokens_out) for s in steps if s.tokens_in] == [(142, 17), (175, 16), (204, 19), (96, 3)]
    # the crew went on to its last task: its answer is the crew's, the tool's error stays on its step
    assert (session["status"], session["outcome"]) == ("succeeded", _crew_raw("crew_output_tool_error.json"))
    assert session.get("error_class") is None


def test_reimport_changes_nothing(sqlite_store):
    reimport_changes_nothing(sqlite_store, FAILED)


def _picture(store) -> tuple:
    (row,) = store.list_sessions(limit=5)
    session = store.get_session(row["id"])
    steps = store.load_steps(row["id"])
    assert [s.seq for s in steps] == list(range(1, len(steps) + 1))
    return (
        (session["status"], session["outcome"], session["model"]),
        [(s.event_id, s.type, s.status, s.tool_name, s.content, s.parent_id, s.agent_id, s.tokens_in) for s in steps],
    )


def _span_by_span(body: bytes, order: str) -> list[bytes]:
    """The captured request re-sent one span a request (resource and scope kept), in start order, reversed or shuffled."""
    request = ExportTraceServiceRequest.FromString(body)
    singles = []
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in sorted(scope_spans.spans, key=lambda s: s.start_time_unix_nano):
                one = ExportTraceServiceRequest()
                rs = one.resource_spans.add(resource=resource_spans.resource)
                rs.scope_spans.add(scope=scope_spans.scope).spans.append(span)
                singles.append(one.SerializeToString())
    if order == "reversed":
        return singles[::-1]
    if order == "shuffled":
        random.Random(0).shuffle(singles)
    return singles


@pytest.mark.parametrize("order", ["start", "reversed", "shuffled"])
@pytest.mark.parametrize("path", [OK, FAILED], ids=["ok", "tool_error"])
def test_the_receiver_stores_the_same_run_whatever_the_batches(sqlite_store, path, order):
    body = path.read_bytes()
    otlp_receiver.receive(sqlite_store, body, PROTOBUF)  # the captured request, as crewai posted it to /v1/traces
    whole = _picture(sqlite_store)
    assert [k for _, k, *_ in whole[1]] == KINDS[path]
    raw = _crew_raw("crew_output_ok.json" if path == OK else "crew_output_tool_error.json")
    assert whole[0] == ("succeeded", raw, MODEL)
    assert [s[3] for s in whole[1] if s[2] == "error"] == (["get_time"] if path == FAILED else [])
    sqlite_store.delete_sessions([r["id"] for r in sqlite_store.list_sessions(limit=5)])
    for single in _span_by_span(body, order):
        otlp_receiver.receive(sqlite_store, single, PROTOBUF)
    again = _picture(sqlite_store)
    assert again[1] == whole[1]
    assert again[0] == whole[0]  # status, answer and model (the root's batch may carry no model call)

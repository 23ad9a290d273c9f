"""OpenTelemetry import (OTLP/JSON, OTLP protobuf, SDK span dumps); the export and its round trip are in
test_otlp_export_roundtrip.py.

Expected values were read off the source files by hand: step counts and types follow the
spans (model call → think + the calls no tool span answers; tool span → tool_call +
tool_result), tokens and costs are the span attributes (any-agent's cost = input_cost +
output_cost), ids are the source's ids written as hex.
"""

from __future__ import annotations

import gc
import json
import shutil
from datetime import UTC, datetime

import orjson
import pytest
from conftest import FIXTURES, REPO
from google.protobuf import text_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from replay_core.events import StepEvent
from replay_core.ingest.formats import detect, otel, otlp_export
from replay_core.ingest.pipeline import ImportRejected, import_bytes, read_events
from replay_core.storage.store import Store

OTEL = FIXTURES / "otel"


def hex16(n: int) -> str:
    return format(n, "016x")


def hex32(n: int) -> str:
    return format(n, "032x")


def ts(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def rows(store: Store, sid: str) -> list[tuple]:
    """(seq, type, parent seq, tool, args, call id, model, tokens in/out, status, error class) per stored step."""
    steps = store.load_steps(sid)
    seq_of = {s.event_id: s.seq for s in steps}
    return [
        (
            s.seq,
            s.type,
            seq_of.get(s.parent_id),
            s.tool_name,
            s.tool_args,
            s.tool_call_id,
            s.model,
            s.tokens_in,
            s.tokens_out,
            s.status,
            s.error_class,
        )
        for s in steps
    ]


def proto_fixture() -> bytes:
    """opentelemetry-proto's example request, compiled from its text form (as its header says to)."""
    text = (OTEL / "opentelemetry-proto_trace.protobuf-text").read_text()
    return text_format.Parse(text, ExportTraceServiceRequest()).SerializeToString()


# ---------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("TINYAGENT_trace.json", "otel-spans"),
        ("LANGCHAIN_trace.json", "otel-spans"),
        ("GOOGLE_trace.json", "otel-spans"),
        ("OPENAI_trace.json", "otel-spans"),
        ("opentelemetry-proto_trace.json", "otlp-json"),
        ("edge_failed_and_totals.otlp.json", "otlp-json"),
    ],
)
def test_detected_from_content(name, expected, tmp_path):
    renamed = tmp_path / "upload.bin"
    shutil.copy(OTEL / name, renamed)
    assert detect(renamed.read_bytes(), str(renamed)).name == expected


def test_protobuf_detected_and_never_claims_text():
    assert detect(proto_fixture(), "upload.bin").name == "otlp-proto"
    files = [p for p in FIXTURES.rglob("*") if p.is_file() and not p.name.endswith(".otlp.pb")]  # real OTLP protobuf apart
    texts = files + sorted((REPO / "data" / "demo").glob("*.jsonl"))
    assert len(texts) > 20
    for path in texts:
        assert not otel.OTLP_PROTO.sniff(path.read_bytes()[: 256 * 1024], str(path)), path
    assert not otel.OTLP_PROTO.sniff(b'\n\n{"resourceSpans": []}', "x")


# ---------------------------------------------------------------------------- real samples


def test_tinyagent_sample(store):
    report = import_bytes(store, (OTEL / "TINYAGENT_trace.json").read_bytes(), "TINYAGENT_trace.json")
    sid = hex32(82133397360970879726729369602474908892)  # a 128-bit decimal id, kept exact
    assert report.sessions == [sid] and report.steps == 9 and report.files[0]["format"] == "otel-spans"
    session = store.get_session(sid)
    assert (session["name"], session["agent_id"], session["model"], session["status"], session["outcome"]) == (
        "invoke_agent [any_agent]",
        "any_agent",
        "gpt-4.1-mini",
        "succeeded",
        None,
    )  # final_output is the text "None"
    assert session["started_at"] == ts("2025-05-21T11:18:20.306310") and session["ended_at"] == ts("2025-05-21T11:18:23.328766")
    assert (session["tokens_in"], session["tokens_out"]) == (313 + 404 + 428, 18 + 15 + 10)
    assert session["cost_usd"] == pytest.approx(0.0001252 + 2.88e-05 + 0.0001616 + 2.4e-05 + 0.0001712 + 1.6e-05, abs=1e-12)
    model = "gpt-4.1-mini-2025-04-14"  # the response model; the requested one stays in metadata
    tz = {"timezone": "America/New_York"}
    assert rows(store, sid) == [
        (1, "span", None, None, None, None, "gpt-4.1-mini", None, None, "ok", None),
        (2, "think", 1, None, None, None, model, 313, 18, "ok", None),
        (3, "tool_call", 1, "get_current_time", tz, None, None, None, None, "ok", None),
        (4, "tool_result", 1, "get_current_time", None, None, None, None, None, "ok", None),
        (5, "think", 1, None, None, None, model, 404, 15, "ok", None),
        (6, "tool_call", 1, "write_file", {"text": "2025"}, None, None, None, None, "ok", None),
        (7, "tool_result", 1, "write_file", None, None, None, None, None, "ok", None),
        (8, "think", 1, None, None, None, model, 428, 10, "ok", None),
        (9, "tool_call", 1, "task_complete", {}, None, None, None, None, "ok", None),  # emitted, never executed
    ]
    steps = store.load_steps(sid)
    assert steps[0].event_id == hex16(12467580156169360485) and steps[1].event_id == hex16(17068284808009816463)
    assert steps[8].event_id == hex16(17623068617551468553) + ".call.0"
    assert steps[3].content.startswith("meta=None content=[TextContent(type='text', text='{\\n  \"timezone\"")
    assert steps[6].content == "None"  # genai.output "\"None\"" is a JSON string, decoded once
    assert steps[1].cost_usd == pytest.approx(0.0001252 + 2.88e-05, abs=1e-12)
    assert steps[1].metadata["attributes"] == {"gen_ai.request.model": "gpt-4.1-mini"}
    assert steps[0].metadata["attributes"] == {
        "gen_ai.agent.description": "No description.",
        "gen_ai.request.id": "4003b9bc-8aca-4593-b546-51d714cb0a16",
    }
    assert steps[1].duration_ms == pytest.approx((1747826301261841956 - 1747826300309195206) / 1e6)
    assert steps[1].timestamp == ts("2025-05-21T11:18:20.309195")


def test_langchain_sample(store):
    import_bytes(store, (OTEL / "LANGCHAIN_trace.json").read_bytes(), "LANGCHAIN_trace.json")
    sid = hex32(193030768590593690100051725513629274920)
    session = store.get_session(sid)
    assert session["status"] == "succeeded"
    assert session["outcome"] == "The year in the America/New_York timezone is 2025. I have written this value to a file."
    m = "gpt-4.1-mini"
    a, b = "call_3uGrOjunv0acuVI6t9I9w7bD", "call_6cgDPuf4LLMGDvr8b7rBXudI"
    assert rows(store, sid) == [
        (1, "span", None, None, None, None, m, None, None, "ok", None),
        (2, "think", 1, None, None, None, m, 288, 18, "ok", None),
        (3, "tool_call", 1, "get_current_time", {"timezone": "America/New_York"}, a, None, None, None, "ok", None),  # a repr
        (4, "tool_result", 1, "get_current_time", None, a, None, None, None, "ok", None),
        (5, "think", 1, None, None, None, m, 356, 15, "ok", None),
        (6, "tool_call", 1, "write_file", {"text": "2025"}, b, None, None, None, "ok", None),
        (7, "tool_result", 1, "write_file", None, b, None, None, None, "ok", None),
        (8, "think", 1, None, None, None, m, 380, 24, "ok", None),
    ]
    steps = store.load_steps(sid)
    assert [s.content for s in steps if s.type == "think"] == [None, None, session["outcome"]]
    assert json.loads(steps[3].content) == {
        "timezone": "America/New_York",
        "datetime": "2025-05-21T07:17:44-04:00",
        "is_dst": True,
    }
    assert steps[6].content == "null"
    assert [round(s.cost_usd, 10) for s in steps if s.type == "think"] == [0.000144, 0.0001664, 0.0001904]
    # a whole LangChain ChatGeneration is more than its text and calls: kept as it came
    assert json.loads(steps[1].metadata["attributes"]["genai.output"])["type"] == "ChatGeneration"
    assert steps[2].metadata["attributes"] == {"gen_ai.tool.description": "Get current time in a specific timezones"}


def test_google_sample_hangs_orphans_under_the_root(store):
    import_bytes(store, (OTEL / "GOOGLE_trace.json").read_bytes(), "GOOGLE_trace.json")
    sid = hex32(206827146651680037036369728660575885043)
    session = store.get_session(sid)
    assert (session["status"], session["tokens_in"], session["tokens_out"], session["cost_usd"]) == ("succeeded", 0, 0, None)
    assert session["outcome"] == "The current year in the America/New_York timezone is 2025. I have written this value to a file."
    steps = store.load_steps(sid)
    root = hex16(15628249578168132365)
    assert [s.type for s in steps] == ["span", "think", "tool_call", "tool_result", "think", "tool_call", "tool_result", "think"]
    assert [s.parent_id for s in steps] == [None] + [root] * 7
    assert steps[1].metadata["otel"]["parent_span_id"] == hex16(7209013328053762687)  # the parent it named, never exported
    assert [(s.tool_name, s.tool_call_id) for s in steps if s.type == "tool_call"] == [
        ("get_current_time", "call_5PD1Y93npIBz1MRfrASCLSvc"),
        ("write_file", "call_fmEIOSGAHawfxKudklB0ZjZt"),
    ]
    assert steps[6].content is None  # write_file recorded no output
    assert [s.content for s in steps if s.type == "think"][:2] == [None, None]


def test_openai_sample_input_messages_double_encoded_args_and_duplicate_span(store):
    report = import_bytes(store, (OTEL / "OPENAI_trace.json").read_bytes(), "OPENAI_trace.json")
    sid = hex32(83409795388837040911688674412546976639)
    assert report.steps == 8  # 7 spans, one written twice: stored once
    steps = store.load_steps(sid)
    assert [s.type for s in steps] == ["span", "think", "tool_call", "tool_result", "think", "tool_call", "tool_result", "think"]
    assert [s.tool_args for s in steps if s.type == "tool_call"] == [{"timezone": "America/New_York"}, {"text": "2025"}]
    assert [(s.tokens_in, s.tokens_out) for s in steps if s.type == "think"] == [(447, 16), (554, 14), (589, 44)]
    assert store.step_context(sid, steps[1].event_id) == [
        {"role": "system", "content": "Use the available tools to answer."},
        {
            "content": "Find what year it is in the America/New_York timezone and write the value (single number) to a file. "
            "Finally, return a list of the steps you have taken.",
            "role": "user",
        },
    ]
    assert store.get_session(sid)["outcome"] is None  # final_output {}


def test_opentelemetry_proto_examples_json_and_protobuf_agree(store):
    report = import_bytes(store, (OTEL / "opentelemetry-proto_trace.json").read_bytes(), "trace.json")
    assert report.files[0]["format"] == "otlp-json"
    sid = "5b8efff798038103d269b633813fc60c"
    (step,) = store.load_steps(sid)
    assert (step.event_id, step.type, step.content, step.duration_ms, step.parent_id) == (
        "eee19b7ec3c1b174",
        "span",
        "I'm a server span",
        1000.0,
        "eee19b7ec3c1b173",
    )  # parent never sent: kept as named
    assert step.timestamp == ts("2018-12-13T14:51:00")
    assert step.metadata["attributes"] == {"my.span.attr": "some value"}
    assert step.metadata["otel"]["kind"] == "server"
    assert step.metadata["otel"]["scope"] == {
        "name": "my.library",
        "version": "1.0.0",
        "attributes": {"my.scope.attribute": "some scope attribute"},
    }
    assert store.get_session(sid)["status"] == "unknown"  # a finished file without a root span: ended, outcome not recorded
    from_proto = import_bytes(store, proto_fixture(), "trace.bin")
    assert from_proto.files[0]["format"] == "otlp-proto"
    assert (from_proto.steps, from_proto.duplicates) == (0, 1)  # same span, same event id
    json_events, _, _ = read_events((OTEL / "opentelemetry-proto_trace.json").read_bytes(), "a")
    proto_events, _, _ = read_events(proto_fixture(), "a")
    assert [e.to_json_dict() for e in json_events] == [e.to_json_dict() for e in proto_events]


# ---------------------------------------------------------------------------- OpenInference and GenAI attribute fixtures

PARIS = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": "Absolutely! Let me check the weather for you.",
        "tool_calls": [
            {"id": "1234", "type": "function", "function": {"name": "get_weather", "arguments": '{"location":"Paris"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "1234", "content": "rainy, 57°F"},
]
ANSWER = "The weather in Paris is currently rainy with a temperature of 57°F."


def _wrapped(attribute_file: str, n: int, extra: dict | None = None) -> bytes:
    """One OTLP/JSON line: a hand-made span envelope around a real fixture's attributes."""
    attrs = json.loads((OTEL / attribute_file).read_text()) | (extra or {})
    span = {
        "traceId": f"{n:032x}",
        "spanId": f"{n:016x}",
        "name": attribute_file,
        "kind": 3,
        "startTimeUnixNano": str(1767225600_000000000 + n),
        "endTimeUnixNano": str(1767225601_000000000 + n),
        "attributes": otlp_export.key_values(attrs),
    }
    return orjson.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "t"}, "spans": [span]}]}]})


def test_openinference_and_genai_attribute_fixtures(store):
    lines = [
        _wrapped("openinference_client_span_tool_calls.json", 1, {"session.id": "oi-session"}),
        _wrapped("openinference_otel_genai_client_span_tool_calls.json", 2),
        _wrapped("openinference_otel_genai_deprecated_client_span_tool_calls.json", 3),
        _wrapped("openinference_otel_genai_tool_execution_span.json", 4),
    ]
    report = import_bytes(store, b"\n".join(lines) + b"\n", "collector-export.jsonl")
    assert report.files[0]["format"] == "otlp-json"
    assert report.sessions == ["oi-session", f"{2:032x}", f"{3:032x}", f"{4:032x}"]
    for sid, model in (("oi-session", "gpt-4-0613"), (f"{2:032x}", "gpt-4-0613"), (f"{3:032x}", "gpt-4-0613")):
        (step,) = store.load_steps(sid)
        assert (step.type, step.model, step.tokens_in, step.tokens_out, step.content) == ("think", model, 97, 52, ANSWER), sid
        assert store.step_context(sid, step.event_id) == PARIS, sid
    (oi,) = store.load_steps("oi-session")
    kept = oi.metadata["attributes"]
    assert set(kept) == {
        "llm.invocation_parameters",
        "llm.system",
        "llm.provider",
        "input.value",
        "input.mime_type",
        "output.value",
        "output.mime_type",
    }
    (genai,) = store.load_steps(f"{2:032x}")
    assert genai.metadata["attributes"]["gen_ai.request.temperature"] == 0.5
    assert genai.metadata["attributes"]["gen_ai.response.finish_reasons"] == ["stop"]
    assert genai.metadata["attributes"]["input"].startswith('{"model":"gpt-4"')  # the fixture's own extra keys are kept too
    call, result = store.load_steps(f"{4:032x}")
    assert (call.type, call.tool_name, call.tool_call_id, result.type, result.tool_call_id) == (
        "tool_call",
        "get_weather",
        "1234",
        "tool_result",
        "1234",
    )
    assert set(call.metadata["attributes"]) == {"gen_ai.tool.description", "gen_ai.tool.type", "input", "output"}


# ---------------------------------------------------------------------------- edge cases


def test_failed_run_and_run_level_totals(store):
    report = import_bytes(store, (OTEL / "edge_failed_and_totals.otlp.json").read_bytes(), "edge.json")
    assert report.sessions == ["conv-refund-7", "4bf92f3577b34da6a3ce929d0e0e4736"]
    failed = store.get_session("conv-refund-7")
    assert (failed["status"], failed["error_class"], failed["outcome"], failed["environment"], failed["agent_id"]) == (
        "failed",
        "RefundDenied",
        "refund above limit",
        "staging",
        "refund-bot",
    )
    assert failed["ended_at"] == ts("2026-01-01T00:00:09")
    assert rows(store, "conv-refund-7") == [
        (1, "span", None, None, None, None, None, None, None, "error", "RefundDenied"),
        (2, "think", 1, None, None, None, "gpt-4o-2024-08-06", 812, 40, "ok", None),
        (3, "tool_call", 1, "get_order", {"order_id": "A-17"}, "call_A", None, None, None, "ok", None),
        (4, "tool_result", 1, "get_order", None, "call_A", None, None, None, "ok", None),
        (5, "think", 1, None, None, None, "gpt-4o", 900, 25, "ok", None),
        (6, "tool_call", 1, "issue_refund", {"order_id": "A-17", "amount": 412.5}, "call_B", None, None, None, "ok", None),
        (7, "tool_result", 1, "issue_refund", None, "call_B", None, None, None, "error", "RefundLimitError"),
        (8, "error", 1, None, None, None, "gpt-4o", None, None, "error", "RateLimitError"),
    ]
    steps = store.load_steps("conv-refund-7")
    assert [s.content for s in steps[6:]] == ["amount 412.5 above limit 300", "rate limited"]
    assert steps[0].metadata["attributes"] == {"app.tenant": "acme"}  # unknown attributes are kept
    assert steps[0].metadata["otel"]["status_message"] == "agent gave up"
    assert steps[0].metadata["otel"]["events"][0]["attributes"]["exception.type"] == "RefundDenied"
    totals = store.get_session("4bf92f3577b34da6a3ce929d0e0e4736")
    assert [totals[k] for k in ("status", "outcome", "steps")] == ["succeeded", "See the FAQ.", 1]
    # run-level totals only: kept on the session, where analytics takes them when no step has any
    assert {k: totals["metadata"][k] for k in ("tokens_in", "tokens_out", "cost_usd")} == {
        "tokens_in": 120,
        "tokens_out": 30,
        "cost_usd": 0.0009,
    }
    (step,) = store.load_steps("4bf92f3577b34da6a3ce929d0e0e4736")
    assert (step.tokens_in, step.cost_usd, step.metadata.get("attributes")) == (None, None, None)


def test_empty_request_imports_nothing(store):
    report = import_bytes(store, b'{"resourceSpans": []}', "empty.json")
    assert (report.sessions, report.steps, report.errors) == ([], 0, [])
    assert store.session_ids() == []


@pytest.mark.parametrize("name", ["edge_failed_and_totals.otlp.json", "TINYAGENT_trace.json"])
def test_truncated_file_refused_with_position_nothing_stored(store, name):
    data = (OTEL / name).read_bytes()
    cut = data[: len(data) // 2]
    with pytest.raises(ImportRejected) as exc:
        import_bytes(store, cut, "cut.json")
    (error,) = exc.value.errors
    line = cut.count(b"\n") + 1
    assert error.where.startswith(f"cut.json:{line}:")
    assert "is the file truncated?" in error.reason
    assert store.session_ids() == []


def test_truncated_protobuf_refused_with_byte_position(store):
    data = proto_fixture()
    with pytest.raises(ImportRejected) as exc:
        import_bytes(store, data[:-7], "cut.bin", fmt="otlp-proto")
    # one resource_spans field: tag (1 byte) + length (2 bytes) + body; 7 bytes of the body are missing
    assert str(exc.value) == (
        "cut.bin: not a valid OTLP protobuf ExportTraceServiceRequest: byte 0: resource_spans[0] "
        f"needs {len(data) - 3} bytes, only {len(data) - 10} left (the file is truncated)"
    )
    assert store.session_ids() == []


def test_bad_span_named_by_its_path_and_the_file_refused(store):
    doc = json.loads((OTEL / "edge_failed_and_totals.otlp.json").read_text())
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["spanId"] = "not-an-id"
    with pytest.raises(ImportRejected) as exc:
        import_bytes(store, json.dumps(doc).encode(), "bad.json")
    assert [str(e) for e in exc.value.errors] == [
        "bad.json resourceSpans[0].scopeSpans[0].spans[2]: not a 8-byte id (hex, base64 or integer): 'not-an-id'"
    ]
    assert store.session_ids() == []
    report = import_bytes(store, json.dumps(doc).encode(), "bad.json", skip_bad=True)
    assert report.steps == 7 + 1 and len(report.errors) == 1


def test_truncated_collector_line_names_the_line(store):
    lines = [
        _wrapped("openinference_client_span_tool_calls.json", 1),
        _wrapped("openinference_otel_genai_client_span_tool_calls.json", 2),
    ]
    lines[1] = lines[1][:100]
    with pytest.raises(ImportRejected) as exc:
        import_bytes(store, b"\n".join(lines), "export.jsonl")
    assert [str(e) for e in exc.value.errors] == ["export.jsonl:2: invalid JSON (unexpected end of data); is the line truncated?"]
    assert store.session_ids() == []


def test_reimport_is_idempotent_and_conversations_span_traces(store):
    data = (OTEL / "edge_failed_and_totals.otlp.json").read_bytes()
    first = import_bytes(store, data, "edge.json")
    again = import_bytes(store, data, "edge.json")
    assert (first.steps, again.steps, again.duplicates) == (9, 0, 9)
    doc = json.loads(data)
    follow_up = doc["resourceSpans"][1]["scopeSpans"][0]["spans"][0]
    follow_up["attributes"].append({"key": "gen_ai.conversation.id", "value": {"stringValue": "conv-refund-7"}})
    follow_up["startTimeUnixNano"] = follow_up["endTimeUnixNano"] = str(1767225600_000000000 + 20 * 10**9)
    report = import_bytes(store, json.dumps({"resourceSpans": doc["resourceSpans"][1:]}).encode(), "later.json")
    assert report.sessions == ["conv-refund-7"] and report.steps == 1  # a second trace of the same conversation


def test_events_from_otlp_for_the_http_api(store):
    body = (OTEL / "edge_failed_and_totals.otlp.json").read_bytes()
    events = otel.events_from_otlp(body, "application/json; charset=utf-8")
    steps = [e for e in events if isinstance(e, StepEvent)]
    assert len(steps) == 9 and all(s.seq is None for s in steps)  # placed after what the session holds
    assert otel.events_from_otlp(proto_fixture(), "application/x-protobuf")[1].event_id == "eee19b7ec3c1b174"
    with pytest.raises(otel.OtlpError, match="expected application/json or application/x-protobuf"):
        otel.events_from_otlp(body, "text/plain")
    with pytest.raises(ValueError, match=r"^request:1:1: invalid JSON"):
        otel.events_from_otlp(b"<html>", "application/json")
    with pytest.raises(otel.OtlpError, match="the file is truncated"):
        otel.events_from_otlp(proto_fixture()[:50], "application/x-protobuf")


def test_agent_names_reach_descendants_through_parents_that_start_first():
    """A span's agent is its own, else its parent's as read so far: a child that starts before its parent
    (clock skew) gets none, nor do its own children; bare spans pass the name on. The same Span objects
    mapped twice give the same steps (what a mapping leaves on a span is not read by the next)."""
    t0 = 1_764_000_000_000_000_000

    def span(n: int, parent: int | None, start: int, **attrs) -> dict:
        out = {
            "traceId": hex32(7),
            "spanId": hex16(n),
            "name": f"s{n}",
            "startTimeUnixNano": str(t0 + start),
            "endTimeUnixNano": str(t0 + 100),
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
        }
        if parent is not None:
            out["parentSpanId"] = hex16(parent)
        return out

    body = orjson.dumps(
        {
            "resourceSpans": [
                {
                    "scopeSpans": [
                        {
                            "spans": [
                                span(1, None, 10, **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}),
                                span(2, 1, 5),  # starts before its parent
                                span(3, 2, 20),  # under the early child: nothing to inherit
                                span(4, 1, 15),  # bare, after its parent
                                span(5, 4, 30),  # bare grandchild
                                span(6, 4, 40, **{"gen_ai.agent.name": "coder"}),
                                span(7, 6, 50),
                            ]
                        }
                    ]
                }
            ]
        }
    )
    spans = otel.spans_from_otlp(body, "application/json")
    first = otel.events_from_spans(spans)
    agents = {e.event_id: e.agent_id for e in first if isinstance(e, StepEvent)}
    assert agents == {
        hex16(1): "planner",
        hex16(2): None,
        hex16(3): None,
        hex16(4): "planner",
        hex16(5): "planner",
        hex16(6): "coder",
        hex16(7): "coder",
    }
    assert otel.events_from_spans(spans) == first


@pytest.mark.parametrize("name", ["edge_failed_and_totals.otlp.json", "opentelemetry-proto_trace.json", "OPENAI_trace.json"])
def test_mapping_leaves_no_cyclic_garbage(name):
    """What a mapping made is freed as soon as its events are dropped: nothing needs the cyclic collector
    (a span and its step part pointing at each other left a 50,000-span body a quarter second of collection)."""
    data = (OTEL / name).read_bytes()
    reader = detect(data, name)
    gc.collect()
    was_on = gc.isenabled()
    gc.disable()
    try:
        events = list(reader.read(data, name))
        assert any(isinstance(e, StepEvent) for e in events)
        del events
        assert gc.collect() == 0
    finally:
        if was_on:
            gc.enable()

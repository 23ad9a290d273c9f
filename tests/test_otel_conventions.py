"""The framework-specific readings of span values (replay_core/ingest/formats/otel/conventions.py): each turns
its framework's shape into the common one and leaves every other value as it was; and a tool result read from
the model input that received it (calls.results_from_inputs), never from anywhere else."""

from __future__ import annotations

import json

from framework_captures import FRAMEWORKS, manifest
from hypothesis import given
from hypothesis import strategies as st

from replay_core.ingest.formats import otel
from replay_core.ingest.formats import otel_attributes as oa
from replay_core.ingest.formats.otel import Part, Span, genai_events
from replay_core.ingest.formats.otel import conventions as cv
from replay_core.ingest.formats.otel.calls import results_from_inputs
from replay_core.ingest.formats.otel.otlp_json import key_values

ROLES = ["system", "user", "assistant", "tool-call", "tool-response"]
texts = st.text(max_size=20)
messages = st.lists(st.fixed_dictionaries({"role": st.sampled_from(ROLES), "content": texts}), max_size=8)


@given(messages)
def test_smolagents_messages_are_sent_merged_under_chat_roles(msgs):
    out = cv.wire_messages([dict(m) for m in msgs])
    if not any(m["role"] in cv.SMOLAGENTS_ROLES for m in msgs):
        assert out == msgs
        return
    assert all(m["role"] in ("system", "user", "assistant") for m in out)
    assert all(a["role"] != b["role"] for a, b in zip(out, out[1:], strict=False))  # merged as smolagents does
    assert "\n".join(m["content"] for m in out) == "\n".join(m["content"] for m in msgs)  # no text lost or added


def test_a_message_with_tool_calls_is_never_merged():
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    msgs = [{"role": "tool-call", "content": "Calling tools"}, {"role": "assistant", "content": None, "tool_calls": calls}]
    assert cv.wire_messages(msgs) == [{"role": "assistant", "content": "Calling tools"}, msgs[1]]


def test_smolagents_wrapper_is_unwrapped_and_nothing_else():
    assert cv.unwrap_arguments({"args": [], "sanitize_inputs_outputs": True, "kwargs": {"city": "Paris"}}) == {"city": "Paris"}
    kept = [
        {"args": ["Paris"], "kwargs": {}},  # positional arguments: the keyword ones alone would lose them
        {"kwargs": {"a": 1}, "city": "Paris"},  # a tool's own parameter named kwargs
        {"kwargs": "x"},
        "Paris",
        None,
    ]
    for value in kept:
        assert cv.unwrap_arguments(value) == value


def test_langchain_messages_give_their_content_other_json_is_kept():
    tool_message = {"type": "tool", "data": {"type": "tool", "content": "Sunny", "tool_call_id": "c1", "status": "success"}}
    assert cv.message_text(json.dumps(tool_message)) == "Sunny"
    path = ["langchain", "schema", "messages", "ToolMessage"]
    constructor = {"lc": 1, "type": "constructor", "id": path, "kwargs": {"content": "x"}}
    assert cv.message_text(json.dumps(constructor)) == "x"
    for value in (
        json.dumps({"type": "report", "data": {"content": "a tool's own result"}}),  # not a LangChain message type
        json.dumps({"type": "tool", "data": {"content": "x"}}),  # data without its own type: not message_to_dict
        json.dumps({"lc": 1, "type": "constructor", "id": ["x", "Runnable"], "kwargs": {"content": "x"}}),
        "{not json",
        "Sunny",
        None,
    ):
        assert cv.message_text(value) == value


def test_logfire_names_only_when_the_name_is_the_template():
    template = {"logfire.msg_template": "execute_tool {tool_name}", "logfire.msg": "execute_tool get_time"}
    assert cv.filled_name("execute_tool {tool_name}", template) == "execute_tool get_time"
    assert cv.filled_name("my span", template) == "my span"
    assert cv.filled_name("execute_tool {tool_name}", {"logfire.msg": "x"}) == "execute_tool {tool_name}"


def test_genai_span_names_say_the_kind_only_with_a_target():
    assert cv.kind_from_name("execute_tool get_time") == oa.TOOL
    assert cv.kind_from_name("invoke_agent planner") == oa.AGENT
    assert cv.agent_from_name("invoke_agent planner") == "planner"
    for name in ("execute_tool", "execute_tool ", "chat gpt-4o", "GET /v1/items", ""):
        assert cv.kind_from_name(name) is None
    assert cv.agent_from_name("execute_tool get_time") is None


def test_a_tool_response_part_reads_result_or_response():
    for key in ("response", "result"):
        msg = {"role": "user", "parts": [{"type": "tool_call_response", "id": "c1", key: "Sunny"}]}
        assert oa.openai_messages(msg) == [{"role": "tool", "tool_call_id": "c1", "content": "Sunny"}]
    silent = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1"}]}
    assert oa.openai_messages(silent) == [{"role": "tool", "tool_call_id": "c1", "content": None}]  # absent, not ""


ids = st.sampled_from(["c1", "c2", "c3", "c4"])


def _span(n: int) -> Span:
    return Span("t" * 32, f"{n:016x}", None, "s", n, n + 1, "ok", None, {})


@given(
    st.lists(st.lists(st.tuples(ids, texts), max_size=4), max_size=3),
    st.lists(st.tuples(ids, st.one_of(st.none(), texts)), max_size=5),
)
def test_a_result_takes_only_the_text_a_model_received_for_its_call(inputs, results):
    """Results without text get the tool message answering their call id in a model call's input (the first
    met), and say which model step it came from; any other result is left as it was: nothing invented."""
    parts = []
    for n, messages in enumerate(inputs):
        context = [{"role": "user", "content": "go"}] + [{"role": "tool", "tool_call_id": i, "content": t} for i, t in messages]
        parts.append(Part(_span(n), "step", {"type": "think", "context": context}, n, False))
    first: dict[str, tuple[str, str]] = {}
    for part in parts:
        for m in part.fields["context"][1:]:
            first.setdefault(m["tool_call_id"], (m["content"], part.span.span_id))
    before = []
    for n, (call_id, content) in enumerate(results, start=10):
        fields = {"type": "tool_result", "tool_call_id": call_id, "content": content}
        parts.append(Part(_span(n), "result", fields, n, True))
        before.append((call_id, content))
    assert results_from_inputs(parts, None) == []  # no ledger: nothing to replace
    for (call_id, content), part in zip(before, parts[len(inputs) :], strict=True):
        if content is not None or call_id not in first:
            assert part.fields["content"] == content and "metadata" not in part.fields
        else:
            assert part.fields["content"] == first[call_id][0]
            assert part.fields["metadata"] == {"content_from": {"model_input": first[call_id][1]}}


# A chat span as lilypad's OpenAI instrumentation writes it, its messages as GenAI span events: the inline snapshot
# of its test_tool_message_with_tool_call_id (Mirascope/lilypad, sdks/python/tests/lilypad/_internal/otel/openai/
# test_instrument.py at e6c4d4112d278f964dea902ed90478fccbc27f35, recorded against the OpenAI API).
LILYPAD_EVENTS = [
    ("gen_ai.user.message", {"gen_ai.system": "openai", "content": "What's 2+2?"}),
    (
        "gen_ai.assistant.message",
        {
            "gen_ai.system": "openai",
            "tool_calls": '[{"function":{"name":"calculate","arguments":"{\\"expression\\": \\"2+2\\"}"},'
            '"id":"call_test123","type":"function"}]',
        },
    ),
    ("gen_ai.tool.message", {"gen_ai.system": "openai", "content": "4", "id": "call_test123"}),
    (
        "gen_ai.choice",
        {"gen_ai.system": "openai", "message": '{"role":"assistant","content":"2 + 2 equals 4."}', "index": 0},
    ),
]


def test_span_events_give_a_model_step_its_messages():
    span = _span(1)
    span.name = "chat gpt-4o-mini"
    span.attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini"}
    span.events = [{"name": n, "time_ns": 1, "attributes": a} for n, a in LILYPAD_EVENTS]
    (think,) = [e for e in otel.events_from_spans([span]) if getattr(e, "type", None) == "think"]
    call = {"id": "call_test123", "type": "function", "function": {"name": "calculate", "arguments": '{"expression": "2+2"}'}}
    assert think.context == [
        {"role": "user", "content": "What's 2+2?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_test123", "content": "4"},
    ]
    assert think.content == "2 + 2 equals 4."
    assert "not_recorded" not in think.metadata


def test_inference_log_records_give_each_call_what_it_received():
    """openai-v2's `gen_ai.client.inference.operation.details` records on /v1/logs, read per span as they came."""
    name = "openai-v2-events-ok"
    (batch,) = [b for b in manifest(name)["batches"] if b["path"] == "/v1/logs"]
    doc = json.loads((FRAMEWORKS / name / batch["file"].replace(".pb.gz", ".json")).read_text())  # its OTLP/JSON twin
    records = [r for rl in doc["resourceLogs"] for sl in rl["scopeLogs"] for r in sl["logRecords"]]
    assert len(records) == len(manifest(name)["run"]["model_calls"])
    for record, call in zip(records, manifest(name)["run"]["model_calls"], strict=True):
        messages, answer, calls = genai_events.event_messages([(record["eventName"], key_values(record["attributes"]))])
        assert [m["role"] for m in messages] == call["roles_in"]
        assert (answer, [c["name"] for c in calls]) in (
            (None, [call["answered"]]),
            (manifest(name)["outcome"]["final_output"], []),
        )

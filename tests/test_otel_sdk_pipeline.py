"""A real OpenTelemetry SDK pipeline: spans with GenAI attributes made by opentelemetry-sdk,
encoded by the OTLP exporter's own encoder as protobuf and as OTLP/JSON (protobuf's JSON
mapping: base64 ids, int64 as text, enum names), and as the SDK's `span.to_json()` dumps;
each imported with format detection and checked step by step."""

from __future__ import annotations

import json

import pytest
from google.protobuf.json_format import MessageToJson
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from replay_core.ingest.formats import otel
from replay_core.ingest.pipeline import import_bytes, read_events


class OrderNotFound(Exception):
    pass


def _parts(role: str, *parts: dict, **extra) -> dict:
    return {"role": role, "parts": list(parts), **extra}


@pytest.fixture(scope="module")
def finished_spans():
    """Two runs: a support conversation (current and deprecated GenAI names, a failing tool) and a one-span run."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot", "deployment.environment.name": "staging"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("support-bot", "1.2.0")
    conv = {"gen_ai.conversation.id": "conv-42"}
    with tracer.start_as_current_span(
        "invoke_agent support-bot",
        attributes={
            **conv,
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "support-bot",
            "gen_ai.request.model": "gpt-4o",
            "app.ticket": "T-9",
        },
    ):
        with tracer.start_as_current_span(
            "chat gpt-4o",
            kind=SpanKind.CLIENT,
            attributes={
                **conv,
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.response.model": "gpt-4o-2024-08-06",
                "gen_ai.usage.input_tokens": 812,
                "gen_ai.usage.output_tokens": 40,
                "gen_ai.input.messages": json.dumps([_parts("user", {"type": "text", "content": "Where is order A-17?"})]),
                "gen_ai.output.messages": json.dumps(
                    [
                        _parts(
                            "assistant",
                            {"type": "text", "content": "Looking it up."},
                            {"type": "tool_call", "id": "call_1", "name": "get_order", "arguments": {"order_id": "A-17"}},
                            {"type": "tool_call", "id": "call_2", "name": "get_order", "arguments": {"order_id": "A-18"}},
                            finish_reason="tool_call",
                        )
                    ]
                ),
                "gen_ai.response.finish_reasons": ("tool_call",),
            },
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool get_order",
            attributes={
                **conv,
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_order",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": '{"order_id": "A-17"}',
                "gen_ai.tool.call.result": '{"status": "shipped"}',
            },
        ):
            pass
        try:
            with tracer.start_as_current_span(
                "execute_tool get_order",
                attributes={
                    **conv,
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_order",
                    "gen_ai.tool.call.id": "call_2",
                    "gen_ai.tool.call.arguments": '{"order_id": "A-18"}',
                },
            ):
                raise OrderNotFound("no order A-18")
        except OrderNotFound:
            pass
        with tracer.start_as_current_span(
            "openai.chat",
            kind=SpanKind.CLIENT,
            attributes={  # openllmetry-style, deprecated names
                **conv,
                "gen_ai.system": "openai",
                "llm.request.type": "chat",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.prompt.0.role": "user",
                "gen_ai.prompt.0.content": "Where is order A-17?",
                "gen_ai.completion.0.role": "assistant",
                "gen_ai.completion.0.content": "A-17 has shipped; A-18 does not exist.",
                "gen_ai.usage.prompt_tokens": 90,
                "gen_ai.usage.completion_tokens": 12,
            },
        ):
            pass
    faq = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "faq-bot"}
    with tracer.start_as_current_span("invoke_agent faq-bot", attributes=faq):
        pass
    spans = exporter.get_finished_spans()
    provider.shutdown()
    assert len(spans) == 6
    return spans


def _expected(spans) -> tuple[str, list[tuple]]:
    by_name = {}
    for s in spans:
        by_name.setdefault(s.name, []).append(s)
    root = by_name["invoke_agent support-bot"][0]
    hexid = lambda span: format(span.context.span_id, "016x")  # noqa: E731
    tool_ok, tool_bad = by_name["execute_tool get_order"]
    return format(by_name["invoke_agent faq-bot"][0].context.trace_id, "032x"), [
        # event id, seq, type, parent, model, tokens in/out, tool, args, call id, status, error class, content
        (hexid(root), 1, "span", None, "gpt-4o", None, None, None, None, None, "ok", None, "invoke_agent support-bot"),
        (
            hexid(by_name["chat gpt-4o"][0]),
            2,
            "think",
            hexid(root),
            "gpt-4o-2024-08-06",
            812,
            40,
            None,
            None,
            None,
            "ok",
            None,
            "Looking it up.",
        ),
        (
            hexid(tool_ok),
            3,
            "tool_call",
            hexid(root),
            None,
            None,
            None,
            "get_order",
            {"order_id": "A-17"},
            "call_1",
            "ok",
            None,
            None,
        ),
        (
            hexid(tool_ok) + ".result",
            4,
            "tool_result",
            hexid(root),
            None,
            None,
            None,
            "get_order",
            None,
            "call_1",
            "ok",
            None,
            '{"status": "shipped"}',
        ),
        (
            hexid(tool_bad),
            5,
            "tool_call",
            hexid(root),
            None,
            None,
            None,
            "get_order",
            {"order_id": "A-18"},
            "call_2",
            "ok",
            None,
            None,
        ),
        (
            hexid(tool_bad) + ".result",
            6,
            "tool_result",
            hexid(root),
            None,
            None,
            None,
            "get_order",
            None,
            "call_2",
            "error",
            f"{OrderNotFound.__module__}.OrderNotFound",
            "no order A-18",
        ),  # the SDK records module.class
        (
            hexid(by_name["openai.chat"][0]),
            7,
            "think",
            hexid(root),
            "gpt-4o-mini",
            90,
            12,
            None,
            None,
            None,
            "ok",
            None,
            "A-17 has shipped; A-18 does not exist.",
        ),
    ]


def _stored(store, sid) -> list[tuple]:
    return [
        (
            s.event_id,
            s.seq,
            s.type,
            s.parent_id,
            s.model,
            s.tokens_in,
            s.tokens_out,
            s.tool_name,
            s.tool_args,
            s.tool_call_id,
            s.status,
            s.error_class,
            s.content,
        )
        for s in store.load_steps(sid)
    ]


def _check_conversation(store, spans) -> None:
    faq, expected = _expected(spans)
    assert _stored(store, "conv-42") == expected
    session = store.get_session("conv-42")
    assert [session[k] for k in ("name", "agent_id", "model", "environment", "status", "outcome")] == [
        "invoke_agent support-bot",
        "support-bot",
        "gpt-4o",
        "staging",
        "succeeded",
        "A-17 has shipped; A-18 does not exist.",  # the root records no answer: the last model call's reply is it
    ]
    steps = store.load_steps("conv-42")
    assert steps[0].metadata["attributes"] == {"app.ticket": "T-9"}
    assert steps[1].metadata["attributes"] == {
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.finish_reasons": ["tool_call"],
    }
    assert steps[6].metadata["attributes"] == {"gen_ai.system": "openai"}  # its only model name is the step's model
    assert store.step_context("conv-42", steps[1].event_id) == [{"role": "user", "content": "Where is order A-17?"}]
    assert store.step_context("conv-42", steps[6].event_id) == [{"role": "user", "content": "Where is order A-17?"}]
    (only,) = store.load_steps(faq)
    assert (only.type, only.agent_id, store.get_session(faq)["status"]) == ("span", "faq-bot", "succeeded")


def test_protobuf_export_request(store, finished_spans):
    data = encode_spans(finished_spans).SerializeToString()
    report = import_bytes(store, data, "traces.bin")
    assert report.files[0]["format"] == "otlp-proto" and report.steps == 8
    _check_conversation(store, finished_spans)


def test_otlp_json_from_protobuf_json_mapping(store, finished_spans):
    data = MessageToJson(encode_spans(finished_spans)).encode()
    assert b'"traceId": "' in data and b"SPAN_KIND_CLIENT" in data  # base64 ids and enum names, as the mapping writes them
    report = import_bytes(store, data, "traces.json")
    assert report.files[0]["format"] == "otlp-json" and report.steps == 8
    _check_conversation(store, finished_spans)
    again = import_bytes(store, encode_spans(finished_spans).SerializeToString(), "traces.bin")
    assert (again.steps, again.duplicates) == (0, 8)  # both encodings give the same event ids


def test_sdk_span_dumps(store, finished_spans):
    listed = ("[" + ",".join(s.to_json() for s in finished_spans) + "]").encode()
    console = "".join(s.to_json() + "\n" for s in finished_spans).encode()  # what ConsoleSpanExporter prints
    for data in (listed, console):
        events, bad, fmt = read_events(data, "spans.json")
        assert (bad, fmt) == ([], "otel-spans")
    report = import_bytes(store, console, "console.txt")
    assert report.steps == 8
    _, expected = _expected(finished_spans)
    assert [row[:12] for row in _stored(store, "conv-42")] == [row[:12] for row in expected]


def test_http_ingest_function(finished_spans):
    request = encode_spans(finished_spans)
    bodies = ((request.SerializeToString(), "application/x-protobuf"), (MessageToJson(request).encode(), "application/json"))
    for body, content_type in bodies:
        events = otel.events_from_otlp(body, content_type)
        steps = [e for e in events if e.kind == "step"]
        assert [s.type for s in steps if s.session_id == "conv-42"] == [
            "span",
            "think",
            "tool_call",
            "tool_result",
            "tool_call",
            "tool_result",
            "think",
        ]
        assert all(s.seq is None for s in steps)

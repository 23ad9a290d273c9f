"""What one span says, as steps: where a span's messages, tool arguments and results are read.

Agent/workflow spans → `span`; model calls → `think` (their emitted calls returned, for tools
to answer); tool executions → `tool_call` + `tool_result` (status `error` when the span failed);
a failed model or other span → `error`. Attributes are read by otel_attributes; whatever no
field used stays in the step's metadata.
"""

from __future__ import annotations

from typing import Any

from .. import otel_attributes as oa
from ..otel_images import take_images
from . import conventions, genai_events
from .calls import EmittedCall, OpenCalls
from .spans import OVERRIDE, Part, Span
from .values import ns_time


def _duration(span: Span) -> float | None:
    if span.start_ns is None or span.end_ns is None:
        return None
    return max(span.end_ns - span.start_ns, 0) / 1e6


def failure(span: Span, attrs: oa.Attrs) -> tuple[str | None, str | None]:
    """(error class, message) of a failed span, from its exception event, error.type and status."""
    for event in span.events:
        if event.get("name") == "exception":
            ev = event.get("attributes") or {}
            error_type = ev.get("exception.type")
            if error_type is None or error_type == attrs.peek("error.type"):
                error_type = attrs.get("error.type")
            return error_type, ev.get("exception.message") or span.status_message
    return attrs.get("error.type"), span.status_message


def _start_fields(span: Span, type_: str) -> dict[str, Any]:
    return {"type": type_, "timestamp": ns_time(span.start_ns), "duration_ms": _duration(span)}


def model_part(span: Span, a: oa.Attrs) -> tuple[Part, list[dict]]:
    """A model call's `think` step (its messages, answer, usage), and the calls it emitted for tool spans to answer."""
    fields = _start_fields(span, "think")
    fields["model"] = oa.model_name(a)
    fields["tokens_in"], fields["tokens_out"] = oa.tokens(a)
    fields["cost_usd"] = oa.cost(a)
    fields["context"] = conventions.wire_messages(oa.input_messages(a))
    said: tuple[list[dict] | None, str | None, list[dict]] = (None, None, [])
    if span.events:
        events = [(e["name"], e.get("attributes") or {}) for e in span.events if genai_events.is_genai(e.get("name") or "")]
        said = genai_events.event_messages(events) if events else said
    if fields["context"] is None:
        fields["context"] = said[0]
    images = take_images(fields["context"], "input")
    output = oa.json_value(a.peek("gen_ai.output.messages"))
    images += take_images(output, "output") if isinstance(output, list) else []
    if images:
        fields["attachments"] = images  # moved into the step's metadata with the rest, where the media path finds them
        if isinstance(output, list):
            a.values["gen_ai.output.messages"] = output  # without the bytes, if the messages are kept as attributes
    answer, calls = oa.model_output(a)
    if answer is None and not calls:
        answer, calls = said[1], said[2]
    fields["content"] = answer
    if span.status == "error":
        error_class, message = failure(span, a)
        fields.update(type="error", status="error", error_class=error_class, content=message or answer)
        calls = []
    return Part(span, "step", fields, span.start_ns, False), calls


def tool_parts(span: Span, a: oa.Attrs, emitted: OpenCalls) -> tuple[list[Part], EmittedCall | None]:
    """A tool execution's tool_call and tool_result steps, and the emitted call it answers (its id and arguments
    fill in what the tool span lacks)."""
    name, call_id, raw = oa.tool_name(a, span.name), oa.tool_call_id(a), oa.tool_args(a)
    args = conventions.unwrap_arguments(raw)
    match = emitted.answer(span, name, call_id, None if conventions.positional(args) else args)
    if match is not None:
        call_id = call_id or match.call["id"]
        asked = match.call["arguments"]
        if args is None or (conventions.positional(args) and asked is not None):
            args = asked  # what the model asked for, where the tool span's input does not name the parameters
    if args is not raw:
        a.used.difference_update(oa.TOOL_ARGS)  # the span's own input, kept in the step's metadata
    output = oa.tool_result(a)
    content = conventions.message_text(output)
    if content is not output:
        a.used.discard("output.value")  # the whole serialised message, kept in the step's metadata
    call = {
        "type": "tool_call",
        "timestamp": ns_time(span.start_ns),
        "tool_name": name,
        "tool_args": args,
        "tool_call_id": call_id,
    }
    if oa.has_usage(a):  # the model call that chose this tool, recorded on the tool's span
        call.update(model=oa.model_name(a), cost_usd=oa.cost(a))
        call["tokens_in"], call["tokens_out"] = oa.tokens(a)
    result = {
        "type": "tool_result",
        "timestamp": ns_time(span.end_ns),
        "duration_ms": _duration(span),
        "tool_name": name,
        "tool_call_id": call_id,
        "content": content,
    }
    if span.status == "error":
        error_class, message = failure(span, a)
        result.update(status="error", error_class=error_class, content=result["content"] or message)
    return [Part(span, "step", call, span.start_ns, False), Part(span, "result", result, span.end_ns, True)], match


def emitted_call_part(span: Span, c: EmittedCall) -> Part:
    """A call the model of `span` emitted that no tool span answered: a tool_call step of its own, at the model call's end."""
    fields = {
        "type": "tool_call",
        "tool_name": c.call["name"],
        "tool_args": c.call["arguments"],
        "tool_call_id": c.call["id"],
        "timestamp": ns_time(span.end_ns),
        "agent_id": span.agent,
    }
    return Part(span, f"call.{c.index}", fields, span.end_ns, True)


def other_part(span: Span, a: oa.Attrs, kind: str) -> Part:
    """Any other span's `span` step; a failed one is an `error` step, except an agent's, which keeps its place."""
    fields = _start_fields(span, "span")
    fields["content"] = span.name or None
    if kind == oa.AGENT:
        fields["model"] = oa.requested_model(a)
    if span.status == "error":
        error_class, message = failure(span, a)
        fields.update(status="error", error_class=error_class)
        if kind != oa.AGENT:
            fields.update(type="error", content=message or span.name or None)
    return Part(span, "step", fields, span.start_ns, False)


def step_metadata(span: Span, a: oa.Attrs) -> dict[str, Any]:
    """What a step keeps of its span beyond its fields: the span's OTel identity and the attributes no field used."""
    otel: dict[str, Any] = {"trace_id": span.trace_id, "span_id": span.span_id, "name": span.name}
    if span.parent_id:
        otel["parent_span_id"] = span.parent_id
    if span.status_message:
        otel["status_message"] = span.status_message
    for key, value in span.otel.items():
        if value:
            otel[key] = value
    if span.events:
        otel["events"] = [{k: v for k, v in e.items() if v not in (None, {})} for e in span.events]
    out: dict[str, Any] = {"otel": otel}
    if a.values:  # a bare span (most of a big structural trace) has nothing left over
        used = a.used
        if a.has_prefix(OVERRIDE):
            leftover = {k: v for k, v in a.values.items() if k not in used and not k.startswith(OVERRIDE)}
        else:  # the usual span, none of our own export's attributes: no key needs a second look
            leftover = {k: v for k, v in a.values.items() if k not in used}
        if leftover:
            out["attributes"] = leftover
    return out


def not_recorded(fields: dict[str, Any]) -> list[str]:
    """The fields of a step that its spans did not carry (left empty, never guessed): a tool call's arguments,
    a tool's result, a model call's input messages."""
    kind = fields.get("type")
    if kind == "tool_call":
        return ["tool_args"] if fields.get("tool_args") is None else []
    if kind == "tool_result":
        return ["content"] if fields.get("content") is None else []
    if kind == "think":
        return ["context"] if fields.get("context") is None else []
    return []

"""A model call's messages from GenAI events, for instrumentations that write them there rather than in the
span's attributes: as span events (Logfire's and others' `gen_ai.user.message` … `gen_ai.choice`, their fields
as the event's attributes, or the Azure SDKs' JSON in `gen_ai.event.content`) or as log records on /v1/logs
(their body; `gen_ai.client.inference.operation.details` carries `gen_ai.input.messages` /
`gen_ai.output.messages` as attributes, read as the span readers read them).

`event_messages` takes (event name, fields) pairs in time order, whichever way they came, and returns the
input as OpenAI chat messages and the output's text and tool calls.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import otel_attributes as oa
from ..jsondoc import as_object

ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
CHOICE = "gen_ai.choice"
DETAILS = "gen_ai.client.inference.operation.details"


def is_genai(name: str) -> bool:
    return name in ROLES or name in (CHOICE, DETAILS)


def event_messages(events: Iterable[tuple[str, dict[str, Any]]]) -> tuple[list[dict] | None, str | None, list[dict]]:
    """(input messages or None, answer, tool calls [{id, name, arguments}]) from GenAI events in time order."""
    inputs: list[dict] = []
    outputs: list[dict] = []
    seen_input = False
    for name, raw in events:
        fields = _fields(raw)
        if name == DETAILS:
            attrs = oa.Attrs(fields)
            found = oa.input_messages(attrs)
            if found is not None:
                inputs, seen_input = found, True
            answer, calls = oa.model_output(attrs)
            if answer is not None or calls:
                outputs.append(_assistant(answer, [_openai(c) for c in calls]))
        elif name in ROLES:
            inputs.append(_message(ROLES[name], fields))
            seen_input = True
        elif name == CHOICE:
            message = oa.json_value(fields.get("message")) if isinstance(fields.get("message"), str) else fields.get("message")
            outputs.append(_message("assistant", message if isinstance(message, dict) else {}))
    answer, calls = oa.answer_and_calls(outputs) if outputs else (None, [])
    return (inputs if seen_input else None), answer, calls


def _fields(raw: dict[str, Any]) -> dict[str, Any]:
    """An event's fields: its body or attributes, or the JSON object in `gen_ai.event.content`."""
    content = raw.get("gen_ai.event.content")
    decoded = oa.json_value(content) if isinstance(content, str) else None
    return {**raw, **decoded} if isinstance(decoded, dict) else raw


def _message(role: str, fields: dict[str, Any]) -> dict:
    """One message event's fields as an OpenAI chat message."""
    content = fields.get("content")
    text = content if isinstance(content, str) or content is None else oa.text(content)
    if role == "tool":
        return {"role": "tool", "tool_call_id": fields.get("id") or fields.get("tool_call_id"), "content": text}
    calls = fields.get("tool_calls")
    calls = oa.json_value(calls) if isinstance(calls, str) else calls
    message: dict[str, Any] = {"role": fields.get("role") or role, "content": text}
    if isinstance(calls, list) and calls:
        message["tool_calls"] = [_openai(c) for c in calls if isinstance(c, dict)]
    return message


def _openai(call: dict) -> dict:
    """A tool call as the event wrote it ({id, name, arguments} or OpenAI's {id, function: …}) in OpenAI's shape."""
    fn = as_object(call.get("function"))
    return oa.openai_call(call.get("id"), call.get("name") or fn.get("name"), call.get("arguments", fn.get("arguments")))


def _assistant(answer: str | None, calls: list[dict]) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": answer}
    if calls:
        message["tool_calls"] = calls
    return message

"""The Langfuse SDK's span attributes, said in the GenAI conventions the rest of the reader reads.

The Langfuse SDK (v3 and later) exports plain OTLP spans, but writes what they are under its own
names: `langfuse.observation.type` (generation, tool, agent, chain, retriever, span…), the model,
`usage_details` and `cost_details` as JSON, `input` / `output` as JSON or text, `level` and
`status_message`, and trace-wide `langfuse.trace.name`, `langfuse.trace.tags`, `langfuse.release`,
`langfuse.environment` (`user.id` and `session.id` are already the common names). `normalise`
rewrites one span in place when it carries `langfuse.observation.type`, as it is decoded, so
steps, calls and sessions see a model call, a tool execution or an agent as from any other
instrumentation. A Langfuse attribute that was translated leaves the span (its value lives on
under the GenAI name); one that was not (model parameters, metadata, prompt name, usage detail
beyond input and output counts) stays and is kept in the step's metadata.
"""

from __future__ import annotations

from typing import Any

import orjson

from .. import otel_attributes as oa
from .spans import SESSION_OVERRIDE, Span

TYPE = "langfuse.observation.type"
_P = "langfuse.observation."
OPERATIONS = {
    "generation": "chat",
    "embedding": "embeddings",  # not a chat call: no think step, its span kept as it is
    "tool": "execute_tool",
    "retriever": "retrieval",
    "agent": "invoke_agent",
    "chain": "invoke_workflow",
}
INPUT_COUNTS = ("input", "prompt_tokens", "input_tokens", "promptTokens")
OUTPUT_COUNTS = ("output", "completion_tokens", "output_tokens", "completionTokens")
TOTAL_COUNTS = ("total", "total_tokens", "totalTokens")
_INTERNAL = ("langfuse.internal.as_root", "langfuse.internal.is_app_root")


def normalise(span: Span) -> Span:
    """`span` with its Langfuse attributes said in the GenAI conventions (in place); others untouched."""
    values = span.attributes
    if TYPE not in values:
        return span
    kind = str(values.pop(TYPE))
    operation = OPERATIONS.get(kind)
    if operation is not None:
        values.setdefault("gen_ai.operation.name", operation)
    if kind == "agent":
        values.setdefault("gen_ai.agent.name", span.name)
    for key in _INTERNAL:
        values.pop(key, None)
    _model(values)
    _usage(values)
    _cost(values)
    _io(values, kind)
    _level(span, values)
    _session(span, values)
    return span


def _decoded(value: Any) -> Any:
    """JSON text as data (the SDK serialises every non-string value); other text as it is."""
    if isinstance(value, str) and value[:1] in ("{", "[", '"'):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _model(values: dict[str, Any]) -> None:
    model = values.pop(_P + "model.name", None)
    if model not in (None, ""):
        values.setdefault("gen_ai.response.model", model)


def _usage(values: dict[str, Any]) -> None:
    """`usage_details` ({input, output, total} or the provider's own names) as the GenAI token counts; detail
    beyond them (cached, reasoning…) stays."""
    raw = values.get(_P + "usage_details")
    usage = _decoded(raw)
    if not isinstance(usage, dict):
        return
    left = dict(usage)
    for target, names in (("gen_ai.usage.input_tokens", INPUT_COUNTS), ("gen_ai.usage.output_tokens", OUTPUT_COUNTS)):
        name = next((n for n in names if oa.count(left.get(n)) is not None), None)
        if name is not None:
            values.setdefault(target, oa.count(left.pop(name)))
    for name in TOTAL_COUNTS:
        left.pop(name, None)
    left = {k: v for k, v in left.items() if v is not None}
    if left:
        values[_P + "usage_details"] = orjson.dumps(left).decode()
    else:
        values.pop(_P + "usage_details")


def _cost(values: dict[str, Any]) -> None:
    """`cost_details` ({input, output, total} in USD) as the run's common cost attribute, `gen_ai.usage.cost`."""
    cost = _decoded(values.get(_P + "cost_details"))
    if not isinstance(cost, dict):
        return
    total = oa.number(cost.get("total"))
    if total is None:
        parts = [oa.number(v) for v in cost.values()]
        total = sum(p for p in parts if p is not None) if any(p is not None for p in parts) else None
    if total is not None:
        values.setdefault("gen_ai.usage.cost", total)
        values.pop(_P + "cost_details")


def _io(values: dict[str, Any], kind: str) -> None:
    raw_in, raw_out = values.pop(_P + "input", None), values.pop(_P + "output", None)
    if kind in ("generation", "embedding"):
        _generation_io(values, _decoded(raw_in), _decoded(raw_out))
    elif kind in ("tool", "retriever"):
        if raw_in is not None:
            values.setdefault("gen_ai.tool.call.arguments", _call_arguments(_decoded(raw_in)))
        if raw_out is not None:
            values.setdefault("gen_ai.tool.call.result", _decoded(raw_out) if isinstance(raw_out, str) else raw_out)
    else:  # agents, chains, spans: their input and output as OpenInference's generic values
        if raw_in is not None:
            values.setdefault("input.value", raw_in)
        if raw_out is not None:
            values.setdefault("output.value", raw_out)


def _generation_io(values: dict[str, Any], given: Any, answer: Any) -> None:
    """A generation's input ({messages, tools}, a message list, or a prompt) and output (a message, or text)."""
    messages = given.get("messages") if isinstance(given, dict) else given
    if isinstance(given, dict) and isinstance(given.get("tools"), list):
        values.setdefault("gen_ai.tool.definitions", orjson.dumps(given["tools"]).decode())
    if isinstance(given, dict):
        rest = {k: v for k, v in given.items() if k not in ("messages", "tools")}
        if rest:
            values.setdefault(_P + "input", orjson.dumps(rest).decode())
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    if isinstance(messages, list):
        values.setdefault("gen_ai.input.messages", orjson.dumps(messages).decode())
    if isinstance(answer, str):
        answer = {"role": "assistant", "content": answer}
    if isinstance(answer, dict) and ("content" in answer or "tool_calls" in answer):
        values.setdefault("gen_ai.output.messages", orjson.dumps([answer]).decode())
    elif isinstance(answer, list):
        values.setdefault("gen_ai.output.messages", orjson.dumps(answer).decode())
    elif answer is not None:
        values.setdefault(_P + "output", orjson.dumps(answer).decode())


def _call_arguments(given: Any) -> Any:
    """The @observe decorator records a call as {args, kwargs}: keyword arguments alone are the tool's
    arguments; positional ones are kept as recorded (the model's call then names the arguments)."""
    if isinstance(given, dict) and set(given) <= {"args", "kwargs"} and not given.get("args"):
        kwargs = given.get("kwargs")
        return orjson.dumps(kwargs if isinstance(kwargs, dict) else {}).decode()
    return given if isinstance(given, str) else orjson.dumps(given).decode()


def _level(span: Span, values: dict[str, Any]) -> None:
    """`level` ERROR fails a span whose OTel status says nothing; DEFAULT says nothing; WARNING and DEBUG stay."""
    level = str(values.get(_P + "level") or "").upper()
    message = values.pop(_P + "status_message", None)
    if message and not span.status_message:
        span.status_message = str(message)
    if level == "ERROR" and span.status == "unset":
        span.status = "error"
    if level in ("ERROR", "DEFAULT"):
        values.pop(_P + "level")


def _session(span: Span, values: dict[str, Any]) -> None:
    """Trace-wide fields as the run's: its name, tags, release (else `langfuse.version`: the agent's version) and
    environment. `user.id` and `session.id` (or `langfuse.user.id` / `langfuse.session.id`) are read as the run's
    user and thread by sessions.py; they and metadata stay attributes (kept in the step's metadata).

    They travel as the session override our own export writes on the resource, without changing the
    resource the span shares with others; one the resource already holds wins."""
    found: dict[str, Any] = {}
    name = values.pop("langfuse.trace.name", None)
    if name:
        found["name"] = str(name)
    tags = _decoded(values.get("langfuse.trace.tags"))
    if isinstance(tags, str):
        tags = [tags]
    if isinstance(tags, list) and all(isinstance(t, str) for t in tags):
        values.pop("langfuse.trace.tags")
        found["tags"] = tags
    release = values.pop("langfuse.release", None) or values.get("langfuse.version")  # the app's release, else its version
    if release:
        found["agent_version"] = str(release)
    environment = values.pop("langfuse.environment", None)
    if environment:
        found["environment"] = str(environment)
    if not found:
        return
    held = _decoded(span.resource.get(SESSION_OVERRIDE))
    merged = found | (held if isinstance(held, dict) else {})
    span.resource = {**span.resource, SESSION_OVERRIDE: orjson.dumps(merged).decode()}

"""How a run ended, from its spans: its status, its error, its final answer as readable text, and
the cost of each model call (given by the span, else estimated from list prices).

The answer is what the root span records (Pydantic AI's `final_result`, Langfuse's observation
output, `output.value`, GenAI output messages), read as text: the last assistant message of a
graph state (LangGraph's `{"messages": [...]}`), the `raw` text of a CrewAI output, never the
dump. When the root records none, the answer is the text of the batch's last model call, if that
call asked for no tool (OpenAI Agents, OpenLLMetry, Logfire, openai-v2 keep it there only).

A run whose root ended without error and with an answer succeeded, even when a tool or an inner
agent step failed on the way (those steps keep their error); a root that failed, or an inner
failure with no answer, makes the run failed with that error.
"""

from __future__ import annotations

from typing import Any

from ...pricing import ESTIMATED, estimate
from .. import otel_attributes as oa
from . import crewai
from .spans import Part, Span
from .steps import failure

ROOT_ANSWER_KEYS = ("final_result", "langfuse.observation.output", crewai.CREW_OUTPUT)
STATE_ROLES = {"ai", "assistant", "AIMessage", "AIMessageChunk"}
SPAN_COSTS = ("operation.cost",)  # a span's cost under a name the common reading does not know (Pydantic AI, Logfire)


def readable(value: Any) -> str | None:
    """An output value as the text a person reads: a state's last assistant message, a CrewAI
    output's `raw`, an OpenAI-style message's content; else the value as text."""
    decoded = oa.json_value(value) if isinstance(value, str) else value
    if isinstance(decoded, dict):
        messages = decoded.get("messages")
        if isinstance(messages, list):
            return _last_assistant_text(messages)
        if isinstance(decoded.get("raw"), str):
            return decoded["raw"] or None
        answer, _ = oa.output_value(decoded, False)
        return answer
    if isinstance(decoded, list) and decoded and all(isinstance(m, dict) for m in decoded):
        found = _last_assistant_text(decoded)
        if found is not None:
            return found
    return value if isinstance(value, str) else oa.text(value)


def _last_assistant_text(messages: list) -> str | None:
    for message in reversed(messages):
        if not isinstance(message, dict):
            continue
        body = message.get("data") or message.get("kwargs") or message
        kind = message.get("type") or message.get("role") or (message.get("id") or [None])[-1]
        if not isinstance(body, dict) or kind not in STATE_ROLES:
            continue
        content = body.get("content")
        if isinstance(content, list):  # content blocks
            content = "".join(b.get("text", "") for b in content if isinstance(b, dict)) or None
        if isinstance(content, str) and content:
            return content
    return None


def root_answer(a: oa.Attrs) -> str | None:
    """The final answer the root span records, as readable text (its attributes stay in its step's metadata)."""
    for key in ROOT_ANSWER_KEYS:
        value = a.peek(key)
        if value is not None and value != "":
            return readable(value)
    raw = a.peek("output.value")
    decoded = oa.json_value(raw) if isinstance(raw, str) else raw
    if isinstance(decoded, dict) and (isinstance(decoded.get("messages"), list) or isinstance(decoded.get("raw"), str)):
        return readable(decoded)
    return oa.root_output(a)


def last_model_answer(parts: list[Part]) -> str | None:
    """The text of the last model call among `parts` when it asked for no tool (its answer to the user)."""
    thinks = [p for p in parts if p.role == "step" and p.fields.get("type") == "think"]
    if not thinks:
        return None
    last = max(thinks, key=lambda p: p.t_ns or 0)
    asked_tool = any(p.span is last.span and p.role.startswith("call.") for p in parts) or any(
        p.role == "step" and p.fields.get("type") == "tool_call" and (p.t_ns or 0) > (last.t_ns or 0) for p in parts
    )
    return None if asked_tool else last.fields.get("content")


def document_answer(document: dict | None) -> str | None:
    """A dump's `final_output` (any-agent); Python's "None" written as text means no answer."""
    value = (document or {}).get("final_output")
    if value in (None, "", "None", "null") or value == {} or value == []:
        return None
    return oa.text(value)


def ending(roots: list[Span], spans: list[Span], parts: list[Part], document: dict | None = None) -> dict[str, Any]:
    """The run's status, error class and outcome (its answer, or its error's message), once every
    root has ended or one failed ({} before). An agent span's failure counts as the run's when no
    answer came after it; a tool's never does. A dump that has a `final_output` field says the
    answer there (an empty one: none), and the last model call's text is not taken in its place."""
    root_failed = next((r for r in roots if r.status == "error"), None)
    if not roots or (root_failed is None and any(r.end_ns is None for r in roots)):
        return {}
    answer = root_answer(_attrs(roots[-1])) if root_failed is None else None
    if answer is None and root_failed is None:
        answer = document_answer(document) if "final_output" in (document or {}) else last_model_answer(parts)
    failed = root_failed or (None if answer else next((s for s in spans if s.status == "error" and s.kind == oa.AGENT), None))
    if failed is not None:
        error_class, message = failure(failed, _attrs(failed))
        return {"status": "failed", "error_class": error_class, "outcome": message or answer}
    return {"status": "succeeded", "outcome": answer}


def _attrs(span: Span) -> oa.Attrs:
    return span.attrs if span.attrs is not None else oa.Attrs(span.attributes)


def price(parts: list[Part]) -> None:
    """Fill in the cost of each step with a model that the common reading left empty: from the
    span's own cost attribute, else estimated from list prices (marked `cost_estimated` in its
    metadata); a model without a list price keeps its cost unknown."""
    for part in parts:
        fields = part.fields
        if part.role != "step" or fields.get("cost_usd") is not None or not fields.get("model"):
            continue
        attributes = part.span.attributes
        given = None
        for key in SPAN_COSTS:
            if key in attributes:
                given = oa.number(attributes[key])
                break
        if given is not None:
            fields["cost_usd"] = given
            meta = fields.get("metadata") or {}
            leftover = {k: v for k, v in (meta.get("attributes") or {}).items() if k not in SPAN_COSTS}
            if leftover:
                meta["attributes"] = leftover
            else:
                meta.pop("attributes", None)
            continue
        priced = estimate(fields["model"], fields.get("tokens_in"), fields.get("tokens_out"))
        if priced is not None:
            fields["cost_usd"] = priced
            fields.setdefault("metadata", {})[ESTIMATED] = True

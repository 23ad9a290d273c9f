"""CrewAI's own execution trace (its trace listener's spans, each with a `crewai.event_name`), read as
CrewAI means it where the common reading would not:

- `gen_ai.agent.name` holds the agent's key (a hash); the agent is its role (`crewai.agent.role`), the
  name CrewAI's own outputs give it.
- A `call llm` whose response calls no tool is the agent's final answer: a `decision` step, as every
  framework reader marks an answer that ends the loop (in CrewAI's text mode, a response naming an
  `Action:` and no `Final Answer:` still asks for a tool and stays a `think`).
- A raised tool gives two spans: the errored `call tool` (`tool_usage_error`) and a `tool failure`
  (`tool_failure_detected`, same tool and arguments) saying how CrewAI took it. That is one call that
  failed: the `tool failure` span makes no step of its own; its span id and the attributes the
  `call tool` span does not repeat (`crewai.tool.failure.*`: reason, code, retryable, policy) go to the
  errored result's metadata (`tool_failure`). CrewAI sends a crew's spans in one request; a `tool
  failure` span posted apart from its `call tool` span leaves no trace.
- A tool's result (`gen_ai.tool.call.result`) is JSON-encoded (`"\\"Sunny\\""`): its text is decoded.
- The run's answer is `crewai.crew.output`, CrewOutput's `raw` text (answers.ROOT_ANSWER_KEYS).
"""

from __future__ import annotations

import re
from typing import Any

from .. import otel_attributes as oa
from .spans import Part

EVENT = "crewai.event_name"  # on every span CrewAI's trace listener writes
CREW_OUTPUT = "crewai.crew.output"
FAILURE = "crewai.tool_failure"  # the kind a `tool failure` span is read as: no tool execution of its own
_FAILURE_EVENT = "tool_failure_detected"
_REACT_ACTION = re.compile(r"^\s*Action\s*:", re.M)


def read_span(a: oa.Attrs, kind: str, agent: str | None) -> tuple[str, str | None]:
    """A CrewAI span's kind and own agent: a `tool failure` span is no tool execution, an agent is named by its role."""
    if a.peek(EVENT) == _FAILURE_EVENT:
        return FAILURE, agent
    role = a.peek("crewai.agent.role")
    if kind == oa.AGENT and isinstance(role, str) and role:
        a.use("crewai.agent.role")
        return kind, role
    return kind, agent


def mark_answer(part: Part, calls: list[dict]) -> None:
    """A CrewAI model call that asked for no tool and said something is its agent's final answer (`decision`)."""
    fields = part.fields
    text = fields.get("content")
    if EVENT not in part.span.attributes or fields["type"] != "think" or calls or not isinstance(text, str):
        return
    if text.strip() and (not _REACT_ACTION.search(text) or "Final Answer:" in text):
        fields["type"] = "decision"


def settle(parts: list[Part]) -> None:
    """Once a session's parts are read: `tool failure` steps folded into the failed tool result they
    describe (or dropped, the failed `call tool` span carrying the error itself), tool results decoded."""
    failed: dict[tuple[str | None, Any], Part] = {}
    notes: list[Part] = []
    for part in parts:
        span = part.span
        if EVENT not in span.attributes:
            continue
        if span.kind == FAILURE:
            notes.append(part)
        elif part.role == "result":
            _decode_result(part.fields)
            if part.fields.get("status") == "error":
                failed[(span.parent_id, part.fields.get("tool_name"))] = part
    for note in notes:
        note.fields["omit"] = True
        values = note.span.attributes
        result = failed.get((note.span.parent_id, values.get("gen_ai.tool.name")))
        if result is not None:
            same = result.span.attributes
            kept = {k: v for k, v in values.items() if k not in same or same[k] != v}
            result.fields.setdefault("metadata", {})["tool_failure"] = {"span_id": note.span.span_id, "attributes": kept}


def _decode_result(fields: dict[str, Any]) -> None:
    content = fields.get("content")
    if isinstance(content, str) and content[:1] == '"':
        decoded = oa.json_value(content)
        if isinstance(decoded, str):
            fields["content"] = decoded

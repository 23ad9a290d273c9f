"""Tool calls a model emitted, matched to the tool spans that ran them, within one batch and across batches.

A model span lists the calls it emitted; a tool span answers one of them (same call id, else the
same name and arguments, else the same name), and the two become one tool_call step. A call no
tool span answers is a step of its own. A tool span that records no result (OpenLLMetry's, a
Logfire span around a tool) gets it from a model call's input: the tool message answering its
call id. For OTLP arriving in batches a `Ledger` carries what earlier batches of the same traces
left open, so a later batch can still answer them (ingest/otlp_receiver.py keeps it in the Store).
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from ....events import StepEvent
from .spans import Part, Span
from .values import ns_time

RESULT = "result"  # the ledger side of a tool result stored without its text


@dataclass
class EmittedCall:
    """A call a model emitted (its `index`-th), or one an earlier batch stored."""

    span: Span | None  # None: a call stored from an earlier batch (`prior`)
    index: int
    call: dict[str, Any]
    start_ns: int | None = None
    prior: PriorCall | None = None
    matched: bool = False


@dataclass
class PriorCall:
    """What an earlier batch of a trace left unanswered: a call a model emitted (`side` "call", stored as
    its `call.N` step), a tool execution no call matched (`side` "tool", stored as its tool_call step)
    or a tool result stored without its text (`side` "result", `arguments` what else its step holds)."""

    trace_id: str
    side: str
    event_id: str
    name: str | None
    call_id: str | None
    arguments: Any
    t_ns: int | None


@dataclass
class Replace:
    """A step of this batch that takes the place of a stored one: the tool span answering a model's call
    that an earlier batch stored as a bare `call.N` step becomes that step (kept at its seq)."""

    old_event_id: str
    step: StepEvent


@dataclass
class Ledger:
    """What a receiver of OTLP batches knows of their traces from earlier batches, and what a batch changed.

    `session_of` names the session a trace already lives in; `prior` lists each trace's open calls;
    the mapping fills `consumed` (prior calls this batch answered) and `opened` (calls and tool spans of
    this batch left unanswered), which the receiver stores for the next batch, and `places` (each step's
    ordering.place by (session id, event id)), by which the receiver puts them among the stored steps.
    """

    session_of: dict[str, str] = field(default_factory=dict)
    prior: dict[str, list[PriorCall]] = field(default_factory=dict)
    consumed: list[PriorCall] = field(default_factory=list)
    opened: list[PriorCall] = field(default_factory=list)
    places: dict[tuple[str, str], str] = field(default_factory=dict)


def answered_before(emitted: list[EmittedCall], tools: list[PriorCall], ledger: Ledger) -> None:
    """Calls of this batch's models that a tool span stored by an earlier batch already answered
    (batches delivered out of order): same id, else same name (and arguments when both have them)."""
    by_id = {t.call_id: t for t in tools if t.call_id}
    for c in emitted:
        found = by_id.pop(c.call["id"], None) if c.call["id"] else None
        if found is None:
            found = next(
                (
                    t
                    for t in tools
                    if t.name == c.call["name"]
                    and t not in ledger.consumed
                    and (t.call_id is None or c.call["id"] is None)
                    and (t.arguments is None or c.call["arguments"] is None or t.arguments == c.call["arguments"])
                    and (t.t_ns or 0) >= (c.start_ns or 0)
                ),
                None,
            )
        if found is not None and found not in ledger.consumed:
            c.matched = True
            ledger.consumed.append(found)


class OpenCalls:
    """Calls models emitted that no tool span has answered yet, findable by id in O(1)."""

    def __init__(self, calls: list[EmittedCall]):
        self.open = list(calls)
        self.by_id: dict[str, deque[EmittedCall]] = defaultdict(deque)
        for c in calls:
            if c.call["id"]:
                self.by_id[c.call["id"]].append(c)

    def answer(self, span: Span, name: str, call_id: str | None, args: Any) -> EmittedCall | None:
        """The call this tool execution answers: same id, else (ids missing) same name and arguments, else same name."""
        found = self.by_id[call_id].popleft() if call_id and self.by_id.get(call_id) else None
        if found is None:
            start = span.start_ns or 0
            same_name = [
                c
                for c in self.open
                if c.call["name"] == name and (c.call["id"] is None or call_id is None) and (c.start_ns or 0) <= start
            ]
            exact = (c for c in same_name if args is None or c.call["arguments"] == args)
            found = next(exact, same_name[0] if same_name else None)
            if found is not None and found.call["id"]:
                self.by_id[found.call["id"]].remove(found)
        if found is not None:
            found.matched = True
            self.open.remove(found)
        return found


def _answers(parts: list[Part]) -> dict[str, tuple[str, Part]]:
    """Tool messages in model calls' inputs, by call id: (text, the model call's part)."""
    found: dict[str, tuple[str, Part]] = {}
    for part in parts:
        context = part.fields.get("context") if part.fields.get("type") in ("think", "error") else None
        for message in context if isinstance(context, list) else ():
            call_id, content = message.get("tool_call_id"), message.get("content")
            if message.get("role") == "tool" and isinstance(call_id, str) and isinstance(content, str):
                found.setdefault(call_id, (content, part))
    return found


def last_answers(context: Any) -> dict[str, str]:
    """The tool messages closing a model call's input (those answering the calls of the turn before it), by call
    id: the results this call is the first to receive, so a stored result is looked for once, not at every call."""
    found: dict[str, str] = {}
    for message in reversed(context if isinstance(context, list) else []):
        if not isinstance(message, dict) or message.get("role") != "tool":
            break
        call_id, content = message.get("tool_call_id"), message.get("content")
        if isinstance(call_id, str) and isinstance(content, str):
            found[call_id] = content
    return found


def results_from_inputs(parts: list[Part], ledger: Ledger | None) -> list[Part]:
    """Fill tool results whose span records none from the tool message a model call received for the same call
    id (`metadata.content_from` names that model step), in this batch or, with a `ledger`, in a later one: a
    result stored without its text is then replaced by one with it (returned, for the caller to add).

    A result waits in the ledger only where this batch's model calls record their input (else no later one will
    either: openai-v2's default conventions, AutoGen's own spans), so the ledger holds at most the results of
    the last batch's tools."""
    waiting = []
    if ledger:
        traces = dict.fromkeys(p.span.trace_id for p in parts)
        waiting = [p for t in traces for p in ledger.prior.get(t, ()) if p.side == RESULT]
    bare = [
        p
        for p in parts
        if p.fields.get("type") == "tool_result" and p.fields.get("content") is None and p.fields.get("tool_call_id")
    ]
    if not bare and not waiting:
        return []
    answers = _answers(parts)
    inputs_recorded = any(isinstance(p.fields.get("context"), list) for p in parts)
    for part in bare:
        found = answers.get(part.fields["tool_call_id"])
        if found is not None:
            part.fields["content"] = found[0]
            part.fields["metadata"] = {"content_from": {"model_input": found[1].span.span_id}}
        elif ledger is not None and inputs_recorded:
            ledger.opened.append(_waiting(part))
    if ledger is None:
        return []
    replacements = []
    for stored in waiting:
        found = answers.get(stored.call_id or "")
        if found is not None:
            replacements.append(_replacement(stored, *found))
            ledger.consumed.append(stored)
    return replacements


def _waiting(part: Part) -> PriorCall:
    """A tool result stored without its text, with what its step holds, so a later batch can restore it whole."""
    span, fields = part.span, part.fields
    parent = span.up
    kept = {k: fields.get(k) for k in ("duration_ms", "tool_name", "agent_id")}
    kept["parent_id"] = parent.span_id if parent is not None else span.parent_id
    name, call_id = fields.get("tool_name"), fields["tool_call_id"]
    return PriorCall(span.trace_id, RESULT, f"{span.span_id}.result", name, call_id, kept, part.t_ns)


def _replacement(waiting: PriorCall, text: str, model: Part) -> Part:
    """The stored result `waiting` stands for, now with the text the `model` call received (kept at its seq)."""
    kept = waiting.arguments if isinstance(waiting.arguments, dict) else {}
    fields = {
        "type": "tool_result",
        "event_id": waiting.event_id,
        "timestamp": ns_time(waiting.t_ns),
        "tool_call_id": waiting.call_id,
        "content": text,
        "metadata": {"content_from": {"model_input": model.span.span_id}},
        **kept,
    }
    return Part(model.span, "result", fields, waiting.t_ns, True, replaces=waiting.event_id)

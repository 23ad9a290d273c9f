"""Tool calls a model emitted, matched to the tool spans that ran them, within one batch and across batches.

A model span lists the calls it emitted; a tool span answers one of them (same call id, else the
same name and arguments, else the same name), and the two become one tool_call step. A call no
tool span answers is a step of its own. For OTLP arriving in batches a `Ledger` carries what
earlier batches of the same traces left open, so a later batch can still answer them
(ingest/otlp_receiver.py keeps it in the Store).
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from ....events import StepEvent
from .spans import Span


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
    its `call.N` step) or a tool execution no call matched (`side` "tool", stored as its tool_call step)."""

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

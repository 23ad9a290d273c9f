"""The spans every container decodes into, and the step parts one span yields.

A span and its `step` part point at each other while a session is mapped (children name
their parent's step through it); the mapping clears that link once the steps are made, so
what it built is freed by reference counting, none of it left to the cyclic collector.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import otel_attributes as oa

# attributes our own OTLP export writes, restoring the contract fields the GenAI conventions have no name for
OVERRIDE = "agent_replay."
SESSION_OVERRIDE = "agent_replay.session"


@dataclass(slots=True)
class Span:
    """One span, whatever container it came in; ids are lowercase hex."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int | None
    end_ns: int | None
    status: str  # unset | ok | error
    status_message: str | None
    attributes: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)
    otel: dict[str, Any] = field(default_factory=dict)  # kind, scope, links, trace_state…: kept in metadata
    where: str = ""
    document: dict[str, Any] | None = None  # fields of the file around the spans (any-agent's final_output)
    # what reading its session worked out (sessions._read_session), kept on the span: dicts keyed by id(span)
    # cost a 50,000-span body a million id() calls
    attrs: oa.Attrs | None = None
    kind: str | None = None  # oa.MODEL, oa.TOOL, oa.AGENT…
    agent: str | None = None  # its own agent name, else the nearest ancestor's
    anchor: Part | None = None  # its `step` part, which its children's steps name as their parent
    # set by ordering.SpanTrees: its parent span (an orphan's is its trace's root) and its depth (-1 not known yet); on the
    # span rather than in dicts keyed by id(span), and left out of == (a 50,000-deep chain would recurse)
    up: Span | None = field(default=None, compare=False, repr=False)
    depth: int = field(default=-1, compare=False, repr=False)


@dataclass(slots=True)
class Part:
    """One step a span yields: `step` (every span), `result` (tool spans), `call.N` (calls a model emitted)."""

    span: Span
    role: str
    fields: dict[str, Any]
    t_ns: int | None
    ends: bool  # placed at the span's end (results, emitted calls) rather than its start
    replaces: str | None = None  # event id of a stored step (an earlier batch's emitted call) this one takes the place of

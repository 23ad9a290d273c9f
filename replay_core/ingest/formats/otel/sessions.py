"""Spans → contract events: spans grouped into sessions, each session's steps read, ordered and validated.

- sessions come from `gen_ai.conversation.id` / `session.id`, else one per trace;
- event ids derive from span ids (re-importing stores nothing twice), parent links follow the
  span tree (ordering), and a span's steps are read by `steps`;
- `agent_replay.*` attributes (written by our own OTLP export) override the fields read.

Everything is linear in spans (depths are memoised along each walk up the tree, so a 50,000-deep
parent chain costs what 50,000 siblings do).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, overload

from pydantic import ValidationError

from ....events import SessionEndEvent, SessionEvent, StepEvent, describe_validation_error, fast_step
from .. import otel_attributes as oa
from ..reader import BadRecord, Event
from ..runs import fitted_ids
from . import answers, conventions, crewai
from .calls import EmittedCall, Ledger, OpenCalls, PriorCall, Replace, answered_before, results_from_inputs
from .ordering import SpanTrees, place, start_key
from .spans import OVERRIDE, SESSION_OVERRIDE, Part, Span
from .steps import emitted_call_part, model_part, not_recorded, other_part, step_metadata, tool_parts
from .values import ns_time

_first = itemgetter(0)
StepRows = Callable[[dict[str, Any]], Any]  # a step's fields → what to store for it, or None (its StepEvent then)


@dataclass
class SessionDraft:
    """The steps and session fields read from one session's spans, before validation."""

    session_id: str
    spans: list[Span]
    trees: SpanTrees
    parts: list[Part] = field(default_factory=list)
    ledger: Ledger | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    final: bool = False  # the source says how the run ended
    named: bool = False  # a span of it may name its session (else none names any: its id is its trace's)


def _named_session(root: Span | None, members: list[Span]) -> str | None:
    """The session a trace's spans name: its root's, else that of the first to start that names one
    (the first met on a tie). One pass, no sort."""
    named = oa.conversation_id(root.attributes) if root is not None else None
    if named:
        return named
    best = None
    for span in members:
        found = oa.conversation_id(span.attributes) if span is not root else None
        if found and (best is None or start_key(span) < best[0]):
            best = (start_key(span), found)
    return best[1] if best else None


def draft_sessions(spans: Iterable[Span], ledger: Ledger | None = None) -> list[SessionDraft]:
    """Group spans into sessions and read each span's steps (no overrides applied yet).

    With a `ledger` (spans arriving in batches), a trace an earlier batch placed stays in its session
    and calls left open by earlier batches can be answered."""
    unique: dict[tuple[str, str], Span] = {}
    by_trace: dict[str, list[Span]] = {}
    for span in spans:
        key = (span.trace_id, span.span_id)
        if key not in unique:  # the first of a span sent twice
            unique[key] = span
            by_trace.setdefault(span.trace_id, []).append(span)
    trees = SpanTrees(list(unique.values()), adopt=ledger is None, by_id=unique)
    sessions: dict[str, SessionDraft] = {}
    for trace_id, members in by_trace.items():
        root = trees.roots.get(trace_id)
        sid = (ledger.session_of.get(trace_id) if ledger else None) or _named_session(root, members)
        draft = sessions.get(sid or trace_id)
        if draft is None:
            draft = sessions[sid or trace_id] = SessionDraft(sid or trace_id, [], trees, ledger=ledger)
        draft.spans.extend(members)
        draft.named = draft.named or sid is not None
    drafts = list(sessions.values())
    for draft in drafts:
        _read_session(draft)
    return drafts


def _read_session(draft: SessionDraft) -> None:
    draft.trees.order(draft.spans)
    emitted: list[EmittedCall] = []
    tool_spans: list[tuple[Span, oa.Attrs]] = []
    sid = draft.session_id
    for span in draft.spans:  # a parent met later in the loop below has no agent yet (its trace is in this draft)
        span.agent = None
    for span in draft.spans:  # parents start first: an agent's name reaches its descendants
        values = span.attributes
        a = span.attrs = oa.Attrs(values)
        if values:
            span.name = conventions.filled_name(span.name, values)
            kind = oa.span_class(a)
            if kind == oa.OTHER:
                kind = conventions.kind_from_name(span.name) or kind
            if draft.named and oa.conversation_id(values) == sid:
                a.use("gen_ai.conversation.id", "session.id")
            own = oa.agent_name(a) or (conventions.agent_from_name(span.name) if kind == oa.AGENT else None)
            if crewai.EVENT in values:
                kind, own = crewai.read_span(a, kind, own)
        else:  # a bare span (most of a big structural trace): no attribute to read
            kind, own = oa.OTHER, None
        span.kind = kind
        parent = span.up
        span.agent = own or (parent.agent if parent is not None else None)
        if kind == oa.MODEL:  # model calls first, so that every tool span can find the call it answers
            part, calls = model_part(span, a)
            crewai.mark_answer(part, calls)
            emitted += [EmittedCall(span, i, c, span.start_ns) for i, c in enumerate(calls)]
            draft.parts.append(part)
        elif kind == oa.TOOL:
            tool_spans.append((span, a))
        else:
            draft.parts.append(other_part(span, a, kind))
    ledger = draft.ledger
    prior = [p for t in dict.fromkeys(s.trace_id for s in draft.spans) for p in ledger.prior.get(t, ())] if ledger else []
    if ledger is not None and prior:
        answered_before(emitted, [p for p in prior if p.side == "tool"], ledger)
    prior_calls = [
        EmittedCall(None, -1, {"name": p.name, "id": p.call_id, "arguments": p.arguments}, p.t_ns, p)
        for p in prior
        if p.side == "call"
    ]
    open_calls = OpenCalls(prior_calls + emitted)
    for span, a in tool_spans:
        parts, match = tool_parts(span, a, open_calls)
        draft.parts += parts
        if ledger is None:
            continue
        if match is not None and match.prior is not None:
            parts[0].replaces = match.prior.event_id
            ledger.consumed.append(match.prior)
        elif match is None:
            call = parts[0].fields
            ledger.opened.append(
                PriorCall(
                    span.trace_id,
                    "tool",
                    span.span_id,
                    call["tool_name"],
                    call["tool_call_id"],
                    call["tool_args"],
                    span.start_ns,
                )
            )
    draft.parts += results_from_inputs(draft.parts, ledger)
    model_usage = False
    for part in draft.parts:
        fields = part.fields
        fields.setdefault("agent_id", part.span.agent)
        model_usage = model_usage or bool(fields.get("tokens_in") or fields.get("tokens_out"))
    for c in emitted:
        model = c.span
        assert model is not None  # a call of this batch's models: only a prior call has no span
        if not c.matched:
            if ledger is not None:
                ledger.opened.append(
                    PriorCall(
                        model.trace_id,
                        "call",
                        f"{model.span_id}.call.{c.index}",
                        c.call["name"],
                        c.call["id"],
                        c.call["arguments"],
                        model.start_ns,
                    )
                )
            draft.parts.append(emitted_call_part(model, c))
    _session_fields(draft, model_usage)
    for part in draft.parts:
        missing = not_recorded(part.fields)  # an `agent_replay.*` override, applied later, has the last word
        if part.role == "step":
            meta = step_metadata(part.span, _attrs(part.span))
            images = part.fields.pop("attachments", None)
            part.fields["metadata"] = meta | {"attachments": images} if images else meta
        if missing:
            part.fields.setdefault("metadata", {})["not_recorded"] = missing
    crewai.settle(draft.parts)
    answers.price(draft.parts)


def _attrs(span: Span) -> oa.Attrs:
    """A span's attributes as reading its session left them (`_read_session` reads every span of a draft first)."""
    assert span.attrs is not None
    return span.attrs


def _run_totals(a: oa.Attrs) -> dict[str, Any]:
    """Token and cost totals a root span records for the whole run, for the session's metadata
    (where every importer keeps totals no step carries)."""
    if not oa.has_usage(a):
        return {}
    tokens_in, tokens_out = oa.tokens(a)
    return {k: v for k, v in (("tokens_in", tokens_in), ("tokens_out", tokens_out), ("cost_usd", oa.cost(a))) if v is not None}


def _session_fields(draft: SessionDraft, model_usage: bool) -> None:
    roots = [s for s in draft.spans if s.parent_id is None]
    first = roots[0] if roots else None
    fields: dict[str, Any] = {}
    if first is not None:
        a = _attrs(first)
        step = next(p for p in draft.parts if p.span is first and p.role == "step")
        fields.update(
            name=first.name or None,
            agent_id=step.fields.get("agent_id"),
            started_at=ns_time(first.start_ns),
            workflow=a.get("gen_ai.workflow.name"),
            agent_version=a.get("gen_ai.agent.version"),
        )
        fields.update(_user_and_thread(draft.spans))
        models = (p.fields["model"] for p in draft.parts if p.fields.get("model"))
        fields["model"] = step.fields.get("model") or next(models, None)
        resource = first.resource
        fields["environment"] = resource.get("deployment.environment.name") or resource.get("deployment.environment")
        totals = {} if model_usage or first.kind == oa.MODEL else _run_totals(a)
        fields["metadata"] = _session_metadata(draft, first) | totals
        end = answers.ending(roots, draft.spans, draft.parts, first.document)
        if end:
            draft.final = True
            fields.update(end, ended_at=ns_time(max(r.end_ns or 0 for r in roots) or None))
    draft.fields = fields


_NAMING = frozenset(oa.USER_KEYS + oa.THREAD_KEYS)


def _user_and_thread(spans: list[Span]) -> dict[str, str]:
    """The run's user and thread: the first value of each one's attributes on the session's spans (in order:
    roots first), whole (cut where kept: runs.fitted_ids); the attributes stay in their steps' metadata. One pass; a
    span without any of them costs one C-level check."""
    found: dict[str, str] = {}
    for span in spans:
        values = span.attributes
        if values.keys().isdisjoint(_NAMING):  # looks up the few names in the map, not each key in the set
            continue
        for name, keys in (("user_id", oa.USER_KEYS), ("thread_id", oa.THREAD_KEYS)):
            if name not in found:
                value = next((values[k] for k in keys if values.get(k) not in (None, "")), None)
                if value is not None:
                    found[name] = str(value)
        if len(found) == 2:
            break
    return found


def _session_metadata(draft: SessionDraft, first: Span) -> dict[str, Any]:
    otel: dict[str, Any] = {"trace_ids": list(dict.fromkeys(s.trace_id for s in draft.spans))}
    resource = {k: v for k, v in first.resource.items() if k != SESSION_OVERRIDE and not k.startswith("deployment.environment")}
    if resource:
        otel["resource"] = resource
    out: dict[str, Any] = {"otel": otel}
    document = {k: v for k, v in (first.document or {}).items() if k != "final_output"}
    if document:
        out["document"] = document
    return out


def _override(raw: Any, where: str) -> dict[str, Any]:
    value = oa.json_value(raw) if isinstance(raw, str) else raw
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected a JSON object, got {str(raw)[:80]!r}")
    return value


def session_events(
    draft: SessionDraft, *, assign_seq: bool = True, rows: StepRows | None = None
) -> list[Event | Replace | BadRecord]:
    """Contract events of one drafted session: overrides applied, steps ordered and numbered.

    With `rows` (a receiver storing the steps at once), each step is what `rows` makes of its fields,
    where it makes something (a store row, validated and redacted), else its StepEvent. `Replace`
    items come only from a draft with a ledger."""
    out: list[Event | Replace | BadRecord] = []
    parts = draft.parts
    for part in parts:
        span = part.span
        if part.role == "step":
            span.anchor = part
        key = OVERRIDE + part.role
        if key in span.attributes:
            try:
                part.fields.update(_override(span.attributes[key], key))
            except ValueError as exc:
                out.append(BadRecord(span.where, str(exc)))
    ranked = sorted(((place(p), p) for p in parts), key=_first)  # by place alone (ties keep their order)
    parts[:] = [p for _, p in ranked]
    ranked = [r for r in ranked if not r[1].fields.pop("omit", False)]  # a placeholder span of a run without steps
    steps: list = []  # StepEvents, and what `rows` made
    replaces: list[Replace] = []
    sid = draft.session_id
    for n, (at, part) in enumerate(ranked, start=1):
        fields, span = part.fields, part.span
        if "event_id" not in fields:
            fields["event_id"] = span.span_id if part.role == "step" else f"{span.span_id}.{part.role}"
        if "parent_id" not in fields:
            parent = span.up
            anchor = parent.anchor if parent is not None else None
            fields["parent_id"] = anchor.fields.get("event_id") if anchor else span.parent_id
        if "seq" not in fields and assign_seq:
            fields["seq"] = n
        # the fields themselves, Nones and all, are what the fast path checks (one dict a step, not three:
        # it is a third of the map's time); the model only for what it cannot vouch for (it words the refusal)
        fields.setdefault("kind", "step")
        fields.setdefault("session_id", sid)
        if draft.ledger is not None:
            draft.ledger.places[(sid, fields["event_id"])] = at
        try:
            if part.replaces:
                replaces.append(
                    Replace(part.replaces, fast_step(fields) or StepEvent(**{k: v for k, v in fields.items() if v is not None}))
                )
            else:
                steps.append(
                    (rows and rows(fields))
                    or fast_step(fields)
                    or StepEvent(**{k: v for k, v in fields.items() if v is not None})
                )
        except (ValidationError, TypeError) as exc:
            reason = describe_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
            out.append(BadRecord(f"{span.where} ({part.role})", reason))
    for part in draft.parts:  # a span and its part point at each other: left so, a big body's spans were garbage
        part.span.anchor = None  # only the cyclic collector could free (a quarter second after a 50,000-span receive)
    session = dict(draft.fields)
    raw = next((s.resource[SESSION_OVERRIDE] for s in draft.spans if SESSION_OVERRIDE in s.resource), None)
    if raw is not None:
        try:
            session.update(_override(raw, SESSION_OVERRIDE))
        except ValueError as exc:
            out.append(BadRecord(draft.spans[0].where, str(exc)))
    end_keys = ("status", "outcome", "error_class", "ended_at")
    end = {k: session.pop(k, None) for k in end_keys}
    final = end["status"] in ("succeeded", "failed")
    try:
        kept = fitted_ids({k: v for k, v in session.items() if v is not None})
        events: list[Event] = [SessionEvent(session_id=draft.session_id, **kept)]
        events += steps
        if final:
            events.append(SessionEndEvent(session_id=draft.session_id, **{k: v for k, v in end.items() if v is not None}))
    except ValidationError as exc:
        return out + [BadRecord(draft.spans[0].where, describe_validation_error(exc))]
    return [*events, *replaces, *out]


@overload
def spans_to_events(
    spans: Iterable[Span | BadRecord],
    *,
    assign_seq: bool = True,
    ledger: None = None,
    rows: StepRows | None = None,
) -> Iterator[Event | BadRecord]: ...


@overload
def spans_to_events(
    spans: Iterable[Span | BadRecord],
    *,
    assign_seq: bool = True,
    ledger: Ledger,
    rows: StepRows | None = None,
) -> Iterator[Event | Replace | BadRecord]: ...


def spans_to_events(
    spans: Iterable[Span | BadRecord],
    *,
    assign_seq: bool = True,
    ledger: Ledger | None = None,
    rows: StepRows | None = None,
) -> Iterator[Event | Replace | BadRecord]:
    """The whole mapping: spans (and the readers' refusals, passed on) → contract events.

    `Replace` items come only with a `ledger` (a batch answering calls an earlier batch stored)."""
    good: list[Span] = []
    for item in spans:
        if isinstance(item, BadRecord):
            yield item
        else:
            good.append(item)
    for draft in draft_sessions(good, ledger):
        yield from session_events(draft, assign_seq=assign_seq, rows=rows)

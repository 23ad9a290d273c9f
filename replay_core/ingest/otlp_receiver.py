"""OTLP export requests as they arrive (`POST /v1/traces`): a trace is one run whatever batches it comes in.

An exporter sends spans as they end, in batches: a run's tool and model spans usually go
out before the agent span at its root, which carries `session.id` and ends last. Each batch
is therefore read against what earlier batches of its traces left in the Store:
- a trace whose session is not known yet (no root, no `session.id` seen) is stored, visible,
  in a provisional session named by its trace id; when the root or the `session.id` arrives
  its steps move to the real session (placed among what that session holds, with the batch's
  own steps, in the batch's one write transaction) and the provisional session is gone —
  nothing is kept aside where a live view cannot see it;
- a trace already placed keeps its session for every later span;
- a model call an earlier batch stored as a bare `tool_call` (no tool span yet) is taken over
  by the tool span answering it when that arrives (the stored step becomes the tool's call,
  at its seq), and a tool span stored before the model call it answers suppresses the bare
  call: the same steps as when both arrive in one batch. Open calls of a trace are dropped
  once it has been idle for AGENT_REPLAY_IDLE_MINUTES.
Batches are handled one at a time per Store (a lock), so two requests of one trace cannot
interleave between reading and committing that state.
"""

from __future__ import annotations

import threading
import time
import weakref

from .. import config
from ..events import StepEvent
from ..storage.columns import EVENT_ID_AT, STEP_COLUMNS
from ..storage.ingest_state import OtlpArrangement
from ..storage.store import StepRow, Store
from .formats import otel
from .formats import otel_attributes as oa
from .formats.otel.calls import last_answers
from .formats.otel.logs import take_held
from .pipeline import IngestReport, collector_paused, ingest
from .redact import Redactor, default_redactor
from .step_rows import step_row_of

AGENT_AT, PARENT_AT = STEP_COLUMNS.index("agent_id"), STEP_COLUMNS.index("parent_id")
TYPE_AT, CONTENT_AT, CALL_ID_AT = (STEP_COLUMNS.index(c) for c in ("type", "content", "tool_call_id"))
_LOCKS: weakref.WeakKeyDictionary[Store, threading.Lock] = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


_SETTLED: weakref.WeakKeyDictionary[Store, float] = weakref.WeakKeyDictionary()  # when each store last looked


def _settle_quiet_runs(store: Store) -> None:
    """Every config.settle_after at most (under the store's lock): the runs whose traces went quiet numbered 1..n."""
    now = time.monotonic()
    if now - _SETTLED.get(store, float("-inf")) >= config.settle_after().total_seconds():
        _SETTLED[store] = now
        store.otlp_settle()


def lock_of(store: Store) -> threading.Lock:
    """The lock batches of one Store take turns by (otlp_worker holds it while its process works)."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(store, threading.Lock())


def receive(store: Store, data: bytes, content_type: str, *, redactor: Redactor | None = None) -> IngestReport:
    """Read one OTLP/HTTP body and store it joined to its traces' earlier batches.

    Raises otel.OtlpError (nothing stored) when the body or a span cannot be read.
    """
    with collector_paused():  # 50,000 spans are ~10 objects each: the cyclic GC took half the time
        return _receive(store, data, content_type, redactor or default_redactor())


def _receive(store: Store, data: bytes, content_type: str, redactor: Redactor) -> IngestReport:
    spans = otel.spans_from_otlp(data, content_type)
    source = otel.otlp_reader(content_type).name
    with lock_of(store):
        placed, open_rows = store.otlp_state(list(dict.fromkeys(s.trace_id for s in spans)))
        spans, set_up = _without_set_up(spans, placed)
        trace_ids = list(dict.fromkeys(s.trace_id for s in spans))
        settles = _settling(spans)
        ledger = otel.Ledger()
        for row in open_rows:
            ledger.prior.setdefault(row["trace_id"], []).append(otel.PriorCall(**row))
        laid = take_held(spans, open_rows, ledger)  # GenAI log events that came before their spans
        now_placed: dict[str, tuple[str, bool]] = {}
        moves: list[tuple[str, str]] = []
        for tid in trace_ids:
            where = placed.get(tid)
            found, has_root = settles.get(tid, (None, False))
            if where is not None and where[1]:
                now_placed[tid] = where
            else:
                sid = found or tid
                now_placed[tid] = (sid, found is not None or has_root)
                if where is not None and where[0] != sid:
                    moves.append((where[0], sid))
            ledger.session_of[tid] = now_placed[tid][0]
        places = ledger.places  # filled as each step is made, before `rows` makes its row

        def rows(fields: dict) -> StepRow | None:
            return step_row_of(fields, redactor, places.get((fields["session_id"], fields["event_id"])))

        items = otel.events_from_spans(spans, ledger, rows)  # OtlpError before anything is stored
        replaced = [
            (r.old_event_id, redactor.event(r.step), ledger.places.get((r.step.session_id, r.step.identity())))
            for r in items
            if isinstance(r, otel.Replace)
        ]
        events = [e for e in items if not isinstance(e, otel.Replace)]
        sources: dict[str, list[str]] = {}
        for from_sid, to_sid in moves:
            sources.setdefault(to_sid, []).append(from_sid)
        events, replaced, agents = _inherited(store, events, replaced, sources)
        commit = {
            "placed": now_placed,
            "consumed": [(p.trace_id, p.side, p.event_id) for p in ledger.consumed],
            "opened": [_row(p, redactor) for p in ledger.opened],
            "replaced": replaced,
            "idle": None,
        }
        rooted = {now_placed[tid][0] for tid in trace_ids if settles.get(tid, (None, False))[1]}
        arrange = OtlpArrangement(moves, ledger.places, commit, agents, rooted)
        report = ingest(store, events, redactor=redactor, source=source, arrange=arrange)
        _results_across_batches(store, events, laid)
        _settle_quiet_runs(store)
    report.steps += len(replaced)
    report.set_up = set_up
    return report


def _without_set_up(spans: list[otel.Span], placed: dict) -> tuple[list[otel.Span], list[str]]:
    """The batch's spans but those of set-up traces, and those traces' ids.

    A set-up trace is a framework building an agent, not running one (AutoGen opens one per agent
    it creates): its root is a GenAI `create_agent` operation, and it holds no model call and no
    tool. It is judged whole in the batch holding its root, which ends last: the conventions name
    that operation for building alone, so no run's model or tool spans are still to come under it.
    A trace an earlier batch placed is a run already, whatever its root."""
    roots = {s.trace_id: s for s in spans if s.parent_id is None}
    candidates = {
        tid for tid, root in roots.items() if tid not in placed and root.attributes.get("gen_ai.operation.name") == "create_agent"
    }
    if not candidates:
        return spans, []
    for span in spans:
        if span.trace_id in candidates and oa.span_class(oa.Attrs(span.attributes)) in (oa.MODEL, oa.TOOL):
            candidates.discard(span.trace_id)
    return [s for s in spans if s.trace_id not in candidates], sorted(candidates)


def _key(ev: StepRow | StepEvent) -> tuple[str, str]:
    """A step's (session id, event id)."""
    if isinstance(ev, StepRow):
        return ev.session_id, ev.row[EVENT_ID_AT]
    return ev.session_id, ev.identity()


def _inherited(
    store: Store, events: list, replaced: list, sources: dict[str, list[str]]
) -> tuple[list, list, dict[str, dict[str, str]]]:
    """The batch's steps with the agent they inherit from a stored ancestor (a step whose parent came in an
    earlier batch had none to inherit while its spans were read: looked up in its run and the provisional
    runs moving into it, `sources`), and per run {event_id: agent} of its steps with an agent, which stored
    steps below them inherit where the batch lands before or among them (`OtlpArrangement`). A run none of
    whose agentless steps has its parent outside the batch has nothing to look up."""
    steps: dict[str, dict[str, tuple[str | None, str | None]]] = {}  # sid → event_id → (agent, parent)
    for ev in [*events, *(step for _, step, _ in replaced)]:
        if isinstance(ev, (StepRow, StepEvent)):
            sid, eid = _key(ev)
            link = (ev.row[AGENT_AT], ev.row[PARENT_AT]) if isinstance(ev, StepRow) else (ev.agent_id, ev.parent_id)
            steps.setdefault(sid, {})[eid] = link
    given: dict[tuple[str, str], str] = {}
    agents: dict[str, dict[str, str]] = {}
    wanted: dict[str, tuple[list[str], list[str]]] = {}  # run → (runs to look in, event ids outside the batch)
    for sid, mine in steps.items():
        agents[sid] = {eid: a for eid, (a, _) in mine.items() if a is not None}  # with what the walk below finds
        outside = {p for a, p in mine.values() if a is None and p is not None and p not in mine}
        if outside:  # else the mapping gave every agentless step what its batch holds
            wanted[sid] = ([sid, *sources.get(sid, ())], sorted(outside))
    stored = store.step_agents(wanted) if wanted else {}  # one read for every run of the batch
    for sid, mine in steps.items():
        if sid not in wanted:
            continue
        known = agents[sid]
        found: dict[str | None, str | None] = {}
        found.update(stored.get(sid, {}))
        for eid in mine:
            path, node = [], eid  # type: list[str], str | None
            while node not in found and node in mine and mine[node][0] is None:
                path.append(node)
                found[node] = None  # a cycle (bad input) stops here
                node = mine[node][1]
            agent = (known.get(node) if node is not None else None) or found.get(node)
            for item in path:
                found[item] = agent
                if agent is not None:
                    given[(sid, item)] = known[item] = agent
    if not given:
        return events, replaced, agents
    out = []
    for ev in events:
        agent = given.get(_key(ev)) if isinstance(ev, (StepRow, StepEvent)) else None
        if agent is not None and isinstance(ev, StepRow):
            ev = StepRow(ev.session_id, (*ev.row[:AGENT_AT], agent, *ev.row[AGENT_AT + 1 :]), ev.context, ev.redacted)
        elif agent is not None:
            ev = ev.model_copy(update={"agent_id": agent})
        out.append(ev)
    again = [(old, step.model_copy(update={"agent_id": given.get(_key(step), step.agent_id)}), at) for old, step, at in replaced]
    return out, again, agents


def _settling(spans: list[otel.Span]) -> dict[str, tuple[str | None, bool]]:
    """Per trace of the batch: the session id a span names (root first, then by start) and whether its root is here.

    One pass, no sort: per trace the earliest span (in that order; the first seen on a tie) naming a session."""
    out: dict[str, tuple[str | None, bool]] = {}
    best: dict[str, tuple[bool, int]] = {}
    for span in spans:
        tid = span.trace_id
        found, has_root = out.get(tid, (None, False))
        named = oa.conversation_id(span.attributes) if span.attributes else None
        if named is not None:
            key = (span.parent_id is not None, span.start_ns if span.start_ns is not None else 2**63)
            if found is None or key < best[tid]:
                found, best[tid] = named, key
        out[tid] = (found, has_root or span.parent_id is None)
    return out


def _row(call: otel.PriorCall, redactor: Redactor) -> dict:
    """An open call as kept for the next batch: its name, id and arguments redacted like the step shown for
    it (a later batch then matches a call whose arguments held a secret by its id or name, and one whose
    id or name held a secret not at all: its tool span becomes a step of its own)."""
    return {
        "trace_id": call.trace_id,
        "side": call.side,
        "event_id": call.event_id,
        "name": redactor.scrub(call.name)[0],
        "call_id": redactor.scrub(call.call_id)[0],
        "arguments": redactor.scrub(call.arguments)[0],
        "t_ns": call.t_ns,
    }


def _results_across_batches(store: Store, events: list, laid: set[str]) -> None:
    """Tool results stored without text whose text the batch before or after holds, where no ledger row waits for
    it (the model calls' inputs came as log events): a model call of this batch given its held events fills the
    stored results it is the first to receive, and a result of this batch without text takes it from the first
    model call stored after it."""
    received, bare = [], []
    for ev in events:
        if isinstance(ev, StepRow):
            row = ev.row
            kind, event_id, content, call_id = row[TYPE_AT], row[EVENT_ID_AT], row[CONTENT_AT], row[CALL_ID_AT]
        elif isinstance(ev, StepEvent):
            kind, event_id, content, call_id = ev.type, ev.identity(), ev.content, ev.tool_call_id
        else:
            continue
        if kind == "think" and event_id in laid:
            answers = last_answers(ev.context)
            if answers:
                received.append({"session_id": ev.session_id, "event_id": event_id, "results": answers})
        elif kind == "tool_result" and content is None and call_id is not None:
            bare.append((ev.session_id, event_id, call_id))
    if received:
        store.otlp_fill_steps(received)
    if bare:
        store.otlp_results_from_later(bare)

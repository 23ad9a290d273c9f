"""OTLP export requests as they arrive (`POST /v1/traces`): a trace is one run whatever batches it comes in.

An exporter sends spans as they end, in batches: a run's tool and model spans usually go
out before the agent span at its root, which carries `session.id` and ends last. Each batch
is therefore read against what earlier batches of its traces left in the Store:
- a trace whose session is not known yet (no root, no `session.id` seen) is stored, visible,
  in a provisional session named by its trace id; when the root or the `session.id` arrives
  its steps move to the real session (numbered after what that session holds) and the
  provisional session is gone — nothing is kept aside where a live view cannot see it;
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
import weakref
from functools import partial

from ..events import StepEvent
from ..storage.store import Store
from .formats import otel
from .formats import otel_attributes as oa
from .pipeline import IngestReport, collector_paused, ingest
from .redact import Redactor, default_redactor
from .step_rows import step_row_of

_LOCKS: weakref.WeakKeyDictionary[Store, threading.Lock] = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


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
        trace_ids = list(dict.fromkeys(s.trace_id for s in spans))
        placed, open_rows = store.otlp_state(trace_ids)
        settles = _settling(spans)
        ledger = otel.Ledger()
        for row in open_rows:
            ledger.prior.setdefault(row["trace_id"], []).append(otel.PriorCall(**row))
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
        items = otel.events_from_spans(
            spans, ledger, partial(step_row_of, redactor=redactor)
        )  # OtlpError before anything is stored
        events = [e for e in items if not isinstance(e, otel.Replace)]
        replaced: list[tuple[str, StepEvent]] = [
            (r.old_event_id, redactor.event(r.step)) for r in items if isinstance(r, otel.Replace)
        ]
        for from_sid, to_sid in moves:
            store.move_session_steps(from_sid, to_sid)
        report = ingest(store, events, redactor=redactor, source=source)
        opened = [_row(p, redactor) for p in ledger.opened]
        consumed = [(p.trace_id, p.side, p.event_id) for p in ledger.consumed]
        store.otlp_commit(now_placed, consumed, opened, replaced)
    report.steps += len(replaced)
    return report


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

"""OTLP logs as they arrive (`POST /v1/logs`): GenAI events joined to the spans they name, whatever comes first.

An instrumentation in events mode sends a model call's messages as log records beside its spans, on their
own schedule (the SDK's log batches go every second, span batches every five), so either may arrive first:
- events whose span is already stored fill in what its steps lack: the model call's context and answer,
  the arguments of the tool calls it made, the text of the tool results it is the first to receive, and
  the run's answer when its root recorded none (`Store.otlp_fill_steps`; what a step holds is kept);
- events whose span has not come are held with the trace's open calls (`otlp_open_calls`, side `log`):
  the OTLP receiver lays them on the span when it arrives (`logs.take_held`), and they are dropped with the
  trace's other open calls once it has been idle for AGENT_REPLAY_IDLE_MINUTES.
Requests go one at a time per Store with the span batches (the receiver's lock). Every record is
accounted for: used, or ignored by kind (not a GenAI event, no span id).
"""

from __future__ import annotations

from typing import Any

from ..events import StepEvent
from ..storage.store import Store
from .formats import otel_attributes as oa
from .formats.otel.calls import last_answers
from .formats.otel.logs import HELD, log_records, merge_into, span_contents
from .otlp_receiver import lock_of
from .redact import Redactor, default_redactor


def receive_logs(store: Store, data: bytes, content_type: str, *, redactor: Redactor | None = None) -> dict[str, Any]:
    """Read one OTLP/HTTP logs body and join its GenAI events to their spans; the account of its records.
    Raises ValueError (nothing stored) when the body cannot be read."""
    contents = span_contents(log_records(data, content_type))
    redactor = redactor or default_redactor()
    filled = held = 0
    with lock_of(store):
        trace_ids = list(dict.fromkeys(tid for tid, _ in contents.spans))
        placed, open_rows = store.otlp_state(trace_ids)
        earlier = {(r["trace_id"], r["event_id"]): r for r in open_rows if r["side"] == HELD}
        opened: list[dict] = []
        consumed: list[tuple[str, str, str]] = []
        for (tid, span_id), attrs in contents.spans.items():
            where = placed.get(tid)
            fill = _fill(where[0], span_id, attrs, redactor) if where else None
            if fill is not None and store.otlp_fill_steps([fill]):
                filled += 1
                continue
            before = earlier.get((tid, span_id))
            if before is not None:  # more events of a span already waiting: one row for all
                consumed.append((tid, HELD, span_id))
                merge_into(attrs, before["arguments"] or {})
            opened.append({"trace_id": tid, "side": HELD, "event_id": span_id, "arguments": attrs})
            held += 1
        keep = {tid: placed.get(tid, (tid, False)) for tid in trace_ids}  # an unknown trace is known now, to expire
        store.otlp_commit(keep, consumed, opened, [])
    return contents.account() | {"spans_filled": filled, "spans_held": held}


def _fill(session_id: str, span_id: str, attrs: dict[str, Any], redactor: Redactor) -> dict[str, Any] | None:
    """What a stored model call's step (its event id is its span's) gets from its events, redacted as stored steps are."""
    a = oa.Attrs(dict(attrs))
    context = oa.input_messages(a)
    answer, calls = oa.model_output(a)
    if not context and answer is None and not calls:
        return None
    step = redactor.event(
        StepEvent(session_id=session_id, event_id=span_id, type="think", content=answer, context=context or None)
    )
    call_args = {}
    for call in calls:
        if call.get("id") and call.get("arguments") is not None:
            tool_call = StepEvent(
                session_id=session_id, type="tool_call", tool_name=call.get("name") or "tool", tool_args=call["arguments"]
            )
            call_args[str(call["id"])] = redactor.event(tool_call).tool_args
    return {
        "session_id": session_id,
        "event_id": span_id,
        "content": step.content,
        "context": step.context,
        "call_args": call_args,
        "results": last_answers(step.context),
        "answer": None if calls else step.content,
    }

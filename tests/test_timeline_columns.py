"""An opened run is computed from its steps' columns and builds its step objects when asked for
(timeline.Steps): on random runs, on SQLite and PostgreSQL, it must give exactly what the steps in
hand give (the order of the full ORDER BY, whole steps, cycles, gaps, totals, state at any step)."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as hs
from sqlalchemy import select

from replay_core.events import SessionEvent, StepEvent
from replay_core.ingest.pipeline import ingest
from replay_core.storage.tables import steps as steps_table
from replay_core.understand.cycles import cycle_of_steps, group_cycles
from replay_core.understand.snapshot import messages_before, rebuild_messages, state_at
from replay_core.understand.timeline import build_timeline, find_gaps, open_timeline

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
TYPES = ["input", "think", "tool_call", "tool_result", "observation", "error", "decision", "span"]
_FIELDS = {
    "type": hs.sampled_from(TYPES),
    "seq_step": hs.sampled_from([0, 1, 1, 1, 2]),  # 0: the same seq again (read in the full order), 2: a gap
    "at": hs.none() | hs.integers(0, 100),
    "content": hs.none() | hs.sampled_from(["", "done", "an error here"]),
    "tool_name": hs.none() | hs.sampled_from(["a", "b"]),
    "call": hs.none() | hs.sampled_from([0, -1]),  # this step's own call id, or the previous step's
    "tool_args": hs.none() | hs.sampled_from([{"q": 1}, "raw", 5]),
    "status": hs.sampled_from(["ok", "ok", "error"]),
    "retry": hs.sampled_from([0, 0, 1]),
    "error_class": hs.none() | hs.just("Boom"),
    "tokens_in": hs.none() | hs.sampled_from([0, 7]),
    "tokens_out": hs.none() | hs.just(3),
    "cost_usd": hs.none() | hs.sampled_from([0.0, 0.1, 0.2]),
    "metadata": hs.none() | hs.sampled_from([{"role": "system"}, {"role": "assistant"}, {"state": {"goal": "g", "m": None}}]),
    "context": hs.none() | hs.none() | hs.sampled_from([[{"role": "user", "content": "recorded"}], {"not": "chat"}]),
}
_step = hs.fixed_dictionaries(_FIELDS)
_runs = itertools.count()
_PLAIN = dict.fromkeys(_FIELDS) | {"seq_step": 1, "status": "ok", "retry": 0}
# an assistant turn an input opened, then tool calls joining it, answered, a repeated seq, a gap
_TURNS = [
    _PLAIN | {"type": "input", "metadata": {"role": "assistant"}},
    _PLAIN | {"type": "tool_call", "call": 0},
    _PLAIN | {"type": "tool_call", "seq_step": 0, "at": 5},
    _PLAIN | {"type": "tool_result", "call": -1, "at": 1},
    _PLAIN | {"type": "think", "seq_step": 2, "tokens_in": 7},
    _PLAIN | {"type": "tool_call", "tool_name": "a"},
]


def _ingested(store, specs: list[dict]) -> str:
    sid = f"cols-{next(_runs)}"
    events, seq = [SessionEvent(session_id=sid, started_at=T0)], 0
    for i, spec in enumerate(specs):
        seq = max(seq + spec["seq_step"], 1)
        call = None if spec["call"] is None else f"c{i + spec['call']}"
        events.append(
            StepEvent(
                session_id=sid,
                event_id=f"e{i}",
                seq=seq,
                type=spec["type"],
                content=spec["content"],
                timestamp=None if spec["at"] is None else T0 + timedelta(seconds=spec["at"]),
                tool_name=spec["tool_name"],
                tool_call_id=call,
                tool_args=spec["tool_args"],
                status=spec["status"],
                retry=spec["retry"],
                error_class=spec["error_class"],
                tokens_in=spec["tokens_in"],
                tokens_out=spec["tokens_out"],
                cost_usd=spec["cost_usd"],
                metadata=spec["metadata"],
                context=spec["context"],
            )
        )
    ingest(store, events)
    return sid


def _full_order(store, sid: str) -> list[str]:
    query = (
        select(steps_table.c.event_id)
        .where(steps_table.c.session_id == sid)
        .order_by(steps_table.c.seq, steps_table.c.timestamp, steps_table.c.id)
    )
    with store.engine.connect() as conn:
        return list(conn.scalars(query))


def _totals_by_definition(steps: list[StepEvent], pos: int) -> dict:
    """Each running total at `pos`, summed over the steps up to it, as the state-at-step rule defines it."""
    upto = steps[: pos + 1]
    first = next((s.timestamp for s in steps if s.timestamp), None)
    cost = 0.0
    for s in upto:
        cost += s.cost_usd if s.cost_usd is not None else 0.0
    here = steps[pos].timestamp
    return {
        "tokens_in": sum(s.tokens_in or 0 for s in upto),
        "tokens_out": sum(s.tokens_out or 0 for s in upto),
        "cost_usd": cost,
        "cost_unknown_steps": sum(
            1
            for s in upto
            if s.cost_usd is None and s.type in ("think", "decision") and ((s.tokens_in or 0) or (s.tokens_out or 0))
        ),
        "tool_calls": sum(1 for s in upto if s.type == "tool_call"),
        "errors": sum(1 for s in upto if s.type == "error" or s.status == "error"),
        "retries": sum(1 for s in upto if (s.retry or 0) > 0),
        "elapsed_s": (here - first).total_seconds() if here and first else None,
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=hs.lists(_step, max_size=14), seed=hs.integers(0, 2**16))
@example(specs=_TURNS, seed=0)
def test_an_opened_run_is_what_its_steps_in_hand_give(store, specs, seed):
    sid = _ingested(store, specs)
    tl = open_timeline(store, sid)
    steps = store.load_steps(sid)
    assert [s.event_id for s in steps] == _full_order(store, sid)
    rng = random.Random(seed)
    picked = {i: tl.steps[i] for i in rng.sample(range(len(steps)), min(3, len(steps)))}  # built one by one
    for i, step in picked.items():
        assert step == steps[i] and step.content == steps[i].content
    assert len(tl.steps) == len(steps) and list(tl.steps) == steps
    assert all(tl.steps[i] is step for i, step in picked.items())  # building all keeps the ones built before
    assert tl.steps[1:-1] == steps[1:-1] and tl.steps[::-2] == steps[::-2]

    in_hand = build_timeline(store.get_session(sid), steps, store.context_event_ids(sid))
    assert tl.cycles == group_cycles(steps) == in_hand.cycles
    assert tl.cycle_index == cycle_of_steps([s.type for s in steps])
    assert tl.gaps == find_gaps([s.seq for s in steps])
    assert tl.error_positions() == tuple(i for i, s in enumerate(steps) if s.type == "error" or s.status == "error")
    assert tl.error_class_positions() == tuple(i for i, s in enumerate(steps) if s.error_class)
    assert tl.first_input() == next((s for s in steps if s.type == "input" and (s.metadata or {}).get("role") != "system"), None)
    assert tl.summary() == in_hand.summary()
    for pos in range(len(steps)):
        got = {name: getattr(tl.totals, name)[pos] for name in _totals_by_definition(steps, pos)}
        want = _totals_by_definition(steps, pos)
        assert got == want and [type(v) for v in got.values()] == [type(v) for v in want.values()]
        before, after = rebuild_messages(steps[:pos]), rebuild_messages(steps[: pos + 1])
        assert messages_before(tl, pos) == before
        if steps[pos].type == "tool_call":  # it joins the assistant turn before it (whatever step made it), else opens one
            joins = bool(before) and before[-1]["role"] == "assistant"
            assert len(after) == len(before) + (not joins)
            assert after[-1]["tool_calls"][-1]["function"]["name"] == (steps[pos].tool_name or "tool")
    for seq in rng.sample([s.seq for s in steps], min(4, len(steps))):
        assert state_at(tl, seq, store).to_dict() == state_at(in_hand, seq, store).to_dict()
        assert state_at(tl, seq).to_dict() == state_at(in_hand, seq).to_dict()

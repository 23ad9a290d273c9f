"""The timeline page's run-wide parts come from the opened run's columns, no step object built: the
nesting (structure.build_structure), the story (cycle_groups.story), the strip's run-wide ticks and the
notes by seq. Each must be exactly what the step objects give: the nesting against its definition over
step objects, on random parent graphs (self-parents, dangling ids, cycles) and on runs read back from
SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from replay_core.events import SessionEvent, StepEvent
from replay_core.ingest.pipeline import ingest
from replay_core.understand.cycle_groups import cycle_groups, story
from replay_core.understand.cycles import group_cycles
from replay_core.understand.structure import Node, Structure, build_structure
from replay_core.understand.timeline import columns_of, open_timeline
from ui.timeline_view import _run_ticks, notes_by_seq

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
_runs = itertools.count()


def _above(parent: list[int | None], i: int) -> list[int]:
    """The positions above step i, nearest first, up to where the chain would repeat."""
    chain: list[int] = []
    current = parent[i]
    while current is not None and current not in chain:
        chain.append(current)
        current = parent[current]
    return chain


def _structure_of_steps(steps: list[StepEvent]) -> Structure:
    """The nesting by its definition, over step objects: a node's steps are the steps it is above."""
    by_event = {s.event_id: i for i, s in enumerate(steps)}
    parent: list[int | None] = [by_event.get(s.parent_id) if s.parent_id else None for s in steps]
    parent = [None if p == i else p for i, p in enumerate(parent)]
    holders = sorted({p for p in parent if p is not None} | {i for i, s in enumerate(steps) if s.type == "span"})
    nodes = {}
    for p in holders:
        below = [i for i in range(len(steps)) if p in _above(parent, i)]
        nodes[p] = Node(
            position=p,
            depth=len(_above(parent, p)),
            first_seq=steps[p].seq,
            last_seq=max([steps[p].seq] + [steps[i].seq for i in below]),
            steps=len(below),
            errors=sum(steps[i].type == "error" or steps[i].status == "error" for i in below),
            children=[c for c in holders if parent[c] == p],
        )
    return Structure(nodes=nodes, parent=parent)


_spec = hs.fixed_dictionaries(
    {
        "type": hs.sampled_from(["input", "think", "tool_call", "tool_result", "error", "decision", "span"]),
        "status": hs.sampled_from(["ok", "ok", "error", "blocked"]),
        # a parent: none, an earlier or later step (cycles happen), itself, an id naming no step
        "parent": hs.none() | hs.integers(0, 11) | hs.just("nobody"),
        "tool_name": hs.none() | hs.sampled_from(["search_docs", "run_tests"]),
        "retry": hs.sampled_from([0, 0, 1, 2]),
        "seq_step": hs.sampled_from([0, 1, 1, 3]),
    }
)


def _steps(session_id: str, specs: list[dict]) -> list[StepEvent]:
    out, seq = [], 0
    for i, spec in enumerate(specs):
        seq += spec["seq_step"] if i else 1
        parent = spec["parent"]
        out.append(
            StepEvent(
                session_id=session_id,
                event_id=f"e{i}",
                seq=seq,
                type=spec["type"],
                status=spec["status"],
                parent_id=None if parent is None else parent if isinstance(parent, str) else f"e{parent}",
                tool_name=spec["tool_name"],
                retry=spec["retry"],
                timestamp=T0 + timedelta(seconds=i),
            )
        )
    return out


@settings(deadline=None)
@given(specs=hs.lists(_spec, max_size=12))
def test_the_nesting_from_columns_is_the_nesting_from_steps(specs):
    steps = _steps("s", specs)
    got, want = build_structure(columns_of(steps)), _structure_of_steps(steps)
    assert got == want
    assert [got.ancestors(p) for p in range(len(steps))] == [want.ancestors(p) for p in range(len(steps))]
    assert got.walk() == want.walk()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=hs.lists(_spec, max_size=12))
def test_an_opened_run_tells_and_nests_itself_as_its_steps_do(store, specs):
    sid = f"nest-{next(_runs)}"
    ingest(store, [SessionEvent(session_id=sid, started_at=T0), *_steps(sid, specs)])
    tl = open_timeline(store, sid)
    steps = store.load_steps(sid)
    structure = build_structure(tl.columns)
    assert structure == _structure_of_steps(steps)
    cycles = group_cycles(steps)
    assert tl.cycles == cycles
    assert cycle_groups(tl.columns, tl.cycles) == cycle_groups(columns_of(steps), cycles)
    assert story(tl.columns, tl.cycles) == story(columns_of(steps), cycles)
    ticks = {(t["seq"], t["what"]) for t in _run_ticks(tl, structure)}
    assert {q for q, what in ticks if what == "retry"} == {s.seq for s in steps if s.retry}
    assert {q for q, what in ticks if what == "group"} == {steps[p].seq for p in structure.nodes}
    assert {q for q, what in ticks if what == "error"} == {s.seq for s in steps if s.type == "error" or s.status == "error"}
    notes = [{"event_id": s.event_id} for s in steps[::2]] + [{"event_id": None}, {"event_id": "gone"}]
    run_notes, by_seq = notes_by_seq(tl, notes)
    assert run_notes == [{"event_id": None}]
    want: dict[int, list[dict]] = {}
    for s in steps[::2]:
        want.setdefault(s.seq, []).append({"event_id": s.event_id})
    assert by_seq == want
    assert not any(tl.steps._built)  # none of it built a step

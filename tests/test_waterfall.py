"""The span waterfall's layout (understand/waterfall.py) by its rules, on random parent graphs (self-parents,
dangling ids, loops, duplicate ids) and clocks (steps with no time or no duration): every step is one row, a
row comes after the row it hangs under and one level deeper, an acyclic parent link is kept, siblings keep run
order, and every bar lies within the run's span. Also a step read back from SQLite and PostgreSQL, and a
100,000-deep chain laid out without recursion."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as hs

from replay_core.events import StepEvent
from replay_core.ingest.pipeline import ingest
from replay_core.understand.timeline import columns_of, open_timeline
from replay_core.understand.waterfall import layout

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


@hs.composite
def runs(draw) -> list[StepEvent]:
    n = draw(hs.integers(1, 40))
    steps = []
    for i in range(n):
        link = draw(hs.one_of(hs.none(), hs.integers(0, n - 1), hs.just(-1)))  # -1: an id naming no step
        at = draw(hs.one_of(hs.none(), hs.integers(0, 10_000)))
        steps.append(
            StepEvent(
                session_id="w",
                seq=i + 1,
                event_id=f"e{draw(hs.integers(0, n - 1)) if draw(hs.booleans()) and i else i}",  # some ids repeat
                parent_id=None if link is None else "nowhere" if link < 0 else f"e{link}",
                type=draw(hs.sampled_from(["think", "tool_call", "span", "error"])),
                status=draw(hs.sampled_from(["ok", "error"])),
                timestamp=None if at is None else T0 + timedelta(milliseconds=at),
                duration_ms=draw(hs.one_of(hs.none(), hs.floats(0, 5_000))),
                content=f"step {i + 1}",
            )
        )
    return steps


def _parent_positions(steps: list[StepEvent]) -> list[int | None]:
    """Each step's parent by definition: the (last) step whose event id its parent_id names, never itself."""
    by_event = {s.event_id: i for i, s in enumerate(steps)}
    out = []
    for i, s in enumerate(steps):
        p = by_event.get(s.parent_id) if s.parent_id else None
        out.append(None if p == i else p)
    return out


def _on_a_loop(parent: list[int | None], i: int) -> bool:
    """Whether following parent links up from step i ever repeats a step."""
    seen = set()
    while i is not None:
        if i in seen:
            return True
        seen.add(i)
        i = parent[i]
    return False


@given(runs())
def test_every_step_once_children_after_their_parent_and_bars_within_the_run(steps):
    w = layout(columns_of(steps))
    assert sorted(w.order) == list(range(len(steps)))  # every step, once
    assert all(w.order[w.row_of[p]] == p for p in range(len(steps)))
    parent = _parent_positions(steps)
    for r, p in enumerate(w.order):
        row = w.row(r)
        assert row.seq == steps[p].seq and row.kind == steps[p].type
        assert row.failed == (steps[p].type == "error" or steps[p].status == "error")
        if row.parent is None:
            assert row.depth == 0
        else:
            assert row.parent < r and row.depth == w.depth[row.parent] + 1
            assert w.order[row.parent] == parent[p]  # a link drawn is the step's own
            assert w.holds[row.parent]
        if not _on_a_loop(parent, p):  # away from loops, every link is drawn
            assert row.parent == (None if parent[p] is None else w.row_of[parent[p]])
        if row.start_ms is not None:
            assert 0 <= row.start_ms <= w.total_ms
            assert row.start_ms + (row.duration_ms or 0) <= w.total_ms + 1e-6
        assert row.duration_ms == steps[p].duration_ms
    # siblings in run order, each parent's rows right after it (depth first)
    for r in range(len(w)):
        below = [c for c in range(r + 1, len(w)) if w.parent[c] == r]
        assert [w.order[c] for c in below] == sorted(w.order[c] for c in below)
        end = r + 1
        while end < len(w) and w.depth[end] > w.depth[r]:
            end += 1
        assert all(w.parent[c] != r for c in range(end, len(w)))
    if any(s.timestamp for s in steps):
        assert min(x for x in w.start_ms if x is not None) == 0


@given(runs(), hs.integers(1, 6))
def test_the_slowest_are_the_longest_rows_that_hold_none(steps, n):
    w = layout(columns_of(steps))
    slow = w.slowest(n)
    leaves = [r for r in range(len(w)) if not w.holds[r] and w.duration_ms[r]]
    assert len(slow) == min(n, len(leaves)) and set(slow) <= set(leaves)
    lengths = [w.duration_ms[r] for r in slow]
    assert lengths == sorted(lengths, reverse=True)
    if slow:
        assert all(w.duration_ms[r] <= lengths[-1] for r in leaves if r not in slow)
        assert all(0 < (w.share(r) or 0) <= 1 for r in slow) or w.total_ms == 0


def test_a_nested_run_reads_back_as_its_tree(store):
    steps = [
        StepEvent(session_id="nest", seq=1, event_id="a", type="span", content="orchestrator\nmore",
                  timestamp=T0, duration_ms=9000),
        StepEvent(session_id="nest", seq=2, event_id="b", parent_id="a", type="span", content="researcher",
                  timestamp=T0 + timedelta(seconds=1), duration_ms=5000),
        StepEvent(session_id="nest", seq=3, event_id="c", parent_id="b", type="tool_call", tool_name="web_search",
                  content="prices", timestamp=T0 + timedelta(seconds=2), duration_ms=4000),
        StepEvent(session_id="nest", seq=4, event_id="d", parent_id="a", type="error", status="error",
                  error_class="Timeout", timestamp=T0 + timedelta(seconds=7)),
        StepEvent(session_id="nest", seq=5, event_id="e", parent_id="b", type="think", content="done",
                  timestamp=T0 + timedelta(seconds=6), duration_ms=500),
    ]  # fmt: skip
    ingest(store, steps)
    w = layout(open_timeline(store, "nest").columns)
    rows = w.rows(0, len(w))
    assert [(r.seq, r.depth, r.parent) for r in rows] == [(1, 0, None), (2, 1, 0), (3, 2, 1), (5, 2, 1), (4, 1, 0)]
    assert [r.label for r in rows] == ["orchestrator", "researcher", "web_search: prices", "done", "Timeout"]
    assert [r.start_ms for r in rows] == [0, 1000, 2000, 6000, 7000]
    assert rows[-1].duration_ms is None and rows[-1].failed
    assert w.total_ms == 9000
    assert [w.order[r] + 1 for r in w.slowest(5)] == [3, 5]  # the spans hold others: not "slow" themselves
    assert w.share(w.row_of[2]) == 4000 / 9000


def test_a_run_with_no_clock_and_a_deep_chain():
    deep = 100_000
    columns = {
        "seq": list(range(1, deep + 1)),
        "event_id": [f"e{i}" for i in range(deep)],
        "parent_id": [None] + [f"e{i}" for i in range(deep - 1)],
        "type": ["think"] * deep,
        "status": ["ok"] * deep,
        "timestamp": [None] * deep,
        "duration_ms": [None] * deep,
        "content": ["x"] * deep,
        "tool_name": [None] * deep,
        "error_class": [None] * deep,
        "agent_id": [None] * deep,
    }
    w = layout(columns)
    assert w.order == list(range(deep)) and w.depth[-1] == deep - 1 and w.total_ms == 0
    assert w.row(deep - 1).start_ms is None and w.share(0) is None and w.slowest(3) == []

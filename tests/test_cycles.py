from dataclasses import dataclass
from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from replay_core.understand.cycles import NO_CYCLE, cycle_of_steps, group_cycles


@dataclass
class S:
    seq: int
    type: str


def steps_of(*types):
    return [S(i + 1, t) for i, t in enumerate(types)]


def test_one_full_loop_is_one_cycle():
    cycles = group_cycles(steps_of("think", "tool_call", "tool_result", "observation", "decision"))
    assert len(cycles) == 1
    assert (cycles[0].first_seq, cycles[0].last_seq) == (1, 5)


def test_parallel_tool_calls_stay_in_one_cycle():
    types = ("think", "tool_call", "tool_call", "tool_result", "tool_result", "think", "decision")
    assert cycle_of_steps(types) == [0, 0, 0, 0, 0, 1, 1]


def test_action_without_fresh_think_opens_a_cycle():
    assert cycle_of_steps(("think", "tool_call", "tool_result", "tool_call", "tool_result")) == [0, 0, 0, 1, 1]


def test_error_joins_current_cycle_and_input_span_join_none():
    types = ("input", "span", "think", "tool_call", "error", "think", "tool_call", "tool_result")
    assert cycle_of_steps(types) == [None, None, 0, 0, 0, 1, 1, 1]


def test_error_first_opens_a_cycle():
    assert cycle_of_steps(("error", "think", "tool_call")) == [0, 0, 0]
    assert cycle_of_steps(()) == []


TYPES = st.sampled_from(["think", "tool_call", "tool_result", "observation", "decision", "error", "input", "span"])


@given(st.lists(TYPES, max_size=200))
def test_cycles_partition_members_contiguously_in_order(types):
    steps = steps_of(*types)
    cycles = group_cycles(steps)
    members = [i for i, t in enumerate(types) if t not in NO_CYCLE]
    covered = [p for c in cycles for p in c.positions]
    # every cycle-member step is in exactly one cycle, in order
    assert covered == members
    for index, cycle in enumerate(cycles):
        assert cycle.index == index
        assert cycle.positions, "no empty cycles"
        # contiguous among member steps
        start = members.index(cycle.positions[0])
        assert list(cycle.positions) == members[start : start + len(cycle.positions)]
        assert cycle.first_seq <= cycle.last_seq
    for a, b in pairwise(cycles):
        assert a.last_seq < b.first_seq


@given(st.lists(TYPES, max_size=100))
def test_phase_rule(types):
    """Within a cycle, a new cycle begins exactly when a phase drops below the highest reached."""
    from replay_core.understand.cycles import PHASES

    index = cycle_of_steps(types)
    highest, current = -1, None
    for kind, c in zip(types, index, strict=True):
        if kind in NO_CYCLE:
            assert c is None
            continue
        phase = PHASES.get(kind)
        if current is not None and phase is not None and phase < highest:
            assert c == current + 1
        elif current is not None:
            assert c == current
        if c != current:
            highest = -1
        current = c
        if phase is not None:
            highest = max(highest, phase)

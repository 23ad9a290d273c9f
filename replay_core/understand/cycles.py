"""Decision cycles: think → act → observe → decide loops.

Walking steps in order, a step opens a new cycle when its phase is lower than the
highest phase the current cycle has reached. Parallel tool calls therefore stay in
one cycle, and an action taken without a fresh think opens a new one. `error` joins
the current cycle; `input` and `span` belong to none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

PHASES = {"think": 0, "tool_call": 1, "tool_result": 2, "observation": 3, "decision": 4}
NO_CYCLE = frozenset({"input", "span"})


@dataclass(frozen=True)
class Cycle:
    index: int  # 0-based
    first_seq: int
    last_seq: int
    positions: tuple[int, ...]  # indexes into the step list
    types: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"index": self.index, "first_seq": self.first_seq, "last_seq": self.last_seq, "step_types": list(self.types)}


def cycle_of_steps(types: Sequence[str]) -> list[int | None]:
    """The cycle index of each step (None for steps outside any cycle). O(n)."""
    out: list[int | None] = []
    current = -1
    highest = -1
    for kind in types:
        if kind in NO_CYCLE:
            out.append(None)
            continue
        phase = PHASES.get(kind)
        if current < 0 or (phase is not None and phase < highest):
            current += 1
            highest = -1
        if phase is not None and phase > highest:
            highest = phase
        out.append(current)
    return out


def group_cycles(steps: Sequence) -> list[Cycle]:
    """Cycles of a session's steps (objects with `type` and `seq`), in order."""
    types = [s.type for s in steps]
    return cycles_of([s.seq for s in steps], types, cycle_of_steps(types))


def cycles_of(seqs: Sequence[int], types: Sequence[str], membership: Sequence[int | None]) -> list[Cycle]:
    """group_cycles from the steps' columns and their cycle_of_steps (an opened run has them without building step objects)."""
    grouped: list[list[int]] = []
    for pos, index in enumerate(membership):
        if index is None:
            continue
        if index == len(grouped):
            grouped.append([pos])
        else:
            grouped[index].append(pos)
    return [
        Cycle(
            index=i,
            first_seq=seqs[members[0]],
            last_seq=seqs[members[-1]],
            positions=tuple(members),
            types=tuple([types[p] for p in members]),
        )
        for i, members in enumerate(grouped)
    ]

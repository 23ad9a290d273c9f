"""A run as a span waterfall: every step a row, nested under its parent, with where it sits on the run's clock.

Pure and linear in the run's steps (one pass to link parents, one depth-first walk, one pass for the clock), from
a timeline's step columns: a 100,000-step run is laid out without building a step object, and a page draws only
the rows in view (`Waterfall.rows`). A parent link that names no step, or the step itself, makes a root, as in the
Structure tab (structure.py); a loop of parent links is cut at its earliest step, which then starts a tree.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

LABEL_CHARS = 90  # of a step's text on its row
_MS = timedelta(milliseconds=1)


@dataclass(frozen=True)
class Row:
    """One step as the waterfall draws it; times in milliseconds from the run's first timestamp."""

    position: int  # in the run's columns
    seq: int
    depth: int
    parent: int | None  # row of the step it hangs under
    start_ms: float | None  # None: the step has no timestamp
    duration_ms: float | None  # None: no duration recorded (drawn as a tick)
    kind: str
    failed: bool
    label: str


@dataclass
class Waterfall:
    """The rows in drawing order (a parent, then its steps in run order, depth first), as columns."""

    order: list[int]  # positions, row by row
    depth: list[int]
    parent: list[int]  # row of the parent, -1 for a root
    start_ms: list[float | None]
    duration_ms: list[float | None]
    row_of: list[int]  # row of each position
    total_ms: float  # the run's span on the clock: no row ends after it
    holds: list[bool]  # whether a row has rows under it
    columns: Mapping[str, Sequence] = field(repr=False)

    def __len__(self) -> int:
        return len(self.order)

    def row(self, i: int) -> Row:
        p = self.order[i]
        c = self.columns
        kind = c["type"][p]
        return Row(
            position=p,
            seq=c["seq"][p],
            depth=self.depth[i],
            parent=None if self.parent[i] < 0 else self.parent[i],
            start_ms=self.start_ms[i],
            duration_ms=self.duration_ms[i],
            kind=kind,
            failed=kind == "error" or c["status"][p] == "error",
            label=step_text(c, p),
        )

    def rows(self, lo: int, hi: int) -> list[Row]:
        return [self.row(i) for i in range(max(lo, 0), min(hi, len(self.order)))]

    def share(self, i: int) -> float | None:
        """The row's duration as a share of the run's span (0–1); None without a duration or a clock."""
        d = self.duration_ms[i]
        return None if d is None or self.total_ms <= 0 else min(d / self.total_ms, 1.0)

    def slowest(self, n: int) -> list[int]:
        """The `n` longest rows that hold no others, longest first: a span that wraps the run is slow by
        construction, the steps inside it are what took the time."""
        timed = ((d, -i) for i, d in enumerate(self.duration_ms) if d and not self.holds[i])
        return [-i for _, i in heapq.nlargest(n, timed)]


def step_text(columns: Mapping[str, Sequence], p: int) -> str:
    """A step in a few words: a span's name, a tool's name, else the first line of what it said."""
    kind, tool = columns["type"][p], columns["tool_name"][p]
    text = (columns["content"][p] or columns["error_class"][p] or "").strip().split("\n", 1)[0]
    if kind == "span":
        text = text or columns["agent_id"][p] or "span"
    elif tool:
        text = f"{tool}: {text}" if text and kind != "tool_result" else tool
    text = text or kind
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def layout(columns: Mapping[str, Sequence]) -> Waterfall:
    """The waterfall of a run's columns (Timeline.columns), in time linear in its steps."""
    n = len(columns["seq"])
    wanted = set(columns["parent_id"]) - {None, ""}
    named = {e: i for i, e in enumerate(columns["event_id"]) if e in wanted} if wanted else {}
    parent = [named.get(p, -1) for p in columns["parent_id"]] if named else [-1] * n
    # children as linked lists of ints (newest first), not a list per step: 100,000 small lists cost
    # the garbage collector more than the walk
    head, after = [-1] * n, [-1] * n
    for i, p in enumerate(parent):
        if p == i:
            parent[i] = -1
        elif p >= 0:
            after[i], head[p] = head[p], i
    order: list[int] = []
    depth_of = [0] * n
    up = [-1] * n  # the parent as drawn: a link cut in a loop is no parent
    seen = [False] * n

    def walk(root: int) -> None:
        seen[root] = True
        stack = [root]
        while stack:
            p = stack.pop()
            order.append(p)
            c = head[p]
            while c >= 0:  # pushed newest first: popped in run order
                if not seen[c]:
                    seen[c] = True
                    up[c], depth_of[c] = p, depth_of[p] + 1
                    stack.append(c)
                c = after[c]

    for i in range(n):
        if parent[i] >= 0:
            continue
        if head[i] < 0:  # a root holding nothing: most steps of a flat run
            seen[i] = True
            order.append(i)
        else:
            walk(i)
    for i in range(n):  # left: steps on a loop of parent links, and those under one
        if not seen[i]:
            walk(i)
    row_of = [0] * n
    for r, p in enumerate(order):
        row_of[p] = r
    starts, durations, total = _clock(columns, order)
    return Waterfall(
        order=order,
        depth=[depth_of[p] for p in order],
        parent=[row_of[up[p]] if up[p] >= 0 else -1 for p in order],
        start_ms=starts,
        duration_ms=durations,
        row_of=row_of,
        total_ms=total,
        holds=[head[p] >= 0 for p in order],
        columns=columns,
    )


def _clock(columns: Mapping[str, Sequence], order: list[int]) -> tuple[list[float | None], list[float | None], float]:
    """Each row's start after the run's first timestamp and its duration, and the span of the run: from the first
    start to the last end. A duration with no timestamp has nowhere to be drawn: it is kept, the bar is not."""
    stamps, lengths = columns["timestamp"], columns["duration_ms"]
    first = min((t for t in stamps if t is not None), default=None)
    starts = [None if (t := stamps[p]) is None else (t - first) / _MS for p in order]
    durations = [None if (d := lengths[p]) is None else float(d) for p in order]
    total = max((s + (d or 0.0) for s, d in zip(starts, durations, strict=True) if s is not None), default=0.0)
    return starts, durations, total

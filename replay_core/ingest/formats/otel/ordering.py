"""Where spans and their steps are put in order: span trees, depths, and the steps' order.

Steps are ordered by time, not by the order spans arrive in (exporters send a span when it
ends, children before their parents): a span's step at its start, a tool's result and a
model's emitted calls at its end. Ties in time go by start, the longer span first (a parent
before the children it encloses), then by span id. In a file, a span whose parent was never
exported hangs under its trace's root, so every step has a parent; over OTLP/HTTP it keeps its
parent's id, as that parent may still come in a later batch.

Each step's `place` is that order written as text: it depends on its own span alone, never on
which other spans came in the same request, so steps stored from several batches sort exactly
as those of one request do, and a late batch's steps are put among the stored ones by it
(storage.ingest_state).
"""

from __future__ import annotations

from .spans import Part, Span

LAST = 2**63  # the time of a span or part that has none: after every real one


class SpanTrees:
    """Parent links (`Span.up`), roots and depths of a set of spans; orphans attached to their trace's root
    unless `adopt` is off (spans of one batch: their parent may be in another)."""

    def __init__(self, spans: list[Span], adopt: bool = True, by_id: dict[tuple[str, str], Span] | None = None):
        """`by_id`: the spans by (trace id, span id) when the caller has that map already."""
        self.by_id = by_id if by_id is not None else {(s.trace_id, s.span_id): s for s in spans}
        self.roots: dict[str, Span] = {}
        for s in spans:  # per trace the root that starts first (the first met on a tie)
            if s.parent_id is None:
                found = self.roots.get(s.trace_id)
                if found is None or start_key(s) < start_key(found):
                    self.roots[s.trace_id] = s
        by_id, roots = self.by_id, self.roots
        for s in spans:
            found = None
            if s.parent_id:
                found = by_id.get((s.trace_id, s.parent_id))
                if found is None and adopt:
                    root = roots.get(s.trace_id)
                    found = root if root is not s else None
            s.up = found
            s.depth = -1

    @staticmethod
    def depth(span: Span) -> int:
        """How many ancestors the span has: one walk up to the first span of known depth, then every
        span on the way is memoised, so depths of all n spans cost O(n) together (a 50,000-deep
        chain included: no recursion). A parent cycle (bad input) counts up to where it closes."""
        if span.depth >= 0:
            return span.depth
        path: list[Span] = []
        node: Span | None = span
        while node is not None and node.depth == -1:
            node.depth = -2  # on this walk: met again, the cycle closes here
            path.append(node)
            node = node.up
        base = node.depth + 1 if node is not None and node.depth >= 0 else 0
        for n, item in enumerate(reversed(path)):
            item.depth = base + n
        return span.depth

    def order(self, spans: list[Span]) -> None:
        """Sort one session's spans by start, parents before children on a tie (the sort is stable: other ties
        keep their order): an agent's name then reaches its descendants in one pass."""
        depth = self.depth
        spans.sort(key=lambda s: (s.start_ns if s.start_ns is not None else LAST, depth(s)))


def start_key(span: Span) -> int:
    """A span's start, for comparing: one without a start comes last."""
    return span.start_ns if span.start_ns is not None else LAST


def _clamped(ns: int | None) -> int:
    return LAST if ns is None else min(max(ns, 0), LAST)


def place(part: Part) -> str:
    """Where a part goes among its session's steps, as text that sorts (by code point) in step order: by time;
    at one instant what ends (a result, an emitted call) before what starts, unless its span took no time;
    then by its span's start, the longer span first, then its span id; a span's own step before its others.

    Fixed-width numbers, and a space (below every character of an id or a role) after the variable parts,
    so comparing the texts compares the fields one after another."""
    span = part.span
    start, end, t = span.start_ns, span.end_ns, part.t_ns
    ends = 0 if part.ends and (end or 0) > (start or 0) else 1
    start = start if start is not None and 0 <= start <= LAST else _clamped(start)  # inline: 3 calls a step cost a tenth
    end = end if end is not None and 0 <= end <= LAST else _clamped(end)
    t = t if t is not None and 0 <= t <= LAST else _clamped(t)
    own = 0 if part.role == "step" else 1
    # %-formatting: the same text as the f-string with `:019d` specs, in about two thirds of its time
    return "%019d%d%019d%019d%s %d%s" % (t, ends, start, LAST - end, span.span_id, own, part.role)  # noqa: UP031

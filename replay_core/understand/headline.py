"""The headline numbers (`agent-replay stats`) in plain Python, without polars.

`stats` is a command people type and wait for: importing polars, and framing 20,000 runs to
sum a few columns, was most of its time. When the filter and `by` allow, it sums the per-day
rollups' cells (Store.daily_rows: a few thousand rows, and one duration per run for the
percentiles); otherwise one narrow query gives a row per run (Store.headline_rows), made into
cells of one run. On a SQLite file the CLI hands it storage.plain's Reader instead of a Store:
the same two reads on sqlite3, without SQLAlchemy's import. The numbers are `analytics.headline`'s,
with the same definitions (docs/analytics.md), and tests/test_analytics_headline.py holds the two
equal on both databases.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from ..storage.plain import nano

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..storage.store import SessionFilter


class HeadlineReads(Protocol):
    """The two reads the headline sums: a Store's, or storage.plain.Reader's (`stats` on a SQLite
    file imports no SQLAlchemy), which answers flt=None only."""

    def daily_rows(self, flt: Any = None, *, detail: bool = ..., parts: Sequence[str] = ...) -> dict | None: ...

    def headline_rows(self, flt: Any = None, key: str | None = None) -> list[tuple]: ...


BUCKET = {"day": 10, "hour": 13}  # characters of 'YYYY-MM-DD HH' a time bucket keeps
COLUMN = {
    "model": "model",
    "agent": "agent_id",
    "workflow": "workflow",
    "environment": "environment",
    "agent_version": "agent_version",
    "status": "status",
    "tag": "tags",
    "user": "user_id",
    "thread": "thread_id",
}
DIMENSIONS = ("day", "hour", *COLUMN)  # analytics.DIMENSIONS
DAILY = ("day", "model", "agent", "status")  # analytics.DAILY_DIMENSIONS
# what a cell carries, in this order, after its status: the sums the headline needs
SUMS = (
    "runs",
    "tokens_in",
    "tokens_out",
    "cost_nano",
    "runs_with_retry",
    "tool_calls",
    "tool_failures",
    "fallback_blocks",
    "fallback_agent",
)


def _quantile(values: list[float], q: float) -> float | None:
    """Linear interpolation between the closest ranks (polars' "linear")."""
    if not values:
        return None
    values = sorted(values)
    pos = q * (len(values) - 1)
    low = math.floor(pos)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (pos - low)


def _ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator > 0 else None


def _keys(by: str | None, value, started: str | None) -> list:
    if by is None:
        return [None]
    if by in BUCKET:
        if started is None:
            return [None]
        head = started[: BUCKET[by]] + ("" if by == "hour" else " 00")
        return [datetime.strptime(head, "%Y-%m-%d %H").replace(tzinfo=UTC)]
    if by == "tag":
        if isinstance(value, str):
            value = orjson.loads(value)
        return value or [None]
    return [value]


def _daily_cells(store: HeadlineReads, flt: SessionFilter | None, by: str | None):
    """(keys, status, sums, run durations) per cell of the per-day rollups; None when they cannot answer."""
    if by not in (None, *DAILY):
        return None
    got = store.daily_rows(flt, detail=False, parts=("cells", "times"))
    if got is None:
        return None
    (columns, rows), (_, times) = got["cells"], got["times"]
    at = {name: columns.index(name) for name in ("cell", "status", "runs_cost_unsummed", *SUMS)}
    if any(row[at["runs_cost_unsummed"]] for row in rows):  # a cost too large for the cells' exact sums
        return None
    pick = columns.index({"agent": "agent_id"}.get(by, by)) if by else None
    durations: dict[str, list[float]] = {}
    for cell, duration_us, _ in times:
        if duration_us is not None:
            durations.setdefault(cell, []).append(duration_us / 1000)
    out = []
    for row in rows:
        key = row[pick] if pick is not None else None
        if by == "day" and key is not None:
            key = datetime.strptime(key, "%Y-%m-%d").replace(tzinfo=UTC)
        out.append(([key], row[at["status"]], [row[at[n]] for n in SUMS], durations.get(row[at["cell"]], [])))
    return out


def _run_cells(store: HeadlineReads, flt: SessionFilter | None, by: str | None):
    """The same per run (Store.headline_rows), each run a cell of its own."""
    out = []
    for row in store.headline_rows(flt, COLUMN.get(by) if by is not None else None):
        value, status, started, ended = row[:4]
        duration = []
        if started and ended and status != "running":
            duration = [(datetime.fromisoformat(ended) - datetime.fromisoformat(started)) // timedelta(microseconds=1) / 1000]
        t_in, t_out, cost, retried, calls, failures, blocks, agent = row[4:]
        sums = [
            1,
            int(t_in or 0),
            int(t_out or 0),
            nano(cost),
            int((retried or 0) > 0),
            calls,
            failures,
            blocks,
            agent,
            cost if cost is not None and nano(cost) is None else 0.0,
        ]
        out.append((_keys(by, value, started), status, sums, duration))
    return out


def headline(store: HeadlineReads, flt: SessionFilter | None = None, by: str | None = None) -> list[dict]:
    """Rows of `analytics.headline(load(store, flt), by)`, as dicts in the same order."""
    cells = _daily_cells(store, flt, by)
    if cells is None:
        cells = _run_cells(store, flt, by)
    groups: dict = {} if by else {None: []}
    for keys, status, sums, duration in cells:
        for key in keys:
            groups.setdefault(key, []).append((status, sums, duration))
    out = []
    for key in sorted(groups, key=lambda k: (k is None, k if k is not None else 0)):
        members = groups[key]
        total = [sum(s[i] or 0 for _, s, _ in members) for i in range(len(SUMS))]
        runs, t_in, t_out, cost, retried, calls, failures, blocks, agent = total
        big = sum(s[len(SUMS)] for _, s, _ in members if len(s) > len(SUMS))  # per run only: costs too large for nano-dollars
        known = sum(s[0] for status, s, _ in members if status not in ("running", "unknown"))
        durations = [d for _, _, ds in members for d in ds]
        row = {by: key} if by is not None else {}
        row.update(
            runs=runs,
            success_rate=_ratio(sum(s[0] for status, s, _ in members if status == "succeeded"), known),
            p50_ms=_quantile(durations, 0.5),
            p95_ms=_quantile(durations, 0.95),
            tokens_in=t_in,
            tokens_out=t_out,
            cost_usd=cost / 1e9 + big,
            retry_rate=_ratio(retried, runs),
            tool_failure_rate=_ratio(failures, calls),
            fallback_rate=_ratio(agent, blocks),
        )
        out.append(row)
    return out

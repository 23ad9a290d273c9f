"""The headline numbers (`agent-replay stats`) in plain Python over the rollups, without polars.

`stats` is a command people type and wait for: importing polars, and framing 20,000 runs to
sum a few columns, was most of its time. One narrow query (Store.headline_rows) gives a row per
run; the numbers are `analytics.headline`'s, with the same definitions (docs/analytics.md), and
tests/test_analytics_headline.py holds the two equal on both databases.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

import orjson

from ..storage.store import SessionFilter, Store

BUCKET = {"day": 10, "hour": 13}  # characters of 'YYYY-MM-DD HH' a time bucket keeps
COLUMN = {"model": "model", "agent": "agent_id", "workflow": "workflow", "environment": "environment",
          "agent_version": "agent_version", "status": "status", "tag": "tags"}
DIMENSIONS = ("day", "hour", *COLUMN)  # analytics.DIMENSIONS


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


def headline(store: Store, flt: SessionFilter | None = None, by: str | None = None) -> list[dict]:
    """Rows of `analytics.headline(load(store, flt), by)`, as dicts in the same order."""
    groups: dict = {} if by else {None: []}
    for row in store.headline_rows(flt, COLUMN.get(by)):
        value, status, started, ended = row[:4]
        duration = None
        if started and ended and status != "running":
            duration = (datetime.fromisoformat(ended) - datetime.fromisoformat(started)).total_seconds() * 1000
        run = (status, duration, *row[4:])
        for key in _keys(by, value, started):
            groups.setdefault(key, []).append(run)
    out = []
    for key in sorted(groups, key=lambda k: (k is None, k if k is not None else 0)):
        runs = groups[key]
        durations = [r[1] for r in runs if r[1] is not None]
        known = sum(1 for r in runs if r[0] not in ("running", "unknown"))
        row = {by: key} if by is not None else {}
        row.update(
            runs=len(runs),
            success_rate=_ratio(sum(1 for r in runs if r[0] == "succeeded"), known),
            p50_ms=_quantile(durations, 0.5),
            p95_ms=_quantile(durations, 0.95),
            tokens_in=sum(int(r[2] or 0) for r in runs),
            tokens_out=sum(int(r[3] or 0) for r in runs),
            cost_usd=math.fsum(r[4] for r in runs if r[4] is not None),
            retry_rate=_ratio(sum(1 for r in runs if (r[5] or 0) > 0), len(runs)),
            tool_failure_rate=_ratio(sum(r[7] or 0 for r in runs), sum(r[6] or 0 for r in runs)),
            fallback_rate=_ratio(sum(r[9] or 0 for r in runs), sum(r[8] or 0 for r in runs)),
        )
        out.append(row)
    return out

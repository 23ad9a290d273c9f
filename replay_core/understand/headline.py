"""The headline numbers (`agent-replay stats`) in plain Python over the rollups, without polars.

`stats` is a command people type and wait for: importing polars, and framing 20,000 runs to
sum a few columns, was most of its time. The numbers are `analytics.headline`'s, with the
same definitions (docs/analytics.md); tests/test_analytics_headline.py holds the two equal.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

import orjson

from ..storage.store import SessionFilter, Store

BUCKET = {"day": 10, "hour": 13}  # characters of 'YYYY-MM-DD HH' a bucket keeps
COLUMN = {"model": "model", "agent": "agent_id", "workflow": "workflow", "environment": "environment",
          "agent_version": "agent_version", "status": "status"}
DIMENSIONS = ("day", "hour", *COLUMN, "tag")  # analytics.DIMENSIONS, in the order it lists them


def _time(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text).replace(tzinfo=UTC)


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


def _runs(store: Store, flt: SessionFilter | None) -> list[dict]:
    """One dict per run: its dimensions and what the headline sums (rollup, else the source's totals)."""
    columns, rows = store.run_rows(flt)
    runs = {row[0]: dict(zip(columns, row, strict=True)) for row in rows}
    columns, rows = store.rollup_rows(flt, durations=False)
    for row in rows:
        runs[row[0]].update(zip(columns, row, strict=True))
    out = []
    for run in runs.values():
        start, end = _time(run["started_at"]), _time(run["ended_at"])
        meta_in, meta_out = run["meta_tokens_in"], run["meta_tokens_out"]
        run["tokens_in"] = run.get("tokens_in") if run.get("tokens_in") is not None else int(meta_in) if meta_in is not None else 0
        run["tokens_out"] = run.get("tokens_out") if run.get("tokens_out") is not None else int(meta_out) if meta_out is not None else 0
        run["cost_usd"] = run.get("cost_usd") if run.get("cost_usd") is not None else run["meta_cost_usd"]
        run["duration_ms"] = (end - start).total_seconds() * 1000 if start and end and run["status"] != "running" else None
        run["start"] = start
        out.append(run)
    return out


def _keys(run: dict, by: str | None) -> list:
    if by is None:
        return [None]
    if by in BUCKET:
        start = run["start"]
        if start is None:
            return [None]
        return [start.replace(minute=0, second=0, microsecond=0, **({"hour": 0} if by == "day" else {}))]
    if by == "tag":
        return (orjson.loads(run["tags"]) if run["tags"] else None) or [None]
    return [run[COLUMN[by]]]


def headline(store: Store, flt: SessionFilter | None = None, by: str | None = None) -> list[dict]:
    """Rows of `analytics.headline(load(store, flt), by)`, as dicts in the same order."""
    groups: dict = {}
    for run in _runs(store, flt):
        for key in _keys(run, by):
            groups.setdefault(key, []).append(run)
    if by is None:
        groups.setdefault(None, [])
    out = []
    for key in sorted(groups, key=lambda k: (k is None, k if k is not None else 0)):
        runs = groups[key]
        durations = [r["duration_ms"] for r in runs if r["duration_ms"] is not None]
        known = sum(1 for r in runs if r["status"] not in ("running", "unknown"))
        row = {by: key} if by is not None else {}
        row.update(
            runs=len(runs),
            success_rate=_ratio(sum(1 for r in runs if r["status"] == "succeeded"), known),
            p50_ms=_quantile(durations, 0.5),
            p95_ms=_quantile(durations, 0.95),
            tokens_in=sum(r["tokens_in"] for r in runs),
            tokens_out=sum(r["tokens_out"] for r in runs),
            cost_usd=math.fsum(r["cost_usd"] for r in runs if r["cost_usd"] is not None),
            retry_rate=_ratio(sum(1 for r in runs if (r.get("retried_steps") or 0) > 0), len(runs)),
            tool_failure_rate=_ratio(sum(r.get("tool_failures") or 0 for r in runs), sum(r.get("tool_calls") or 0 for r in runs)),
            fallback_rate=_ratio(sum(r.get("fallback_agent") or 0 for r in runs), sum(r.get("fallback_blocks") or 0 for r in runs)),
        )
        out.append(row)
    return out

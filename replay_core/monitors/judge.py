"""A rule judged on the stored runs: the metric with its 95 % interval over the window (and over the
window before, for a change), and the verdict — firing only on evidence.

Intervals: Wilson for rates; for a median or a 95th percentile the distribution-free interval of
order statistics (the ranks a binomial puts around n·q); for a mean, mean ± 1.96 standard errors.
Counts are judged as they are. Everything is read from the runs' rows and rollups (no step is read).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from ..storage.filters import SessionFilter
from ..storage.store import Store
from ..whatif.results import wilson
from .rules import Rule

Z95 = 1.96
ENDED = ("succeeded", "failed", "incomplete")
FROM_ROLLUPS = ("tool_failure_rate", "cost_per_run", "tokens_per_run")


@dataclass
class Figure:
    """A metric over one window: its value, interval, and the runs it counts."""

    value: float | None
    low: float | None
    high: float | None
    runs: int
    since: str | None
    until: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Judgement:
    verdict: str  # "firing", "ok" or "no evidence"
    sentence: str
    current: Figure
    baseline: Figure | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "sentence": self.sentence,
            "current": self.current.to_dict(),
            "baseline": self.baseline.to_dict() if self.baseline else None,
        }


def window_filter(rule: Rule, since: datetime, until: datetime) -> SessionFilter:
    """The runs the rule counts: its filters, started in [since, until)."""
    f = rule.filters
    return SessionFilter(
        since=since,
        until=until,
        workflow=f.get("workflow"),
        agent_id=f.get("agent_id"),
        model=f.get("model"),
        agent_version=f.get("agent_version"),
        environment=f.get("environment"),
        source=f.get("source"),
        tag=f.get("tag"),
        user_id=f.get("user_id"),
    )


@dataclass
class Sample:
    """The runs a filter picks, read once (their rows and rollups), for any number of metrics."""

    runs: list[dict]
    rolled: list[dict]
    since: str | None = None
    until: str | None = None

    def split(self, column: str) -> dict[str, Sample]:
        """One sample per value of a run column (e.g. workflow); runs without a value are left out."""
        keys = {r["session_id"]: r[column] for r in self.runs if r[column]}
        parts: dict[str, Sample] = {}
        for r in self.runs:
            if r[column]:
                parts.setdefault(r[column], Sample([], [], self.since, self.until)).runs.append(r)
        for r in self.rolled:
            if r["session_id"] in keys:
                parts[keys[r["session_id"]]].rolled.append(r)
        return parts


def sample(store: Store, flt: SessionFilter, *, rollups: bool = True) -> Sample:
    """The runs `flt` picks, with their rollups unless no metric asked needs them (no step is read)."""
    columns, rows = store.run_rows(flt)
    rcols, rrows = store.rollup_rows(flt, durations=False) if rollups else ([], [])
    return Sample(
        [dict(zip(columns, r, strict=True)) for r in rows],
        [dict(zip(rcols, r, strict=True)) for r in rrows],
        flt.since.isoformat() if flt.since else None,
        flt.until.isoformat() if flt.until else None,
    )


def figure(s: Sample, metric: str) -> Figure:
    """A metric of the sample with its 95 % interval (every metric but error_class_runs, which asks the store)."""
    stamp = {"since": s.since, "until": s.until}
    runs, rolled = s.runs, s.rolled
    if metric in ("success_rate", "failure_rate"):
        ended = [r for r in runs if r["status"] in ENDED]
        wanted = "succeeded" if metric == "success_rate" else "failed"
        return _rate(sum(1 for r in ended if r["status"] == wanted), len(ended), len(ended), stamp)
    if metric == "incomplete_runs":
        n = sum(1 for r in runs if r["status"] == "incomplete")
        return Figure(float(n), float(n), float(n), len(runs), **stamp)
    if metric == "tool_failure_rate":
        calling = [r for r in rolled if r["tool_calls"]]
        return _rate(sum(r["tool_failures"] for r in calling), sum(r["tool_calls"] for r in calling), len(calling), stamp)
    if metric in ("p50_duration_s", "p95_duration_s"):
        values = [d for d in (_duration(r) for r in runs if r["status"] in ENDED) if d is not None]
        return _quantile(values, 0.5 if metric == "p50_duration_s" else 0.95, stamp)
    if metric == "cost_per_run":
        values = [r["cost_usd"] for r in rolled if r["cost_usd"] is not None and not r["cost_unknown_steps"]]
    elif metric == "tokens_per_run":
        values = [(r["tokens_in"] or 0) + (r["tokens_out"] or 0) for r in rolled]
    else:
        raise ValueError(f"{metric}: not measured from a sample")
    return _mean([float(v) for v in values], stamp)


def measure(store: Store, metric: str, flt: SessionFilter, *, error_class: str | None = None) -> Figure:
    """A metric over the runs `flt` picks (a window, a version, a workflow…)."""
    s = sample(store, flt, rollups=metric in FROM_ROLLUPS)
    if metric == "error_class_runs":
        n = store.count_sessions(replace(flt, error_class=error_class))
        return Figure(float(n), float(n), float(n), len(s.runs), s.since, s.until)
    return figure(s, metric)


def judge(store: Store, rule: Rule, now: datetime) -> Judgement:
    until = now
    since = now - timedelta(hours=rule.window_hours)
    current = measure(store, rule.metric, window_filter(rule, since, until), error_class=rule.error_class)
    before = window_filter(rule, since - (until - since), since)
    baseline = measure(store, rule.metric, before, error_class=rule.error_class) if rule.change else None
    return Judgement(*_verdict(rule, current, baseline), current, baseline)


SHARED_FILTERS = ("workflow", "agent_id", "model", "agent_version", "environment")  # run columns run_rows reads


def _shareable(rule: Rule) -> bool:
    return set(rule.filters) <= set(SHARED_FILTERS)


def judge_all(store: Store, rules: list[Rule], now: datetime) -> list[Judgement]:
    """Every rule judged as `judge` does, the runs read once: one sample over the widest window any rule
    needs, cut in memory per rule and window (a rule on a tag or a source reads its own; an error class's
    count is asked of the store)."""
    shared = [r for r in rules if _shareable(r)]
    whole = None
    if shared:
        reach = max(r.window_hours * (2 if r.change else 1) for r in shared)
        rollups = any(r.metric in FROM_ROLLUPS for r in shared)
        whole = _Timed(sample(store, SessionFilter(since=now - timedelta(hours=reach), until=now), rollups=rollups))
    out = []
    for rule in rules:
        if whole is None or not _shareable(rule):
            out.append(judge(store, rule, now))
            continue
        window, before = whole.cut(rule, now)
        current = _figure_of(store, rule, window)
        baseline = _figure_of(store, rule, before) if before is not None else None
        out.append(Judgement(*_verdict(rule, current, baseline), current, baseline))
    return out


def _figure_of(store: Store, rule: Rule, s: Sample) -> Figure:
    if rule.metric != "error_class_runs":
        return figure(s, rule.metric)
    assert s.since and s.until
    flt = window_filter(rule, datetime.fromisoformat(s.since), datetime.fromisoformat(s.until))
    n = store.count_sessions(replace(flt, error_class=rule.error_class))
    return Figure(float(n), float(n), float(n), len(s.runs), s.since, s.until)


class _Timed:
    """A sample ordered by start (parsed once, durations too), cut by window (bisect) and filters (an index
    per filter value) without another read."""

    def __init__(self, s: Sample):
        dated = sorted(((at, r) for r in s.runs if (at := _started(r)) is not None), key=lambda p: p[0])
        self.starts = [at for at, _ in dated]
        self.runs = [r for _, r in dated]
        for r in self.runs:
            r["duration_s"] = _duration(r)
        self.rolled = {r["session_id"]: r for r in s.rolled}
        self.picked: dict[tuple[str, str], set[int]] = {}

    def _matching(self, key: str, value: str) -> set[int]:
        if (key, value) not in self.picked:
            self.picked[key, value] = {i for i, r in enumerate(self.runs) if r[key] == value}
        return self.picked[key, value]

    def window(self, rule: Rule, since: datetime, until: datetime) -> Sample:
        lo, hi = bisect_left(self.starts, since), bisect_left(self.starts, until)
        chosen = list(range(lo, hi))
        for key, value in rule.filters.items():
            keep = self._matching(key, value)
            chosen = [i for i in chosen if i in keep]
        runs = [self.runs[i] for i in chosen]
        rolled = [self.rolled[r["session_id"]] for r in runs if r["session_id"] in self.rolled]
        return Sample(runs, rolled, since.isoformat(), until.isoformat())

    def cut(self, rule: Rule, now: datetime) -> tuple[Sample, Sample | None]:
        since = now - timedelta(hours=rule.window_hours)
        before = self.window(rule, since - (now - since), since) if rule.change else None
        return self.window(rule, since, now), before


def _started(run: dict) -> datetime | None:
    try:
        at = datetime.fromisoformat(run["started_at"])
    except (TypeError, ValueError):
        return None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def _verdict(rule: Rule, current: Figure, baseline: Figure | None) -> tuple[str, str]:
    fmt = formatter(rule.kind)
    if current.value is None or current.runs < rule.min_runs:
        return "no evidence", f"{current.runs} runs in the window, fewer than the {rule.min_runs} this rule needs"
    now_text = f"{fmt(current.value)} (95 % interval {fmt(current.low)}–{fmt(current.high)}, {current.runs} runs)"
    higher = rule.worse == "higher"
    if baseline is None:
        assert rule.threshold is not None
        beyond = (current.low or 0) > rule.threshold if higher else (current.high or 0) < rule.threshold
        side = "above" if higher else "below"
        if beyond:
            return "firing", f"{now_text}: {side} {fmt(rule.threshold)} with evidence"
        return "ok", f"{now_text}: not {side} {fmt(rule.threshold)} with evidence"
    if baseline.value is None or baseline.runs < rule.min_runs:
        return "no evidence", f"the window before has {baseline.runs} runs, fewer than the {rule.min_runs} this rule needs"
    before = f"{fmt(baseline.value)} ({fmt(baseline.low)}–{fmt(baseline.high)}, {baseline.runs} runs)"
    assert None not in (current.low, current.high, baseline.low, baseline.high)
    worse = current.low > baseline.high if higher else current.high < baseline.low  # type: ignore[operator]
    if worse:
        return "firing", f"{now_text}, worse than the window before: {before}; the intervals do not overlap"
    return "ok", f"{now_text} against {before} the window before: no change with evidence"


def formatter(kind: str):
    """How a metric's figures read: rates as percentages, the rest with four significant digits."""
    if kind == "rate":
        return lambda v: "?" if v is None else f"{v:.1%}"
    return lambda v: "?" if v is None else f"{v:,.4g}"


def _rate(k: int, n: int, runs: int, stamp: dict) -> Figure:
    if n == 0:
        return Figure(None, None, None, runs, **stamp)
    low, high = wilson(k, n)
    return Figure(round(k / n, 4), low, high, runs, **stamp)


def _quantile(values: list[float], q: float, stamp: dict) -> Figure:
    """The q-quantile and the distribution-free interval of the order statistics around it."""
    n = len(values)
    if n == 0:
        return Figure(None, None, None, 0, **stamp)
    ordered = sorted(values)
    half = Z95 * math.sqrt(n * q * (1 - q))
    lo_rank = max(0, math.floor(n * q - half) - 1)
    hi_rank = min(n - 1, math.ceil(n * q + half))
    value = ordered[min(n - 1, max(0, math.ceil(q * n) - 1))]
    return Figure(round(value, 3), round(ordered[lo_rank], 3), round(ordered[hi_rank], 3), n, **stamp)


def _mean(values: list[float], stamp: dict) -> Figure:
    n = len(values)
    if n == 0:
        return Figure(None, None, None, 0, **stamp)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    half = Z95 * sd / math.sqrt(n)
    return Figure(round(mean, 6), round(mean - half, 6), round(mean + half, 6), n, **stamp)


def _duration(run: dict) -> float | None:
    if "duration_s" in run:  # parsed once for many rules (judge_all)
        return run["duration_s"]
    try:
        start, end = datetime.fromisoformat(run["started_at"]), datetime.fromisoformat(run["ended_at"])
    except (TypeError, ValueError):
        return None
    return (end - start).total_seconds()


def failing_filter(rule: Rule, judgement: Judgement) -> SessionFilter:
    """The runs behind a firing rule, as a filter the runs page and `explain` read."""
    assert judgement.current.since and judgement.current.until, "a judged window has both ends"
    since = datetime.fromisoformat(judgement.current.since)
    until = datetime.fromisoformat(judgement.current.until)
    base = window_filter(rule, since, until)
    if rule.metric == "error_class_runs":
        return replace(base, error_class=rule.error_class)
    if rule.metric in ("failure_rate", "success_rate"):
        return replace(base, status="failed")
    if rule.metric == "incomplete_runs":
        return replace(base, status="incomplete")
    if rule.metric == "tool_failure_rate":
        return replace(base, has="error")
    return base

"""A rule judged on the stored runs: the metric with its 95 % interval over the window (and over the
window before, for a change), and the verdict — firing only on evidence.

Intervals: Wilson for rates; for a median or a 95th percentile the distribution-free interval of
order statistics (the ranks a binomial puts around n·q); for a mean, mean ± 1.96 standard errors.
Counts are judged as they are. Everything is read from the runs' rows and rollups (no step is read).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from ..storage.filters import SessionFilter
from ..storage.store import Store
from .rules import Rule

Z95 = 1.96
ENDED = ("succeeded", "failed", "incomplete")
FROM_ROLLUPS = ("tool_failure_rate", "cost_per_run", "tokens_per_run")
QUANTILES = {"p50_duration_s": 0.5, "p95_duration_s": 0.95}
ROLLUP_FIELDS = ("tool_calls", "tool_failures", "cost_usd", "cost_unknown_steps", "tokens_in", "tokens_out")  # Tally.add_rollup's


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
class Tally:
    """What every metric reads of some runs, gathered as they are read: runs by status, runs of each error
    class asked for, the tool calls, costs and tokens of those with steps, and the durations of those that
    ended. Tallies add up: the runs of a window and a filter are the sum of their parts'."""

    statuses: Counter[str] = field(default_factory=Counter)
    error_classes: Counter[str] = field(default_factory=Counter)
    tool_runs: int = 0  # runs that called a tool
    tool_calls: int = 0
    tool_failures: int = 0
    costs: list[float] = field(default_factory=list)  # runs with a known cost
    tokens: list[float] = field(default_factory=list)
    durations: list[float] = field(default_factory=list)

    def add_rollup(self, tool_calls: int, tool_failures: int, cost_usd, cost_unknown_steps: int, tokens_in, tokens_out) -> None:
        if tool_calls:
            self.tool_runs += 1
            self.tool_calls += tool_calls
            self.tool_failures += tool_failures
        if cost_usd is not None and not cost_unknown_steps:
            self.costs.append(float(cost_usd))
        self.tokens.append(float((tokens_in or 0) + (tokens_out or 0)))

    def add(self, other: Tally) -> None:
        self.statuses.update(other.statuses)
        self.error_classes.update(other.error_classes)
        self.tool_runs += other.tool_runs
        self.tool_calls += other.tool_calls
        self.tool_failures += other.tool_failures
        self.costs += other.costs
        self.tokens += other.tokens
        self.durations += other.durations

    def figure(self, metric: str, since: str | None, until: str | None, error_class: str | None = None) -> Figure:
        """A metric of these runs with its 95 % interval (error_class_runs: of the class tallied)."""
        stamp = {"since": since, "until": until}
        count = self.statuses
        runs, ended = count.total(), sum(count[s] for s in ENDED)
        if metric in ("success_rate", "failure_rate"):
            return _rate(count["succeeded" if metric == "success_rate" else "failed"], ended, ended, stamp)
        if metric in ("incomplete_runs", "error_class_runs"):
            n = float(count["incomplete"] if metric == "incomplete_runs" else self.error_classes[error_class or ""])
            return Figure(n, n, n, runs, **stamp)
        if metric == "tool_failure_rate":
            return _rate(self.tool_failures, self.tool_calls, self.tool_runs, stamp)
        if metric in QUANTILES:
            return _quantile(self.durations, QUANTILES[metric], stamp)
        if metric == "cost_per_run":
            return _mean(self.costs, stamp)
        if metric == "tokens_per_run":
            return _mean(self.tokens, stamp)
        raise ValueError(f"{metric}: not a metric")


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

    def tally(self) -> Tally:
        """What the metrics read of these runs (error classes aside: `measure` asks the store)."""
        out = Tally(Counter(r["status"] for r in self.runs))
        for r in self.rolled:
            out.add_rollup(*(r[c] for c in ROLLUP_FIELDS))
        out.durations = [d for d in (_duration(r) for r in self.runs if r["status"] in ENDED) if d is not None]
        return out


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
    if metric == "error_class_runs":
        raise ValueError(f"{metric}: not measured from a sample")
    return s.tally().figure(metric, s.since, s.until)


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


SHARED_FILTERS = ("workflow", "agent_id", "model", "agent_version", "environment")  # run columns a pass reads (window_runs)


def _shareable(rule: Rule) -> bool:
    return set(rule.filters) <= set(SHARED_FILTERS)


def judge_all(store: Store, rules: list[Rule], now: datetime) -> list[Judgement]:
    """Every rule judged as `judge` does, the runs read once: the widest window any rule needs, in one
    narrow read tallied per span between the rules' window bounds and per value of the columns they
    filter on (a rule on a tag, a source or a user reads its own)."""
    shared = [r for r in rules if _shareable(r)]
    spans = _Spans(store, shared, now) if shared else None
    out = []
    for rule in rules:
        if spans is None or not _shareable(rule):
            out.append(judge(store, rule, now))
            continue
        since = now - timedelta(hours=rule.window_hours)
        current = spans.figure(rule, since, now)
        baseline = spans.figure(rule, since - (now - since), since) if rule.change else None
        out.append(Judgement(*_verdict(rule, current, baseline), current, baseline))
    return out


def _window_bounds(rule: Rule, now: datetime) -> list[datetime]:
    """Where the rule's windows start and end, as `judge` computes them."""
    since = now - timedelta(hours=rule.window_hours)
    return [since - (now - since), since, now] if rule.change else [since, now]


class _Spans:
    """The runs of the widest window some rules need, read once, tallied per span between two of their
    windows' bounds and per status and value of the columns they filter on: a rule's window is a run of
    spans, its filter a choice of values, its figure the sum of the tallies they pick."""

    def __init__(self, store: Store, rules: list[Rule], now: datetime):
        self.bounds = sorted({at for r in rules for at in _window_bounds(r, now)})
        self.dimensions = sorted({key for r in rules for key in r.filters})
        classes = sorted({r.error_class for r in rules if r.metric == "error_class_runs" and r.error_class})
        rollups = any(r.metric in FROM_ROLLUPS for r in rules)
        times = any(r.metric in QUANTILES for r in rules)
        rows = store.window_runs(self.bounds, self.dimensions, classes, rollups=rollups, times=times)
        keyed, flagged = 2 + len(self.dimensions), 2 + len(self.dimensions) + len(classes)
        self.spans: list[dict[tuple, Tally]] = [{} for _ in self.bounds[1:]]  # per span: (status, *values) → tally
        for row in rows:
            part, status = self.spans[row[0]], row[1]
            tally = part.get(row[1:keyed])
            if tally is None:
                tally = part[row[1:keyed]] = Tally()
            tally.statuses[status] += 1
            for error_class, flag in zip(classes, row[keyed:flagged], strict=True):
                if flag:
                    tally.error_classes[error_class] += 1
            rest = row[flagged:]
            if rollups:
                if rest[0] is not None:  # a run with steps (tool_calls is never NULL in its rollup)
                    tally.add_rollup(*rest[:6])
                rest = rest[6:]
            if times and status in ENDED and (d := _seconds_between(*rest)) is not None:
                tally.durations.append(d)
        self.picked: dict[tuple, Tally] = {}

    def _pick(self, span: int, wanted: tuple) -> Tally:
        """The tally of the span's runs whose filtered columns hold the wanted values (None: any)."""
        if (span, wanted) not in self.picked:
            pairs = [(i, value) for i, value in enumerate(wanted, start=1) if value is not None]
            total = self.picked[span, wanted] = Tally()
            for key, tally in self.spans[span].items():
                if all(key[i] == value for i, value in pairs):
                    total.add(tally)
        return self.picked[span, wanted]

    def figure(self, rule: Rule, since: datetime, until: datetime) -> Figure:
        wanted = tuple(rule.filters.get(d) for d in self.dimensions)
        total = Tally()
        for span in range(self.bounds.index(since), self.bounds.index(until)):
            total.add(self._pick(span, wanted))
        return total.figure(rule.metric, since.isoformat(), until.isoformat(), rule.error_class)


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
    from ..whatif.results import wilson  # here: what it imports (the comparison of runs) is most of a pass's start

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
    """The mean and its interval, summed exactly (fsum): the same whatever order the runs were read in."""
    n = len(values)
    if n == 0:
        return Figure(None, None, None, 0, **stamp)
    mean = math.fsum(values) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    half = Z95 * sd / math.sqrt(n)
    return Figure(round(mean, 6), round(mean - half, 6), round(mean + half, 6), n, **stamp)


def _duration(run: dict) -> float | None:
    return _seconds_between(run["started_at"], run["ended_at"])


def _seconds_between(start: str | None, end: str | None) -> float | None:
    """A run's duration from its start and end as text (None when one is missing)."""
    try:
        return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


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

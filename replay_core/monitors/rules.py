"""A monitor's rule: a metric over the runs a filter picks in a window, judged against a threshold or
against the window before, with an interval and a minimum number of runs.

A rule fires only on evidence: the metric's whole 95 % interval beyond the threshold, or the current
window's interval clear of the baseline window's in the bad direction, each side with at least
`min_runs` runs. Two failures out of three runs are "no evidence yet", never an alert.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

# metric → (what it measures, which way is worse, how it is judged)
METRICS: dict[str, tuple[str, str, str]] = {
    "success_rate": ("runs that succeeded, of the runs that ended", "lower", "rate"),
    "failure_rate": ("runs that failed, of the runs that ended", "higher", "rate"),
    "tool_failure_rate": ("tool calls that failed, of all tool calls", "higher", "rate"),
    "incomplete_runs": ("runs left incomplete", "higher", "count"),
    "error_class_runs": ("runs that ended with or had an errored step of `error_class`", "higher", "count"),
    "p50_duration_s": ("median run duration, seconds", "higher", "spread"),
    "p95_duration_s": ("95th percentile run duration, seconds", "higher", "spread"),
    "cost_per_run": ("mean cost of a run, USD (runs with a known cost)", "higher", "spread"),
    "tokens_per_run": ("mean tokens of a run, in and out", "higher", "spread"),
}
INTERVAL_METRICS = tuple(m for m, (_, _, kind) in METRICS.items() if kind != "count")
RELEASE_DIMENSIONS = ("agent_version", "model", "prompt_version")  # prompt_version: in the runs' metadata
FILTER_KEYS = ("workflow", "agent_id", "model", "agent_version", "environment", "source", "tag", "user_id")
MAX_WINDOW_HOURS = 24 * 90


class RuleError(ValueError):
    """A rule that cannot be judged as written: one sentence naming the field."""


@dataclass(frozen=True)
class Rule:
    metric: str
    window_hours: float = 24.0
    threshold: float | None = None  # fire past this value (with evidence)
    change: bool = False  # fire on a change against the window before, of the same length
    min_runs: int = 20
    error_class: str | None = None  # for error_class_runs
    filters: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def worse(self) -> str:
        return METRICS[self.metric][1]

    @property
    def kind(self) -> str:
        return METRICS[self.metric][2]

    def sentence(self) -> str:
        what = METRICS[self.metric][0].replace("`error_class`", self.error_class or "?")
        scope = ", ".join(f"{k} {v}" for k, v in sorted(self.filters.items())) or "all runs"
        if self.change:
            judged = f"{self.worse} than in the {self.window_hours:g} h before"
        else:
            judged = f"{'above' if self.worse == 'higher' else 'below'} {self.threshold:g}"
        return f"{what} ({scope}, last {self.window_hours:g} h) {judged}, with evidence (at least {self.min_runs} runs)"


@dataclass(frozen=True)
class ReleaseRule:
    """The rule of a built-in `release <dimension>` monitor: each new value of the dimension (a
    version, a model) against the one seen before it, on every metric with an interval, overall and
    per workflow; it fires when one of them is worse with evidence."""

    release: str  # the dimension: one of RELEASE_DIMENSIONS
    min_runs: int = 20

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def sentence(self) -> str:
        return (
            f"each new {self.release} against the one before it, on every metric with an interval, overall and per "
            f"workflow: worse with evidence (at least {self.min_runs} runs a side)"
        )


@dataclass(frozen=True)
class ExperimentRule:
    """The rule of a scheduled experiment's monitor (`experiment <schedule>`): each scheduled run against
    the one before it; it fires when a variant's pass rate dropped with evidence (the 95 % Wilson
    intervals apart). Judged when a scheduled run ends (monitors.loop), not from the rollups."""

    experiment: str  # the schedule's name

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def sentence(self) -> str:
        return (
            f"each scheduled run of {self.experiment!r} against the one before it: a pass rate lower with evidence "
            "(95 % Wilson intervals apart)"
        )


def parse_monitor_rule(data: dict[str, Any]) -> Rule | ReleaseRule | ExperimentRule:
    """A stored monitor's rule: a metric's rule, a built-in release comparison, or a scheduled experiment's."""
    if isinstance(data, dict) and set(data) == {"experiment"} and isinstance(data["experiment"], str):
        return ExperimentRule(data["experiment"])
    if isinstance(data, dict) and "release" in data:
        if data["release"] not in RELEASE_DIMENSIONS or set(data) - {"release", "min_runs"}:
            raise RuleError(f"release: expected one of {', '.join(RELEASE_DIMENSIONS)} and min_runs")
        return ReleaseRule(data["release"], _min_runs(data.get("min_runs", 20)))
    return parse_rule(data)


def parse_rule(data: dict[str, Any]) -> Rule:
    """A Rule from its JSON shape (CLI options, HTTP body, stored row), checked field by field."""
    if not isinstance(data, dict):
        raise RuleError("rule: expected an object")
    unknown = sorted(set(data) - {"metric", "window_hours", "threshold", "change", "min_runs", "error_class", "filters"})
    if unknown:
        raise RuleError(f"rule.{unknown[0]}: not a rule field")
    metric = data.get("metric")
    if metric not in METRICS:
        raise RuleError(f"metric: expected one of {', '.join(METRICS)}, got {metric!r}")
    window = _number(data.get("window_hours", 24.0), "window_hours")
    if not 0 < window <= MAX_WINDOW_HOURS:
        raise RuleError(f"window_hours: between 0 and {MAX_WINDOW_HOURS} hours, got {window:g}")
    threshold = data.get("threshold")
    threshold = None if threshold is None else _number(threshold, "threshold")
    change = data.get("change", False)
    if not isinstance(change, bool):
        raise RuleError("change: expected true or false")
    if (threshold is None) == (not change):
        raise RuleError("give a threshold, or change: true (against the window before), not both")
    if METRICS[metric][2] == "count" and change:
        raise RuleError(f"{metric}: a count is judged against a threshold, not as a change")
    if METRICS[metric][2] == "rate" and threshold is not None and not 0 <= threshold <= 1:
        raise RuleError(f"threshold: {metric} is a fraction between 0 and 1, got {threshold:g}")
    min_runs = _min_runs(data.get("min_runs", 20))
    error_class = data.get("error_class")
    if (metric == "error_class_runs") != bool(error_class):
        raise RuleError("error_class: give it with error_class_runs, and only then")
    filters = data.get("filters") or {}
    if not isinstance(filters, dict) or any(k not in FILTER_KEYS or not isinstance(v, str) for k, v in filters.items()):
        raise RuleError(f"filters: an object of {', '.join(FILTER_KEYS)} → text")
    return Rule(metric, window, threshold, change, min_runs, error_class, dict(filters))


def _min_runs(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 100_000:
        raise RuleError(f"min_runs: a whole number from 1 to 100,000, got {value!r}")
    return value


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RuleError(f"{name}: expected a finite number, got {value!r}")
    return float(value)

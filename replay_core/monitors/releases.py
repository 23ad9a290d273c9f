"""Releases compared: two values of a dimension (an agent_version, a model) on every metric with an
interval, overall and per workflow, each with a verdict — `better`, `worse` (the 95 % intervals
apart, in that direction) or `no evidence yet` (they overlap, or a side has fewer than `min_runs`
runs). A new value is compared with the one first seen before it, and an alert opens when some
metric is worse with evidence: one alert per value, kept on the built-in `release <dimension>`
monitor so that muting, acknowledging, history and webhooks work as for any monitor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from sqlalchemy.exc import IntegrityError

from .. import config
from ..storage.actor import EDITOR, Actor
from ..storage.filters import SessionFilter
from ..storage.store import Store
from . import patterns
from .deliver import announce, deliver
from .judge import Figure, Sample, figure, formatter, sample
from .rules import INTERVAL_METRICS, METRICS, RELEASE_DIMENSIONS, ReleaseRule, RuleError

BETTER, WORSE, NO_EVIDENCE = "better", "worse", "no evidence yet"
LOOKBACK = timedelta(days=14)  # a value first seen longer ago is no longer "new"
OVERALL = "all workflows"
SCHEDULE = Actor("monitors schedule", EDITOR, "server")  # who adds the built-in release monitor
IDS_A_READ = 10_000  # run ids bound in one read: SQLite takes 32,766 parameters a statement, PostgreSQL 65,535


@dataclass
class MetricComparison:
    metric: str
    a: Figure
    b: Figure
    verdict: str
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "a": self.a.to_dict(), "b": self.b.to_dict(), "verdict": self.verdict, "why": self.why}


@dataclass
class Comparison:
    """`b` against `a`: per scope (all workflows, then each workflow), every interval metric."""

    dimension: str
    a: str
    b: str
    min_runs: int
    scopes: dict[str, list[MetricComparison]] = field(default_factory=dict)

    def worse(self) -> list[tuple[str, MetricComparison]]:
        return [(scope, m) for scope, metrics in self.scopes.items() for m in metrics if m.verdict == WORSE]

    def to_dict(self) -> dict[str, Any]:
        return {
            "dimension": self.dimension,
            "a": self.a,
            "b": self.b,
            "min_runs": self.min_runs,
            "scopes": {scope: [m.to_dict() for m in metrics] for scope, metrics in self.scopes.items()},
        }


def verdict(metric: str, a: Figure, b: Figure, min_runs: int) -> tuple[str, str]:
    """`b` against `a` on one metric, and why."""
    if a.value is None or b.value is None or min(a.runs, b.runs) < min_runs:
        return NO_EVIDENCE, f"{a.runs} and {b.runs} runs measured, fewer than {min_runs} on a side"
    assert None not in (a.low, a.high, b.low, b.high)
    higher_is_worse = METRICS[metric][1] == "higher"
    if b.low > a.high:  # type: ignore[operator]
        return (WORSE if higher_is_worse else BETTER), "higher, the intervals apart"
    if b.high < a.low:  # type: ignore[operator]
        return (BETTER if higher_is_worse else WORSE), "lower, the intervals apart"
    return NO_EVIDENCE, "the intervals overlap"


def _scope(a: Sample, b: Sample, min_runs: int) -> list[MetricComparison]:
    out = []
    for metric in INTERVAL_METRICS:
        fa, fb = figure(a, metric), figure(b, metric)
        out.append(MetricComparison(metric, fa, fb, *verdict(metric, fa, fb, min_runs)))
    return out


def release_filter(dimension: str, value: str, workflow: str | None) -> SessionFilter:
    """The runs of one value of a column dimension (on one workflow, or all); a prompt version, in the runs'
    metadata, has no filter field: it is read by `release_sample`."""
    if dimension == "model":
        return SessionFilter(workflow=workflow, model=value)
    return SessionFilter(workflow=workflow, agent_version=value)


def release_sample(store: Store, dimension: str, value: str, workflow: str | None) -> Sample:
    """The runs of one value of the dimension with their rollups; a prompt version's by their ids, a bounded
    number of ids a read, so that a prompt version of any number of runs is read."""
    if dimension != "prompt_version":
        return sample(store, release_filter(dimension, value, workflow))
    ids = store.runs_with(dimension, value, SessionFilter(workflow=workflow))
    parts = [sample(store, SessionFilter(ids=tuple(ids[i : i + IDS_A_READ]))) for i in range(0, len(ids), IDS_A_READ)]
    return Sample([r for p in parts for r in p.runs], [r for p in parts for r in p.rolled])


def compare(
    store: Store, a: str, b: str, *, dimension: str = "agent_version", workflow: str | None = None, min_runs: int = 20
) -> Comparison:
    """`b` against `a` on every metric with an interval, over all their runs and per workflow."""
    if dimension not in RELEASE_DIMENSIONS:
        raise RuleError(f"dimension: expected one of {', '.join(RELEASE_DIMENSIONS)}, got {dimension!r}")
    side_a = release_sample(store, dimension, a, workflow)
    side_b = release_sample(store, dimension, b, workflow)
    result = Comparison(dimension, a, b, min_runs)
    if workflow is None:
        result.scopes[OVERALL] = _scope(side_a, side_b, min_runs)
    per_a, per_b = side_a.split("workflow"), side_b.split("workflow")
    empty = Sample([], [])
    for name in sorted(set(per_a) | set(per_b)):
        result.scopes[name] = _scope(per_a.get(name, empty), per_b.get(name, empty), min_runs)
    return result


def new_versions(store: Store, since: datetime, dimension: str = "agent_version") -> list[str]:
    """The values of `dimension` whose first run started after `since`, oldest first."""
    return [value for value, first in store.first_seen(dimension) if first > since]


def monitor_name(dimension: str) -> str:
    return f"release {dimension}"


def ensure_monitor(store: Store, dimension: str = "agent_version") -> dict:
    """The built-in release monitor of `dimension`, added the first time it is needed."""
    name = monitor_name(dimension)
    found = store.get_monitor(name)
    if found is None:
        try:
            store.create_monitor(
                name, ReleaseRule(dimension).to_dict(), webhook_url=None, webhook_secret_env=None, actor=SCHEDULE
            )
        except IntegrityError:  # another replica added it first
            pass
        found = store.get_monitor(name)
    assert found is not None
    return found


def check_releases(store: Store, now: datetime, dimension: str = "agent_version", *, deliver_to: Callable = deliver) -> dict:
    """Compare each new value of `dimension` with the one before; alert on a metric worse with evidence."""
    from .rules import parse_monitor_rule

    monitor = ensure_monitor(store, dimension)
    rule = parse_monitor_rule(monitor["rule"])
    assert isinstance(rule, ReleaseRule)
    return check_monitor(store, monitor, rule, now, deliver_to=deliver_to)


def check_monitor(store: Store, monitor: dict, rule: ReleaseRule, now: datetime, *, deliver_to: Callable = deliver) -> dict:
    """The release monitor judged now: every value first seen in the last LOOKBACK against its
    predecessor. A value with a worse metric opens one alert (never a second for the same value); the
    alert resolves, once, if more runs take the evidence away."""
    seen = store.first_seen(rule.release)
    alerts = {a["figure"].get("release", {}).get("b"): a for a in store.alerts(monitor["id"], limit=1000)}
    compared, events = [], []
    for (previous, _), (value, first) in zip(seen, seen[1:], strict=False):
        if first <= now - LOOKBACK or first > now:
            continue
        comparison = compare(store, previous, value, dimension=rule.release, min_runs=rule.min_runs)
        worse = comparison.worse()
        compared.append({"a": previous, "b": value, "worse": [f"{m.metric} ({scope})" for scope, m in worse]})
        existing = alerts.get(value)
        if worse and existing is None:
            figure_ = _alert_figure(rule, comparison, worse)
            alert_id = store.add_alert(monitor["id"], figure_, now)
            announce(store, monitor, "opened", {"id": alert_id, **figure_}, figure_["sentence"], now, deliver_to)
            events.append({"event": "opened", "alert": alert_id, "b": value})
        elif not worse and existing and existing["resolved_at"] is None and store.resolve_alert(existing["id"], now):
            sentence = f"{rule.release} {value} against {previous}: no metric worse with evidence any more"
            announce(store, monitor, "resolved", {"id": existing["id"], **existing["figure"]}, sentence, now, deliver_to)
            events.append({"event": "resolved", "alert": existing["id"], "b": value})
    firing = [c for c in compared if c["worse"]]
    sentence = (
        "; ".join(f"{c['b']} worse than {c['a']} on {', '.join(c['worse'])}" for c in firing)
        if firing
        else f"{len(compared)} new {rule.release} value(s) compared, none worse with evidence"
    )
    result = {
        "verdict": "firing" if firing else "ok",
        "sentence": sentence,
        "compared": compared,
        "current": None,
        "baseline": None,
        "rule": rule.sentence(),
        "checked_at": now.isoformat(),
    }
    store.record_check(monitor["id"], result, now)
    return result | {"events": events, "event": events[0]["event"] if events else None}


def _said(scope: str, m: MetricComparison) -> str:
    fmt = formatter(METRICS[m.metric][2])
    return (
        f"{m.metric} ({scope}) {fmt(m.a.value)} → {fmt(m.b.value)} "
        f"(95 % intervals {fmt(m.a.low)}–{fmt(m.a.high)} and {fmt(m.b.low)}–{fmt(m.b.high)})"
    )


def _alert_figure(rule: ReleaseRule, comparison: Comparison, worse: list[tuple[str, MetricComparison]]) -> dict:
    """What a release alert holds: the comparison, its worse metrics in a sentence, the runs of the new
    value behind the first of them (a runs-page link) and, for failures, what names their patterns later."""
    scope, first = worse[0]
    workflow = None if scope == OVERALL else scope
    prompt = rule.release == "prompt_version"
    flt = SessionFilter(workflow=workflow) if prompt else release_filter(rule.release, comparison.b, workflow)
    if first.metric in ("failure_rate", "success_rate"):
        flt = replace(flt, status="failed")
    elif first.metric == "tool_failure_rate":
        flt = replace(flt, has="error")
    params = {"workflow": flt.workflow, "status": flt.status, "has": flt.has}
    if not prompt:  # the runs page filters on columns; a prompt version is in the metadata
        params[rule.release] = comparison.b
    return {
        "rule": rule.sentence(),
        "sentence": f"{rule.release} {comparison.b} against {comparison.a}: worse on " + "; ".join(_said(*w) for w in worse),
        "release": comparison.to_dict(),
        "current": first.b.to_dict(),
        "baseline": first.a.to_dict(),
        "runs_link": f"{config.public_url()}/runs?{urlencode({k: v for k, v in params.items() if v})}",
    } | (patterns.pending(flt, comparison.b if prompt else None) if flt.status or flt.has else {"patterns": []})

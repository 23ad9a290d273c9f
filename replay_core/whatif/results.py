"""An experiment's results: the cases × variants matrix and what it says per variant.

Per variant: cases scored, passed, the pass rate with a 95 % Wilson score interval (it
stays inside [0, 1] and behaves at 0 and n passes, where the normal approximation does
not), cost (None when some replay's cost is unknown: never shown as free), tokens, model
latency p50/p95 (nearest-rank), and a histogram of the original's step where replays
departed. Regressions come first: cases that passed on the baseline variant (the first)
and fail on another; improvements are the reverse. Only cases scored on both sides count.
Refused cases (the run has no step the start point names, or nothing to replay after it)
and cases not scored (their provider gave no answer: whatif.reach) are counted apart with
their reasons, never as passes or fails. Each cell says which tool
answers were given by live functions and which were served from the recording.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter

from ..storage.store import SessionFilter, Store
from .reach import not_scored_reason
from .start_point import REFUSED

Z95 = 1.959963984540054


def wilson(passed: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for passed/n; (0, 1) when n is 0 (nothing known)."""
    if n == 0:
        return 0.0, 1.0
    p = passed / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0–100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return round(ordered[rank - 1], 1)


def summarise(store: Store, experiment_id: str) -> dict:
    """The experiment with its per-variant figures, regressions, improvements and matrix."""
    exp = store.get_experiment(experiment_id)
    if exp is None:
        raise KeyError(experiment_id)
    settings = exp["settings"]
    names = settings["names"]
    cases = [c["session_id"] for c in store.dataset_cases(exp["dataset_id"], version=exp["dataset_version"])]
    runs = store.experiment_runs(experiment_id)
    tools = _tool_results(store, [r["replay_session"] for r in runs if r["replay_session"]])
    cell = {(r["case_session"], r["variant"]): {**r, "tools": tools.get(r["replay_session"])} for r in runs}
    variants = []
    for v, name in enumerate(names):
        finished = [cell[(c, v)] for c in cases if (c, v) in cell and cell[(c, v)]["state"] == "done"]
        refused = [r for r in finished if r["outcome"] == REFUSED]
        unscored = [r for r in finished if r["outcome"] != REFUSED and not_scored_reason(r)]
        done = [r for r in finished if r["outcome"] != REFUSED and not not_scored_reason(r)]
        passed = sum(1 for r in done if r["passed"])
        costs = [r["cost_usd"] for r in done]
        variants.append(
            {
                "variant": v,
                "name": name,
                "model": settings["variants"][v]["model"],
                "cases": len(done),
                "passed": passed,
                "pass_rate": round(passed / len(done), 4) if done else None,
                "ci": list(wilson(passed, len(done))),
                "cost_usd": None if any(c is None for c in costs) else round(sum(costs), 6),
                "scoring_cost_usd": round(sum(s.get("cost_usd") or 0.0 for r in done for s in r["scores"] or []), 6),
                "tokens_in": sum(r["tokens_in"] or 0 for r in done),
                "tokens_out": sum(r["tokens_out"] or 0 for r in done),
                "p50_ms": percentile([r["latency_ms"] for r in done if r["latency_ms"] is not None], 50),
                "p95_ms": percentile([r["latency_ms"] for r in done if r["latency_ms"] is not None], 95),
                "outcomes": dict(Counter(r["outcome"] or "error" for r in done)),
                "departed_at": {
                    str(k): n
                    for k, n in sorted(Counter(r["departed_seq"] for r in done if r["departed_seq"] is not None).items())
                },
                "pending": len(cases) - len(finished),
                "refused": len(refused),
                "refusals": [{"case": r["case_session"], "reason": _failing_reason(r)} for r in refused],
                "not_scored": len(unscored),
                "not_scored_reasons": [{"case": r["case_session"], "reason": not_scored_reason(r)} for r in unscored],
                "tool_results": {k: sum(len((r["tools"] or {}).get(k) or []) for r in done) for k in ("live", "recorded")},
            }
        )
    regressions, improvements = [], []
    for v in range(1, len(names)):
        for c in cases:
            base, this = cell.get((c, 0)), cell.get((c, v))
            if not base or not this or base["passed"] is None or this["passed"] is None or unjudged(base) or unjudged(this):
                continue
            item = {
                "case": c,
                "session": this["replay_session"],
                "variant": names[v],
                "baseline": base["replay_session"],
                "reason": _failing_reason(this if base["passed"] else base),
            }
            if base["passed"] and not this["passed"]:
                regressions.append(item)
            elif this["passed"] and not base["passed"]:
                improvements.append(item)
    matrix = [{"case": c, "cells": [_cell(cell.get((c, v))) for v in range(len(names))]} for c in cases]
    total = len(cases) * len(names)
    done_count = sum(1 for r in runs if r["state"] == "done")  # refused ones included: they will not run again
    return {
        "experiment": experiment_id,
        "dataset": exp["dataset"],
        "dataset_version": exp["dataset_version"],
        "status": exp["status"],
        "message": exp["message"],
        "start": settings["start"],
        "scorers": settings["scorers"],
        "progress": {"done": done_count, "total": total, "running": sum(1 for r in runs if r["state"] == "running")},
        "budget_usd": settings.get("budget_usd"),
        "budget_tokens": settings.get("budget_tokens"),
        "estimates": settings.get("estimates"),
        "interval": "95% Wilson score",
        "variants": variants,
        "regressions": regressions,
        "improvements": improvements,
        "matrix": matrix,
        "created_at": exp["created_at"],
        "finished_at": exp["finished_at"],
    }


def _failing_reason(run: dict) -> str | None:
    failing = [s for s in run["scores"] or [] if not s.get("passed")]
    return failing[0]["reason"] if failing else None


def unjudged(run: dict) -> bool:
    """Refused or not scored: a finished case × variant with no verdict."""
    return run["outcome"] == REFUSED or not_scored_reason(run) is not None


def verdict(run: dict | None) -> str:
    """pass | fail | pending | refused | not scored (provider error: …)."""
    if run is None or run["state"] != "done":
        return "pending"
    if run["outcome"] == REFUSED:
        return "refused"
    unscored = not_scored_reason(run)
    if unscored:
        return unscored
    return "pass" if run["passed"] else "fail"


def _cell(run: dict | None) -> dict | None:
    if run is None:
        return None
    unscored = unjudged(run)
    return {
        "state": run["state"],
        "verdict": verdict(run),
        "passed": None if run["passed"] is None or unscored else bool(run["passed"]),
        "session": run["replay_session"],
        "outcome": run["outcome"],
        "cost_usd": run["cost_usd"],
        "latency_ms": run["latency_ms"],
        "departed_seq": run["departed_seq"],
        "scores": run["scores"] or [],
        "tools": run.get("tools"),
    }


def _tool_results(store: Store, replay_sessions: list[str]) -> dict[str, dict | None]:
    """Replay session -> {live: [seq…], recorded: [seq…]} (what replay stored in the session's metadata)."""
    if not replay_sessions:
        return {}
    rows = store.list_sessions(SessionFilter(ids=tuple(replay_sessions), experiments=True), limit=len(replay_sessions))
    return {r["id"]: (r.get("metadata") or {}).get("tool_results") for r in rows}


def to_csv(summary: dict) -> str:
    """One row per case × variant: verdicts and measures, each scorer's verdict and reason."""
    scorers = summary["scorers"]
    names = [v["name"] for v in summary["variants"]]
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(
        [
            "case",
            "variant",
            "state",
            "verdict",
            "passed",
            "replay_session",
            "outcome",
            "cost_usd",
            "latency_ms",
            "departed_seq",
            *[f"{s}_{part}" for s in scorers for part in ("passed", "reason")],
        ]
    )
    for row in summary["matrix"]:
        for name, c in zip(names, row["cells"], strict=True):
            if c is None:
                writer.writerow([row["case"], name, "pending"])
                continue
            by_name = {s["name"]: s for s in c["scores"]}
            writer.writerow(
                [
                    row["case"],
                    name,
                    c["state"],
                    c["verdict"],
                    c["passed"],
                    c["session"],
                    c["outcome"],
                    c["cost_usd"],
                    c["latency_ms"],
                    c["departed_seq"],
                    *[x for s in scorers for x in (by_name.get(s, {}).get("passed"), by_name.get(s, {}).get("reason"))],
                ]
            )
    return buf.getvalue()


def cli_shape(summary: dict) -> dict:
    """The `experiment run --json` answer: the brief's fields first, the rest after."""
    variants = [
        {
            k: v[k]
            for k in ("model", "cases", "passed", "pass_rate", "ci", "cost_usd", "tokens_in", "tokens_out", "p50_ms", "p95_ms")
        }
        | {
            "name": v["name"],
            "departed_at": v["departed_at"],
            "outcomes": v["outcomes"],
            "pending": v["pending"],
            "refused": v["refused"],
            "not_scored": v["not_scored"],
            "not_scored_reasons": v["not_scored_reasons"],
            "tool_results": v["tool_results"],
        }
        for v in summary["variants"]
    ]
    return {
        "experiment": summary["experiment"],
        "dataset": summary["dataset"],
        "status": summary["status"],
        "message": summary["message"],
        "interval": summary["interval"],
        "variants": variants,
        "regressions": [{k: r[k] for k in ("case", "session", "variant", "baseline", "reason")} for r in summary["regressions"]],
        "improvements": [
            {k: r[k] for k in ("case", "session", "variant", "baseline", "reason")} for r in summary["improvements"]
        ],
    }

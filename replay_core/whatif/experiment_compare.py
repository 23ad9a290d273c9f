"""Two experiments side by side: per variant and per scorer, which cases got better or worse from A to B.

Only like is compared with like, and what is not comparable is named rather than dropped:
- cases: those both experiments hold (same dataset version: all of them; otherwise the
  overlap); the rest are listed as only in A / only in B;
- variants: paired by name (the model and what else it changes), or by position when
  asked; unpaired variants are listed;
- scorers: those both ran; the others are listed;
- a case counts for a pair only when it was scored on both sides (pending or refused on
  either side: listed as not scored on both).
Pass rates are over the compared cases, each with its 95 % Wilson interval; "improved"
is failed in A and passed in B, "regressed" the reverse. Different start points or scorer
options are noted: the figures are still computed, but they measure different things.
"""

from __future__ import annotations

from typing import Any

from ..storage.store import Store
from .reach import not_scored_reason
from .results import wilson


class CompareError(ValueError):
    """An experiment that does not exist, or two that share no case."""


def _load(store: Store, experiment_id: str) -> tuple[dict, list[str], dict]:
    exp = store.get_experiment(experiment_id)
    if exp is None:
        raise CompareError(f"no experiment {experiment_id!r}")
    cases = [c["session_id"] for c in store.dataset_cases(exp["dataset_id"], version=exp["dataset_version"])]
    cells = {(r["case_session"], r["variant"]): r for r in store.experiment_runs(experiment_id)}
    return exp, cases, cells


def _rate(passed: int, n: int) -> dict:
    return {"passed": passed, "pass_rate": round(passed / n, 4) if n else None, "ci": list(wilson(passed, n))}


def _verdicts(run: dict | None) -> dict[str, bool] | None:
    """Scorer -> passed for a scored run; None when it was not scored (pending, running, refused, provider error)."""
    if run is None or run["state"] != "done" or run["passed"] is None or not_scored_reason(run):
        return None
    return {s["name"]: bool(s.get("passed")) for s in run["scores"] or []}


def _pairs(a_names: list[str], b_names: list[str], by_position: bool) -> list[tuple[int, int]]:
    if by_position:
        return [(i, i) for i in range(min(len(a_names), len(b_names)))]
    return [(i, b_names.index(n)) for i, n in enumerate(a_names) if n in b_names]


def compare_experiments(store: Store, a_id: str, b_id: str, *, by_position: bool = False) -> dict:
    """Experiment B against experiment A (the earlier one, say): see the module doc."""
    a, a_cases, a_cells = _load(store, a_id)
    b, b_cases, b_cells = _load(store, b_id)
    in_b = set(b_cases)
    shared = [c for c in a_cases if c in in_b]
    if not shared:
        raise CompareError(
            f"{a_id} and {b_id} share no case (datasets {a['dataset']} v{a['dataset_version']} and "
            f"{b['dataset']} v{b['dataset_version']}): nothing is comparable"
        )
    sa, sb = a["settings"], b["settings"]
    a_names, b_names = sa["names"], sb["names"]
    pairs = _pairs(a_names, b_names, by_position)
    scorers = [s for s in sa["scorers"] if s in sb["scorers"]]
    notes = []
    if (a["dataset_id"], a["dataset_version"]) != (b["dataset_id"], b["dataset_version"]):
        notes.append(
            f"different datasets or versions ({a['dataset']} v{a['dataset_version']}, {b['dataset']} "
            f"v{b['dataset_version']}): only the {len(shared)} cases both hold are compared"
        )
    if sa["start"] != sb["start"]:
        notes.append(f"different start points ({sa['start']} in A, {sb['start']} in B): the replays cover different stretches")
    if (sa.get("scorer_options") or {}) != (sb.get("scorer_options") or {}):
        notes.append("different scorer options: a scorer of the same name may judge differently")
    if by_position:
        notes.append("variants paired by position, not by name")
    variants = []
    for i, j in pairs:
        compared, unscored, improved, regressed = [], [], [], []
        per_scorer: dict[str, dict[str, Any]] = {s: {"a": 0, "b": 0, "improved": [], "regressed": []} for s in scorers}
        for case in shared:
            ra, rb = a_cells.get((case, i)), b_cells.get((case, j))
            va, vb = _verdicts(ra), _verdicts(rb)
            if ra is None or rb is None or va is None or vb is None:  # no verdicts without a run
                unscored.append(case)
                continue
            compared.append((bool(ra["passed"]), bool(rb["passed"])))
            item = {"case": case, "a_session": ra["replay_session"], "b_session": rb["replay_session"]}
            if ra["passed"] and not rb["passed"]:
                regressed.append(item)
            elif rb["passed"] and not ra["passed"]:
                improved.append(item)
            for s, tally in per_scorer.items():
                pa, pb = va.get(s), vb.get(s)
                tally["a"] += bool(pa)
                tally["b"] += bool(pb)
                if pa and not pb:
                    tally["regressed"].append(case)
                elif pb and not pa:
                    tally["improved"].append(case)
        n = len(compared)
        pa_n, pb_n = sum(x for x, _ in compared), sum(y for _, y in compared)
        variants.append(
            {
                "variant": a_names[i],
                "b_variant": b_names[j],
                "a_index": i,
                "b_index": j,
                "cases": n,
                "not_scored_on_both": unscored,
                "a": _rate(pa_n, n),
                "b": _rate(pb_n, n),
                "delta": None if not n else round((pb_n - pa_n) / n, 4),
                "improved": improved,
                "regressed": regressed,
                "scorers": [
                    {
                        "scorer": s,
                        "a": _rate(t["a"], n),
                        "b": _rate(t["b"], n),
                        "improved": t["improved"],
                        "regressed": t["regressed"],
                    }
                    for s, t in per_scorer.items()
                ],
            }
        )
    paired_a, paired_b = {i for i, _ in pairs}, {j for _, j in pairs}
    return {
        "a": {
            "experiment": a_id,
            "dataset": a["dataset"],
            "dataset_version": a["dataset_version"],
            "status": a["status"],
            "start": sa["start"],
        },
        "b": {
            "experiment": b_id,
            "dataset": b["dataset"],
            "dataset_version": b["dataset_version"],
            "status": b["status"],
            "start": sb["start"],
        },
        "interval": "95% Wilson score",
        "same_dataset_version": (a["dataset_id"], a["dataset_version"]) == (b["dataset_id"], b["dataset_version"]),
        "cases": {
            "compared": len(shared),
            "only_in_a": [c for c in a_cases if c not in in_b],
            "only_in_b": [c for c in b_cases if c not in set(a_cases)],
        },
        "not_comparable": {
            "variants_only_in_a": [n for k, n in enumerate(a_names) if k not in paired_a],
            "variants_only_in_b": [n for k, n in enumerate(b_names) if k not in paired_b],
            "scorers_only_in_a": [s for s in sa["scorers"] if s not in scorers],
            "scorers_only_in_b": [s for s in sb["scorers"] if s not in scorers],
        },
        "scorers": scorers,
        "notes": notes,
        "variants": variants,
    }

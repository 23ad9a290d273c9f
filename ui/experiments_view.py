"""Experiments on screen: the datasets and making one, planning and launching an experiment, its results
(read from the database while it runs) and two experiments compared."""

from __future__ import annotations

from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from replay_core.storage.actor import REPLAY, PermissionDenied
from replay_core.storage.store import SessionFilter, Store
from replay_core.whatif import dataset as ds
from replay_core.whatif import experiment as ex
from replay_core.whatif.experiment_compare import CompareError, compare_experiments
from replay_core.whatif.replay_config import ConfigError, ReplayConfig, configured_models, default_api_base
from replay_core.whatif.results import summarise, to_csv
from replay_core.whatif.scorers import SCORERS
from replay_core.whatif.start_point import FIRST_MODEL_TURN

from .common import PAGE_COMPARE, current_actor, fmt_cost, fmt_when, md, url_choice

ANY = "(any)"
PREVIEW = 200  # runs of a dataset's filter listed before it is made
MADE = "ds_made"  # what the last "Make the dataset" made, said after the page is drawn again


def datasets(store: Store) -> list[dict]:
    """The datasets made so far, as a table."""
    st.subheader("Datasets")
    sets = store.list_datasets()
    if sets:
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "dataset": d["name"],
                        "cases": d["cases"],
                        "version": d["version"],
                        "match": d["match"],
                        "updated": fmt_when(d["updated_at"]),
                    }
                    for d in sets
                ]
            ),
            hide_index=True,
        )
    else:
        st.info("No dataset yet. Make one below from the runs that matter, e.g. last week's refund runs.")
    return sets


def make_dataset(store: Store, sets: list[dict], editor: bool) -> list[dict]:
    """A dataset from the runs a filter matches (or some of them); returns the datasets, the new one included."""
    with st.expander("Make a dataset", expanded=not sets):
        st.caption(
            "Pick runs by filter (and, if you like, only some of the matches). "
            "A name that exists gets the new runs as its next version."
        )
        left, right = st.columns(2)
        name = left.text_input("Name", key="ds_name", placeholder="refunds-last-week")
        chosen = _dataset_filter(store, left, right)
        expected = right.text_input(
            "What counts as right (optional)",
            key="ds_expected",
            help="Left empty: each run's own final answer. Otherwise this text, matched as below.",
        )
        match = left.selectbox("Match the expected text", list(ds.MATCH_RULES), key="ds_match")
        matched = _matching_runs(store, chosen)
        picked = st.multiselect("Only these runs (empty: every match)", matched[:PREVIEW], key="ds_pick")
        if not editor:
            st.caption("Only editors can make datasets and launch experiments.")
        if st.button("Make the dataset", key="ds_make", disabled=not editor):
            try:
                made = ds.dataset_from_sessions(
                    store,
                    name,
                    picked or matched,
                    expected=expected.strip() or None,
                    match=match,
                    made_from=None if picked else {"filter": chosen},
                )
                grown = f" version {made['version']} ({made['added']} added)" if "added" in made else ""
                st.session_state[MADE] = f"Dataset {made['name']}{grown}: {made['cases']} cases."
                st.rerun()  # the list of datasets above is drawn again with the new one
            except ds.DatasetError as exc:
                st.error(md(str(exc)))
        if MADE in st.session_state:
            st.success(md(st.session_state.pop(MADE)))
    return sets


def _dataset_filter(store: Store, left, right) -> dict[str, str]:
    """The filter's fields that are set (a dataset's `made_from` keeps them)."""
    statuses = [ANY, "succeeded", "failed", "incomplete", "running", "unknown"]
    status = right.selectbox("Status", statuses, key="ds_status")
    workflow = left.selectbox("Workflow", [ANY, *store.distinct_values("workflow")], key="ds_workflow")
    model = right.selectbox("Model", [ANY, *store.distinct_values("model")], key="ds_model")
    agent = left.selectbox("Agent", [ANY, *store.distinct_values("agent_id")], key="ds_agent")
    since = right.text_input("Started since", key="ds_since", placeholder="7d, 12h or 2026-05-01")
    search = left.text_input("Text in the run", key="ds_search")
    chosen = {
        "status": status,
        "workflow": workflow,
        "model": model,
        "agent": agent,
        "since": since.strip(),
        "search": search.strip(),
    }
    return {k: v for k, v in chosen.items() if v and v != ANY}


def _matching_runs(store: Store, chosen: dict[str, str]) -> list[str]:
    """The ids of the runs the filter matches, the first PREVIEW of them listed; none for a filter that is wrong."""
    try:
        matched = store.session_ids(ds.parse_filter(chosen) if chosen else SessionFilter())
        rows = store.list_sessions(SessionFilter(ids=tuple(matched[:PREVIEW])), limit=PREVIEW) if matched else []
        st.caption(md(f"{len(matched)} runs match" + (f" (the first {PREVIEW} shown)" if len(matched) > PREVIEW else "") + "."))
        if rows:
            st.dataframe(
                pd.DataFrame(
                    [
                        {
                            "run": r["id"],
                            "name": r["name"],
                            "status": r["status"],
                            "model": r["model"],
                            "agent": r["agent_id"],
                            "workflow": r["workflow"],
                            "started": fmt_when(r["started_at"]),
                        }
                        for r in rows
                    ]
                ),
                hide_index=True,
                key="ds_preview",
            )
        return matched
    except ds.DatasetError as exc:
        st.error(md(str(exc)))
        return []


def launch(store: Store, sets: list[dict], editor: bool) -> None:
    """A dataset, models and settings; the plan's estimate; launching opens the new experiment."""
    st.subheader("Launch an experiment")
    if not sets:
        return
    plan = _plan(store, sets)
    if plan is not None:
        _estimate(plan)
    if st.button("Launch", type="primary", key="ex_launch", disabled=not (editor and plan is not None)):
        experiment_id = ex.create(store, plan)
        ex.launch(store, experiment_id, actor=current_actor())
        st.query_params["experiment"] = experiment_id
        st.rerun()


def _plan(store: Store, sets: list[dict]) -> ex.Plan | None:
    """The experiment the fields describe; None (with the reason shown) until it can run."""
    dataset = st.selectbox("Dataset", [d["name"] for d in sets], key="ex_dataset")
    models = st.multiselect("Models (the first is the baseline)", configured_models(), key="ex_models")
    typed = st.text_input(
        "Other models", key="ex_models_typed", placeholder="e.g. openai/gpt-4o-mini, anthropic/claude-3-5-haiku"
    )
    models = list(dict.fromkeys([*models, *(m.strip() for m in typed.split(",") if m.strip())]))
    left, right = st.columns(2)
    api_base = left.text_input("API base (local server)", value=default_api_base() or "", key="ex_api_base")
    start = right.text_input(
        "Replay from",
        value=FIRST_MODEL_TURN,
        key="ex_start",
        help="first-model-turn, a step number, or a step kind per case: 'last user_message', "
        "'first model_turn after first tool_error'. A run without that step is refused (counted).",
    )
    scorers = left.multiselect("Scorers", sorted(SCORERS), default=["outcome"], key="ex_scorers")
    concurrency = right.number_input("Replays at once", min_value=1, max_value=32, value=4, key="ex_concurrency")
    budget = left.number_input("Budget (USD)", min_value=0.0, value=None, step=1.0, key="ex_budget", placeholder="no budget")
    if not models:
        return None
    try:
        configs = [ReplayConfig(model=m, api_base=api_base or None) for m in models]
        return ex.plan(
            store, dataset, configs, start=start, scorers=scorers, concurrency=int(concurrency), budget_usd=budget or None
        )
    except (ex.ExperimentError, ConfigError) as exc:
        st.error(md(str(exc)))
        return None


def _estimate(plan: ex.Plan) -> None:
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "model": e.model,
                    "cases": len(plan.cases),
                    "tokens in (≈)": e.tokens_in,
                    "tokens out (≈)": e.tokens_out,
                    "cost (≈)": fmt_cost(e.cost_usd, "unknown"),
                }
                for e in plan.estimates
            ]
        ),
        hide_index=True,
    )
    if plan.unplayable:
        st.warning(
            md(
                f"{len(plan.unplayable)} cases cannot be replayed from {plan.start.spec} (refused, counted apart, not scored): "
                + "; ".join(f"{k}: {v}" for k, v in list(plan.unplayable.items())[:3])
            )
        )


def pick_experiment(store: Store) -> tuple[dict[str, str], str | None]:
    """The experiments by label, and the one shown, bound to `?experiment=`."""
    st.subheader("Results")
    runs = store.list_experiments()
    if not runs:
        st.caption("No experiment yet.")
        return {}, None
    # no status here: the picker is drawn once, the results below are redrawn while the experiment runs
    labels = {
        r["id"]: f"{r['dataset']} · {', '.join(r['settings']['names'])} · {fmt_when(r['created_at'])} · {r['id']}" for r in runs
    }
    return labels, url_choice("Experiment", "experiment", list(labels), format_func=labels.get, placeholder="Pick an experiment…")


@st.fragment(run_every="2s")
def results(store: Store, experiment_id: str) -> None:
    """An experiment's results, redrawn every two seconds while it runs: each variant's numbers, the cases that changed
    against the baseline, and the matrix of cases by variant (each cell opens compare)."""
    summary = summarise(store, experiment_id)
    _status(summary)
    _stop_or_resume(store, experiment_id, summary["status"])
    st.dataframe(pd.DataFrame([_variant_row(v) for v in summary["variants"]]), hide_index=True, key="variants")
    for v in summary["variants"]:
        if v["not_scored"]:
            st.warning(
                md(
                    f"{v['name']}: {v['not_scored']} of {v['not_scored'] + v['cases'] + v['refused'] + v['pending']} cases "
                    "not scored: the provider gave no answer, which says nothing about the model (kept out of the pass rate). "
                    + "; ".join(dict.fromkeys(r["reason"] for r in v["not_scored_reasons"]))
                ),
                icon=":material/cloud_off:",
            )
        if v["refusals"]:
            st.caption(md(f"{v['name']}: refused " + "; ".join(f"{r['case']} ({r['reason']})" for r in v["refusals"][:5])))
    _changed_cases(summary)
    _matrix(summary)
    st.download_button("Download the matrix (CSV)", to_csv(summary), file_name=f"{experiment_id}.csv", mime="text/csv", key="csv")


def _status(summary: dict) -> None:
    prog = summary["progress"]
    st.caption(
        md(
            f"Status: {summary['status']}"
            + (f" — {summary['message']}" if summary["message"] else "")
            + f". {prog['done']} of {prog['total']} replays done. Interval: {summary['interval']}."
        )
    )
    if summary["status"] in ("running", "stopping"):
        for v in summary["variants"]:
            total = v["cases"] + v["pending"]
            st.progress(v["cases"] / total if total else 1.0, text=md(f"{v['name']}: {v['cases']} of {total}"))


def _stop_or_resume(store: Store, experiment_id: str, status: str) -> None:
    """Stop a running experiment (no more cases launched, those in flight finish), or resume a stopped or failed
    one (finished replays are never paid for again). Editors only, checked again by the library."""
    if status not in ("running", "stopped", "failed"):
        return
    actor = current_actor()
    stop = status == "running"
    label = "Stop the experiment" if stop else "Resume the experiment"
    hint = (
        "No more cases are launched; the replays in flight finish; Resume runs the rest."
        if stop
        else "Runs the case × model replays not done yet; finished ones are kept, never paid for again."
    )
    if not actor.may(REPLAY):
        hint = "Only editors can stop or resume an experiment."
    if st.button(label, key="ex_stop" if stop else "ex_resume", help=hint, disabled=not actor.may(REPLAY)):
        try:
            if stop:
                ex.request_stop(store, experiment_id, actor=actor)
            else:
                store.authorize(actor, REPLAY, f"experiment {experiment_id}")
                ex.launch(store, experiment_id, actor=actor)
        except (ex.ExperimentError, PermissionDenied) as exc:
            st.warning(str(exc))
        else:
            st.rerun()  # the picker above shows the status too


def _variant_row(v: dict) -> dict:
    """The verdicts first (what was scored, what passed, what could not be scored), then what it cost."""
    return {
        "variant": v["name"],
        "cases scored": v["cases"],
        "passed": v["passed"],
        "pass rate": "—" if v["pass_rate"] is None else f"{v['pass_rate']:.0%}",
        "95% interval": f"{v['ci'][0]:.0%}–{v['ci'][1]:.0%}",
        "not scored (provider error)": v["not_scored"],
        "refused": v["refused"],
        "cost": fmt_cost(v["cost_usd"], "unknown"),
        "tokens": v["tokens_in"] + v["tokens_out"],
        "p50 ms": v["p50_ms"],
        "p95 ms": v["p95_ms"],
        "left the original at": "; ".join(f"step {k} ({n} case{'s' if n != 1 else ''})" for k, n in v["departed_at"].items())
        or "—",
        "tool answers live / recorded": f"{v['tool_results']['live']} / {v['tool_results']['recorded']}",
    }


def _changed_cases(summary: dict) -> None:
    for title, items in (
        ("Regressions (passed on the baseline, fail here)", summary["regressions"]),
        ("Improvements", summary["improvements"]),
    ):
        if items:
            st.markdown(f"**{title}**")
            for r in items:
                st.page_link(
                    PAGE_COMPARE,
                    label=md(f"{r['case']} · {r['variant']}: {r['reason'] or ''}"),
                    query_params={"a": r["case"], "b": r["session"]},
                    icon=":material/compare_arrows:",
                )


def _compare_link(case: str, session: str | None, verdict: str) -> str | None:
    return None if session is None else "/compare?" + urlencode({"a": case, "b": session, "verdict": verdict})


def _matrix(summary: dict) -> None:
    """Cases by variant, each cell a link to compare reading pass, fail or pending."""
    names = [v["name"] for v in summary["variants"]]
    rows = []
    for row in summary["matrix"]:
        item = {"case": row["case"]}
        for name, c in zip(names, row["cells"], strict=True):
            verdict = "pending" if c is None else c["verdict"]
            verdict = "not-scored" if verdict.startswith("not scored") else verdict  # the reason is in the warning above
            item[name] = _compare_link(row["case"], c and c["session"], verdict) or verdict
        rows.append(item)
    st.dataframe(
        pd.DataFrame(rows),
        hide_index=True,
        key="matrix",
        column_config={n: st.column_config.LinkColumn(n, display_text=r"verdict=([\w-]+)") for n in names},
    )


def compare_two(store: Store, labels: dict[str, str], experiment_id: str) -> None:
    """This experiment (B) against another one (A) on the cases both ran."""
    st.subheader("Compare two experiments")
    this = store.get_experiment(experiment_id)
    others = [  # only those that ran the same dataset: another shares no case to compare
        r["id"] for r in store.list_experiments() if r["id"] != experiment_id and r["dataset_id"] == this["dataset_id"]
    ]
    if not others:
        st.caption(md(f"Run another experiment on the dataset {this['dataset']} to compare the two."))
        return
    left, right = st.columns(2)
    against = left.selectbox(
        "Compare with (A)", others, format_func=labels.get, key="cmp_a", index=None, placeholder="Pick an experiment…"
    )
    if against is None:
        return
    by_position = right.checkbox(
        "Pair variants by position", key="cmp_position", help="Default: variants of the same name are paired."
    )
    try:
        found = compare_experiments(store, against, experiment_id, by_position=by_position)
    except CompareError as exc:
        st.warning(md(str(exc)))
        return
    _what_was_compared(found, against, experiment_id)
    _comparison_table(found)
    _changed_between(found)


def _what_was_compared(found: dict, against: str, experiment_id: str) -> None:
    cases = found["cases"]
    st.caption(
        md(
            f"A {against} → B {experiment_id}: {cases['compared']} cases in both"
            + "".join(f"; {len(cases[k])} {k.replace('_', ' ')} (not comparable)" for k in ("only_in_a", "only_in_b") if cases[k])
            + f". Interval: {found['interval']}."
        )
    )
    for note in found["notes"]:
        st.warning(md(note))
    for key, items in found["not_comparable"].items():
        if items:
            st.caption(md(f"Not comparable, {key.replace('_', ' ')}: {', '.join(items)}"))


def _band(r: dict) -> str:
    rate = "—" if r["pass_rate"] is None else f"{r['pass_rate']:.0%}"
    return f"{rate} ({r['ci'][0]:.0%}–{r['ci'][1]:.0%})"


def _comparison_table(found: dict) -> None:
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "variant": v["variant"],
                    "scorer": sc["scorer"] if sc else "(all)",
                    "cases": v["cases"],
                    "A": _band((sc or v)["a"]),
                    "B": _band((sc or v)["b"]),
                    "improved": len((sc or v)["improved"]),
                    "regressed": len((sc or v)["regressed"]),
                }
                for v in found["variants"]
                for sc in [None, *v["scorers"]]
            ]
        ),
        hide_index=True,
        key="cmp_table",
    )


def _changed_between(found: dict) -> None:
    for v in found["variants"]:
        for title, items in (("regressed", v["regressed"]), ("improved", v["improved"])):
            for r in items:
                st.page_link(
                    PAGE_COMPARE,
                    label=md(f"{title}: {r['case']} · {v['variant']}"),
                    query_params={"a": r["a_session"], "b": r["b_session"]},
                    icon=":material/compare_arrows:",
                )
        if v["not_scored_on_both"]:
            st.caption(md(f"{v['variant']}: {len(v['not_scored_on_both'])} cases not scored on both (pending or refused)."))

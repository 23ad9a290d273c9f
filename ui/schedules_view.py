"""The evaluation loop on the Experiments page: the experiment schedules with their last run against the one
before (pass rates, the cases that regressed), adding one and running the due ones now; and a review queue's
bad verdicts made into a dataset, once or as they come."""

from __future__ import annotations

import streamlit as st

from replay_core.monitors import loop
from replay_core.storage.actor import INGEST, REPLAY, PermissionDenied
from replay_core.storage.store import Store
from replay_core.team import queues
from replay_core.whatif.replay_config import configured_models

from .common import current_actor, fmt_when, md

SAID = "loop_said"  # what the last action did, said after the page is drawn again


def _say(kind: str, text: str) -> None:
    st.session_state[SAID] = (kind, text)


def schedules(store: Store) -> None:
    """Each schedule: its dataset, trigger, variants, and its last run against the one before."""
    st.subheader("Scheduled experiments")
    said = st.session_state.pop(SAID, None)
    if said:
        (st.success if said[0] == "ok" else st.error)(md(said[1]))
    rows = store.list_schedules()
    if not rows:
        st.caption(
            "No schedule yet. A schedule runs a dataset again (daily, on its new versions, or on a new configured "
            "model) and lists the cases that passed before and fail now; its monitor alerts on a drop with evidence."
        )
    for s in rows:
        _schedule(store, s)
    actor = current_actor()
    left, right = st.columns(2)
    if left.button("Run the due schedules now", key="loop_run_due", disabled=not actor.may(REPLAY)):
        try:
            store.authorize(actor, REPLAY, "schedules")
            ran = loop.run_due(store)
        except PermissionDenied as exc:
            _say("error", str(exc))
        else:
            _say("ok", f"{len(ran)} schedule(s) ran." if ran else "No schedule is due.")
        st.rerun()
    with right.popover("Add a schedule", disabled=not actor.may(REPLAY)):
        _add_form(store)


def _schedule(store: Store, s: dict) -> None:
    runs = store.schedule_runs(s["id"], limit=10)
    last = runs[0] if runs else None
    result = (last or {}).get("result") or {}
    head = f"**{md(s['name'])}** · dataset {md(s['dataset'])} · {loop.TRIGGERS[s['trigger']]}"
    with st.container(border=True):
        st.markdown(head)
        if last is None:
            st.caption("Not run yet.")
            return
        st.caption(
            f"Last run {fmt_when(last['started_at'])} ({md(last['reason'])}): "
            f"{result.get('status', 'running')}" + (f" — {md(result['error'])}" if result.get("error") else "")
        )
        for v in result.get("variants") or []:
            now = "—" if v["pass_rate"] is None else f"{v['pass_rate']:.0%} ({v['ci'][0]:.0%}–{v['ci'][1]:.0%})"
            before = v.get("previous_pass_rate")
            was = "" if before is None else f", was {before:.0%}: **{v['verdict']}**"
            st.markdown(f"{md(v['variant'])}: pass rate {now}{was}")
            if v.get("regressed"):
                st.markdown("Passed before, fail now: " + ", ".join(md(c) for c in v["regressed"]))
        if result.get("experiment"):
            st.page_link(
                "pages/experiments.py",
                label="Open this run's experiment",
                query_params={"experiment": result["experiment"]},
                icon=":material/science:",
            )


def _add_form(store: Store) -> None:
    sets = [d["name"] for d in store.list_datasets()]
    if not sets:
        st.caption("Make a dataset first.")
        return
    name = st.text_input("Name", key="loop_name")
    dataset = st.selectbox("Dataset", sets, key="loop_dataset")
    model = st.selectbox("Model", configured_models(), key="loop_model")
    trigger = st.selectbox("Runs", list(loop.TRIGGERS), format_func=loop.TRIGGERS.get, key="loop_trigger")
    if st.button("Add the schedule", key="loop_add", type="primary"):
        try:
            loop.add_schedule(store, name, dataset, [{"model": model}], trigger=trigger, actor=current_actor())
        except (loop.LoopError, PermissionDenied) as exc:
            _say("error", str(exc))
        else:
            _say("ok", f"Schedule “{name}” added: it runs at the server's next pass, or now with the button.")
        st.rerun()


def queue_to_dataset(store: Store) -> None:
    """A review queue's bad verdicts as a dataset: its runs now, or every new one as it is given."""
    actor = current_actor()
    found = queues.list_queues(store)
    if not found or not actor.may(INGEST):
        return
    with st.expander("Make a dataset from a review queue's bad verdicts"):
        feeds = {f["queue_id"]: f for f in store.queue_feeds()}
        labels = {q["id"]: f"{q['name']} (queue {q['id']}, {q['reviews']} reviews)" for q in found}
        queue_id = st.selectbox("Queue", list(labels), format_func=labels.get, key="loop_queue")
        feed = feeds.get(queue_id)
        if feed:
            said = f"Every new {' or '.join(feed['verdicts'])} verdict of this queue goes to dataset “{feed['dataset']}”."
            st.caption(md(said))
        name = st.text_input("Dataset name", value=feed["dataset"] if feed else labels[queue_id].split(" (")[0], key="loop_ds")
        left, right = st.columns(2)
        try:
            if left.button("Make it from the runs judged bad", key="loop_from_queue"):
                made = loop.dataset_from_queue(store, queue_id, name, bad_only=True, actor=actor)
                _say("ok", f"Dataset “{made['name']}” version {made['version']}: {made['cases']} cases.")
                st.rerun()
            if right.button("Stop feeding it" if feed else "Add every new bad verdict", key="loop_feed"):
                loop.set_feed(store, queue_id, None if feed else name, actor=actor)
                _say("ok", "Feed stopped." if feed else f"Queue {queue_id} now feeds “{name}”.")
                st.rerun()
        except (loop.LoopError, PermissionDenied) as exc:
            st.error(md(str(exc)))

"""Runs: every recorded session, filtered and paged in the database; a row opens its timeline."""

from __future__ import annotations

import streamlit as st

from replay_core.storage.actor import REPLAY
from replay_core.storage.store import SessionFilter
from ui.common import PAGE_TIMELINE, current_actor, get_store
from ui.runs_view import dataset_form, filter_bar, filter_chips, runs_summary, runs_table

store = get_store()
st.title("Runs")
flt = filter_bar(store)
filter_chips()
total = store.count_sessions(flt)
if total == 0:
    if store.count_sessions(SessionFilter(include_replays=True, experiments=True)) == 0:
        st.info(
            "No runs recorded yet. Load the demo runs with `agent-replay demo`, import a trace file on the "
            "**Import** page, or send steps to the HTTP API (`POST /api/v1/sessions/{id}/steps`)."
        )
    else:
        st.info("No run matches these filters. Remove a filter above, or clear them all, to see more.")
    st.stop()

st.markdown(runs_summary(store, flt, total))
chosen = runs_table(store, flt, total)
if current_actor().may(REPLAY):
    dataset_form(store, flt, total)
if chosen:
    st.switch_page(PAGE_TIMELINE, query_params={"session": chosen})

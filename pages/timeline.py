"""Timeline: one run, step by step, with the agent's state at the selected step.

`?session=<id>&step=<n>` opens a run at a step; the slider and the jump buttons keep
the address bar in step, so any moment of a run can be linked to.
"""

from __future__ import annotations

import streamlit as st

from replay_core.storage.actor import DELETE
from replay_core.team import shares
from replay_core.understand.snapshot import state_at
from ui import player_view
from ui import step_view as sv
from ui import timeline_view as tv
from ui.common import PAGE_RUNS, current_actor, get_store, load_run, reviewer_name
from ui.share_view import share_button

store = get_store()
session_id = tv.session_picker(store)
if session_id is None:
    st.title("Timeline")
    st.caption("Pick a run in the sidebar, or open one from the **Runs** page.")
    st.stop()
run = load_run(store, session_id)
if run is None:
    st.stop()
tl, structure = run
run_notes, step_notes = tv.notes_by_seq(tl, store.annotations(session_id))
tv.run_header(tl, run_notes)
if not tl.steps:
    st.info("This run has no steps yet. Steps sent to it will appear here (and on the **Live** page as they arrive).")
    st.stop()
explanation = tv.explanation_for(store, tl)
tv.plain_header(store, tl, explanation)
share_button(store, current_actor(), shares.RUN, session=session_id, key=f"share_{session_id}")

noted = set(step_notes)
tv.phone_layout()
tv.search_box()


@st.fragment
def at_the_cursor() -> None:
    """Everything that moves with the cursor: a click here reruns (and redraws) only this."""
    hits = tv.run_hits(store, tl, st.session_state.get("run_search"))
    pos = tv.scrubber(tl, noted, explanation, structure, hits)
    tv.search_hits(tl, pos, hits)
    step = tl.steps[pos]
    player_view.player(store, tl, pos)
    left, right = st.columns([2, 3], gap="large")
    with left:
        tv.step_window(tl, pos, noted)
    with right, st.container(key="step_detail"):
        sv.step_detail(tl, pos, structure, step_notes.get(step.seq, []))
        tv.action_links(tl, step.seq, explanation)
        snap = state_at(tl, step.seq, store, behind=True)  # the rest of a long run rebuilt after the page
        names = ["What the agent saw", "Totals so far", "Structure", "Review"] + (["Goal & memory"] if snap.state else [])
        # only the open view is drawn: every tab drawn on every click was most of a click's repaint; and a
        # segmented control, not tabs, which measured their labels on every click (a tenth of one)
        if st.session_state.get("step_tab") not in names:  # "Goal & memory" open at a step without any
            st.session_state["step_tab"] = names[0]
        shown = st.segmented_control("Show", names, required=True, key="step_tab", label_visibility="collapsed")
        views = {
            "What the agent saw": lambda: sv.context_view(snap),
            "Totals so far": lambda: sv.totals_view(snap),
            "Structure": lambda: sv.structure_view(tl, structure, pos),
            "Review": lambda: tv.review_form(store, tl, step, reviewer_name()),
            "Goal & memory": lambda: sv.state_view(snap),
        }
        views[shown]()


at_the_cursor()

if current_actor().may(DELETE) and tv.delete_run(store, tl):
    st.cache_resource.clear()
    st.switch_page(PAGE_RUNS)

"""Review: runs by verdict with their notes, and a form to mark a run.

Anyone may review (viewers too); steps are marked from the timeline, where the
step is in front of you.
"""

from __future__ import annotations

import streamlit as st

from ui.common import current_actor, get_store, reviewer_name
from ui.review_view import audit_section, mark_run_form, pick_state, reviewed_runs

store = get_store()
st.title("Review")
if store.count_sessions() == 0:
    st.info("No runs to review yet. Once runs are recorded or imported, mark them here or on their timeline.")
    st.stop()

with st.expander("Mark a run", expanded=False, icon="📝"):
    mark_run_form(store, reviewer_name())

state = pick_state(store)
reviewed_runs(store, state)
audit_section(store, current_actor())

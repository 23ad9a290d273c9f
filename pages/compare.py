"""Compare: two runs side by side, aligned step by step, opened at the first step where they differ.

`?a=<id>&b=<id>` links here (the what-if page does, for each replay); a link with only
`?b=<replay>` compares the replay with the run it replays.
"""

from __future__ import annotations

import streamlit as st

from replay_core.team import shares
from ui import compare_view as cv
from ui.common import current_actor, get_store
from ui.share_view import share_button

st.title("Compare runs")
st.caption("Two runs aligned step by step: original and replay, success and failure, or two models on the same task.")
store = get_store()
a_id, b_id = cv.pick_runs(store)
if a_id is None or b_id is None:
    st.stop()
result = cv.comparison(store, a_id, b_id)
cv.totals(store, result, a_id, b_id)
share_button(store, current_actor(), shares.COMPARE, session=a_id, other=b_id, key=f"share_{a_id}_{b_id}")
window = cv.side_by_side(result)
cv.one_pair(result, window, a_id, b_id)

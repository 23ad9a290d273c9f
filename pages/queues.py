"""Review queues: the queues with their progress, working one run at a time, results, making one.

`?queue=<id>` opens a queue to work through; without it, the list.
"""

from __future__ import annotations

import streamlit as st

from replay_core.storage.actor import MANAGE_QUEUES, SHARE
from ui import queue_view as qv
from ui import share_view
from ui.common import current_actor, get_store

store = get_store()
actor = current_actor()
st.title("Review queues")
reviewer = qv.reviewer_box()
wanted = st.query_params.get("queue")
if wanted and wanted.isdigit():
    qv.work_queue(store, actor, int(wanted), reviewer)
    st.stop()
qv.queue_list(store, actor, reviewer)
if actor.may(MANAGE_QUEUES):
    with st.expander("Make a queue", icon="➕", expanded=False):
        qv.new_queue_form(store, actor)
if actor.may(SHARE):
    with st.expander("Share links", icon="🔗", expanded=False):
        st.caption(
            "A read-only link to one run or a comparison, for someone without an account. "
            "Queue results are shared from each queue's results."
        )
        share_view.share_a_run(store, actor)
        share_view.links_admin(store, actor)

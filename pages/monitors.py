"""Monitors: each rule's last verdict and open alert, the alert history, and releases compared."""

from __future__ import annotations

import streamlit as st

from ui import monitors_view as mv
from ui.common import current_actor, get_store

store = get_store()
st.title("Monitors")
mv.monitor_list(store, current_actor())
with st.expander("Alert history", icon="🕘", expanded=False):
    mv.alert_history(store)
st.subheader("Releases")
mv.release_comparison(store)

"""Live: runs that are sending steps right now tail themselves, without a page reload."""

from __future__ import annotations

import streamlit as st

from ui.live_view import live_panel

st.title("Live")
st.caption("Steps appear here as agents send them.")
live_panel()

"""Analytics: after a release, did success fall, latency rise, a tool start failing, cost
jump, the agent loop more? Every chart's point opens the runs list filtered to the runs
behind it; every chart's data downloads as CSV. The charts sit in tabs, only the open one drawn."""

from __future__ import annotations

import streamlit as st

from ui import analytics_view as av
from ui.common import get_store
from ui.runs_view import filter_bar

av.follow_drill()
store = get_store()
st.title("Analytics")
if store.count_sessions() == 0:
    st.info("No runs recorded yet. Load the demo runs with `agent-replay demo`, or import runs on the **Import** page.")
    st.stop()
flt = av.period_filter(filter_bar(store))
data = av.load(flt)
if data.runs.is_empty():
    st.info("No run matches this period and these filters. Widen the period or clear a filter in the sidebar.")
    st.stop()
av.headline(data, av.previous(flt))
av.chart_tabs(data, flt)
av.patterns_section(flt)
av.fanout_section(store)

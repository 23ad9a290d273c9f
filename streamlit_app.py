"""Agent Replay app entry: the UI and (later) the HTTP routes in one process."""

import streamlit as st

from replay_core.store import Store


@st.cache_resource
def get_store() -> Store:
    return Store()


st.set_page_config(page_title="Agent Replay", page_icon="⏪", layout="wide")
st.title("Agent Replay")
store = get_store()
store.expire_idle()
rows = store.list_sessions(limit=200)
if not rows:
    st.info("No runs yet. Load the demo runs with `agent-replay demo`, or import a file with `agent-replay import FILE`.")
else:
    st.caption(f"{store.count_sessions()} runs")
    st.dataframe(
        [{k: r[k] for k in ("id", "name", "status", "model", "agent_id", "started_at", "steps", "cost_usd")} for r in rows],
        hide_index=True,
    )

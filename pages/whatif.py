"""What-if: re-run a stretch of a run with other models, prompt or temperature, and see where it departs.

`?session=<id>&step=<n>` arrives with a run and the cycle of step n picked (the timeline
links here). Launching costs money, so it needs the editor role.
"""

from __future__ import annotations

import streamlit as st

from replay_core.storage.actor import REPLAY
from ui import whatif_view as wv
from ui.common import current_actor, get_store, load_timeline

st.title("What-if replay")
st.caption(
    "Re-run part of a recorded run with another model, temperature or system prompt, and see exactly "
    "where the new run departs from the original."
)
store = get_store()
session_id = wv.pick_run(store)
if session_id is None:
    st.stop()
tl = load_timeline(store, session_id)
if tl is None or not tl.cycles:
    st.warning("This run has no decision cycles (no thought, tool call or answer) to replay. Pick another run.")
    st.stop()
rec = wv.pick_range(store, tl, session_id)
if rec is None:
    st.stop()

actor = current_actor()
editor = actor.may(REPLAY)
choice = wv.pick_models()
blocked = wv.blocked_models(choice, editor)
prompt = wv.system_prompt_choice(rec, session_id)
budget = wv.budget_inputs(rec)
configs = wv.replay_configs(choice, blocked, prompt, budget)
wv.estimate(rec, configs)
if wv.launch_button(editor, configs, blocked):
    wv.run_replays(store, session_id, rec, configs, actor)
wv.results(store, session_id)
wv.earlier_replays(store, session_id)

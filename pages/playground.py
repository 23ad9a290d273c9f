"""Playground: one model call of a run, its messages edited, asked again, the answer beside the recorded one.

`?session=<id>&step=<n>` opens the model call holding step n (the timeline's "Open in playground").
Running costs money, so it needs the editor role; each run is stored as a one-step replay.
"""

from __future__ import annotations

import streamlit as st

from replay_core.storage.actor import REPLAY
from replay_core.whatif.playground import call_in
from replay_core.whatif.replay import ReplayError
from ui import playground_view as pv
from ui import whatif_view as wv
from ui.common import current_actor, get_store, load_timeline, md

st.title("Playground")
st.caption(
    "Open one model call, change what it was sent (the system prompt, any message), ask a model once, and read its "
    "answer beside the one the run recorded."
)
store = get_store()
session_id = wv.pick_run(store)
if session_id is None:
    st.stop()
tl = load_timeline(store, session_id)
if tl is None:
    st.stop()
seq = pv.pick_step(tl)
if seq is None:
    st.stop()
try:
    call = call_in(tl, store, seq)
except ReplayError as exc:
    st.warning(md(str(exc)))
    st.stop()

actor = current_actor()
st.subheader("Messages")
messages = pv.edit_messages(call)
st.subheader("Model")
config, blocked = pv.pick_config(actor.may(REPLAY))
ran = pv.run_button(store, call, messages, config, blocked, actor)
left, right = st.columns(2, gap="large")
with left:
    pv.recorded_answer(call)
with right:
    pv.show_ran(store, call, ran)

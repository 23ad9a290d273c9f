"""Experiments: make a dataset of recorded runs, replay it with several models, read who does as well.

Launching costs money, so making datasets and launching need the editor role; everyone
reads results. An experiment runs on a background thread of the app (whatif.experiment.launch)
and this page reads its progress from the database, so leaving the page does not stop it.
`?experiment=<id>` opens one; each cell of the matrix opens compare (original vs that replay).
"""

from __future__ import annotations

import streamlit as st

from ui import experiments_view as xv
from ui import schedules_view as sv
from ui.common import current_role, get_store

st.title("Experiments")
st.caption(
    "Replay a set of recorded runs with other models and see, per model, how many still come out right — "
    "with the cost, the latency, and the runs that got worse."
)
store = get_store()
editor = current_role() == "editor"
sets = xv.make_dataset(store, xv.datasets(store), editor)
sv.queue_to_dataset(store)
xv.launch(store, sets, editor)
sv.schedules(store)
labels, experiment_id = xv.pick_experiment(store)
if experiment_id is None:
    st.stop()
xv.results(store, experiment_id)
xv.compare_two(store, labels, experiment_id)

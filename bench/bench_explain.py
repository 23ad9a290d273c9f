"""Why a run failed, on every timeline render: explain() before (computed each time) and after (the
page's cache, ui.timeline_view.explanation_for), on the demo coding run and on a failed 10,000-step run.

Baseline: the same run's explain() computed afresh, i.e. what every rerun of the timeline paid
before the cache. The figure is the cached lookup (its key reads the session row and counts the
successful runs); ratio = before / after.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent))
from common import report, timed  # noqa: E402


def main() -> None:
    import streamlit as st
    from apptest_helpers import BIG, FAILED_CODING, big_events

    from replay_core.demo import load_demo
    from replay_core.ingest.pipeline import ingest
    from replay_core.storage.store import Store
    from replay_core.understand.explain import explain
    from replay_core.understand.timeline import open_timeline
    from ui.timeline_view import explanation_for

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{tmp}/explain.db")
        load_demo(store, only_if_empty=False)
        ingest(store, big_events())
        st.cache_data.clear()
        for name, sid in (("demo_coding_run", FAILED_CODING), ("failed_10k_steps", BIG)):
            tl = open_timeline(store, sid)
            tl.session.update(store.get_session(sid))
            before = min(timed(explain, store, sid)[1] for _ in range(3)) * 1000
            explanation_for(store, tl)  # the first render pays once
            after = min(timed(explanation_for, store, tl)[1] for _ in range(20)) * 1000
            report(f"explain_per_timeline_render_{name}", after, "ms", "<= 5", before, higher_is_better=False)


if __name__ == "__main__":
    main()

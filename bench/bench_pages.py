"""Page render times (AppTest, the real entry script) with a 10,000-step run in the database.

Baseline: the same AppTest run of a page that only writes a title, i.e. the framework's
own floor on this machine.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from common import report, timed  # noqa: E402


def main() -> None:
    import streamlit as st
    from apptest_helpers import APP, BIG, big_events, jump, shown_step, trigger
    from streamlit.testing.v1 import AppTest

    from replay_core.demo import load_demo, shifted
    from replay_core.events import SessionEndEvent
    from replay_core.ingest.pipeline import ingest
    from replay_core.storage.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/pages.db"
        os.environ["AGENT_REPLAY_DB_URL"] = url
        store = Store(url)
        load_demo(store, only_if_empty=False)
        ingest(store, big_events())
        # A second 10,000-step run, still going: recent timestamps, no end.
        ingest(store, shifted([e for e in big_events(session_id="big-live") if not isinstance(e, SessionEndEvent)]))
        store.close()
        st.cache_resource.clear()

        floor_app = AppTest.from_string('import streamlit as st\nst.title("floor")\n', default_timeout=60).run()
        _, floor = timed(floor_app.run)

        at = AppTest.from_file(APP, default_timeout=120)
        at.query_params["session"] = BIG
        _, seconds = timed(at.run)  # includes importing the app's modules, once per server process
        report("page_runs_first_render_in_process", seconds, "s", "<= 3", floor, higher_is_better=False)
        _, seconds = timed(at.run)
        report("page_runs_with_10k_runs", seconds, "s", "<= 3", floor, higher_is_better=False)

        def switch(path: str, title: str, **params: str) -> float:
            at.query_params.clear()
            for key, value in params.items():
                at.query_params[key] = value
            at.switch_page(path)
            _, took = timed(at.run)
            assert not at.exception, at.exception
            assert at.title[0].value == title, at.title[0].value  # the page really rendered
            return took

        cold = switch("pages/timeline.py", "ten thousand steps", session=BIG, step="5000")
        report("page_timeline_10k_first_open", cold, "s", "<= 3", floor, higher_is_better=False)
        _, moved = timed(trigger, at, "strip", "picked", 6_000)  # the slider let go at step 6,000
        assert shown_step(at)["heading"].endswith("step 6000"), shown_step(at)["heading"]
        report("page_timeline_10k_slider_move", moved, "s", "<= 3", floor, higher_is_better=False)
        _, jumped = timed(jump, at, "next_error")
        assert shown_step(at)["heading"].endswith("step 7979"), shown_step(at)["heading"]
        report("page_timeline_10k_next_error", jumped, "s", "<= 3", floor, higher_is_better=False)
        live = switch("pages/live.py", "Live", live="big-live")
        assert at.subheader[0].value == "ten thousand steps"
        report("page_live_10k_running_run", live, "s", "<= 3", floor, higher_is_better=False)
        report(
            "page_review_with_10k_run",
            switch("pages/review.py", "Review", review="unreviewed"),
            "s",
            "<= 3",
            floor,
            higher_is_better=False,
        )
        report(
            "page_import_with_10k_run", switch("pages/import_runs.py", "Import runs"), "s", "<= 3", floor, higher_is_better=False
        )


if __name__ == "__main__":
    main()

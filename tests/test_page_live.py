"""The live page: running runs tail themselves; new steps show on the next (fragment) rerun."""

from __future__ import annotations

from datetime import timedelta

from apptest_helpers import demo_store, empty_store, page  # noqa: F401  (fixtures)
from streamlit.testing.v1 import AppTest

from replay_core.events import SessionEvent, StepEvent, now_utc
from replay_core.ingest.pipeline import ingest
from replay_core.storage.store import SessionFilter
from ui.common import md

LIVE = "pages/live.py"
ONCALL = "demo-18-oncall-checkout-5xx-running"


def tail_lines(at) -> list[str]:
    return [
        line
        for m in at.markdown
        for line in m.value.split("  \n")
        if line.startswith(("`", "**")) and not line.startswith("**1 run") and " running** ·" not in line
    ]


def test_the_running_demo_run_tails(demo_store):
    at = page(LIVE)
    assert not at.exception
    assert at.markdown[0].value == "**1 run running** · refreshed every 2 s"
    assert at.subheader[0].value == md("Investigate checkout-api 5xx spike")  # shown as text
    lines = tail_lines(at)
    assert len(lines) == 11
    assert "**11** 🔧 Tool call · query\\_traces" in lines[-1]
    # An agent sends two more steps: the next rerun of the fragment shows them, newest last.
    when = now_utc()
    ingest(
        demo_store,
        [
            StepEvent(
                session_id=ONCALL,
                type="tool_result",
                tool_name="query_traces",
                content="p99 latency 4.1 s on /pay",
                timestamp=when,
            ),
            StepEvent(
                session_id=ONCALL,
                type="think",
                content="Roll back payments-client to 4.2.1.",
                timestamp=when + timedelta(seconds=1),
            ),
        ],
    )
    at.run()
    lines = tail_lines(at)
    assert len(lines) == 13
    assert lines[-2].endswith("**12** 📦 Tool result · query\\_traces — p99 latency 4\\.1 s on /pay")
    assert lines[-1].endswith("**13** 💭 Thought — Roll back payments\\-client to 4\\.2\\.1\\.")


def test_a_new_run_over_the_api_appears_and_can_be_watched(demo_store):
    ingest(
        demo_store,
        [
            SessionEvent(session_id="fresh", name="fresh agent", started_at=now_utc()),
            StepEvent(session_id="fresh", type="input", content="hello", timestamp=now_utc()),
        ],
    )
    at = page(LIVE)
    assert at.markdown[0].value == "**2 runs running** · refreshed every 2 s"
    assert at.dataframe[0].value["Run"].tolist() == ["fresh agent", "Investigate checkout-api 5xx spike"]
    at.selectbox(key="_url_live").set_value("fresh").run()
    assert at.subheader[0].value == "fresh agent"
    assert at.query_params["live"] == "fresh"
    assert tail_lines(at)[-1].endswith("**1** 💬 Input — hello")


def test_the_fragment_reruns_on_a_timer():
    from ui import live_view

    at = AppTest.from_function(_fragment_script)
    at.run()
    assert not at.exception
    assert live_view.REFRESH_S == 2
    assert [c.value for c in at.caption] == ["fragment ran"]


def _fragment_script():
    import inspect

    import streamlit as st

    from ui import live_view

    # st.fragment(run_every=...) keeps the timer in the decorated function's closure.
    closure = inspect.getclosurevars(live_view.live_panel).nonlocals
    if closure.get("run_every") == live_view.REFRESH_S:
        st.caption("fragment ran")


def test_when_nothing_runs(demo_store):
    demo_store.expire_idle(idle=timedelta(0))
    assert demo_store.count_sessions(SessionFilter(status="running")) == 0
    at = page(LIVE)
    assert not at.exception
    assert at.info[0].value.startswith("No run is sending steps right now.")


def test_empty_database(empty_store):
    at = page(LIVE)
    assert not at.exception
    assert at.info[0].value.startswith("No run is sending steps right now.")


def test_a_run_that_ends_is_said_to_have_finished_not_dropped(demo_store):
    from replay_core.events import SessionEndEvent

    at = page(LIVE)
    assert at.subheader[0].value == md("Investigate checkout-api 5xx spike")
    ingest(demo_store, [SessionEndEvent(session_id=ONCALL, status="succeeded", outcome="rolled back", ended_at=now_utc())])
    at.run()
    assert not at.exception
    assert [s.value for s in at.success] == [md("Investigate checkout-api 5xx spike finished: ✅ succeeded after 11 steps")]
    [link] = [p for p in at.get("page_link") if p.proto.label == "Open the run that just finished"]
    assert link.proto.query_string == f"session={ONCALL}"
    assert at.info[0].value.startswith("No run is sending steps right now.")

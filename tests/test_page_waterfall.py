"""The timeline's span waterfall through AppTest: the rows the page sends (nested, timed, slow ones ranked),
a row's click moving the cursor, and a long run sent a window of rows that follows the cursor and the scroll."""

from __future__ import annotations

from datetime import UTC, datetime

from apptest_helpers import (  # noqa: F401  (fixtures)
    BIG,
    BIG_STEPS,
    big_store,
    component_data,
    cursor,
    demo_each_store,
    demo_store,
    empty_store,
    page,
    shown_step,
    trigger,
)

from replay_core.events import StepEvent
from replay_core.ingest.pipeline import ingest
from ui.waterfall_view import WINDOW, axis, took

TIMELINE = "pages/timeline.py"
MULTI_AGENT = "demo-04-multi-agent-competitor-brief"
WATERFALL = {"left_view": "Waterfall"}


def test_the_waterfall_nests_times_and_ranks_the_steps(demo_each_store):
    at = page(TIMELINE, params={"session": MULTI_AGENT, "step": "9"}, state=WATERFALL)
    assert not at.exception
    data = component_data(at, "waterfall")
    rows = data["rows"]
    assert data["first"] == 0 and data["total"] == len(rows) == 26
    seq, depth, start, duration, label, said, failed, heat, rank, title = rows[data["cursor"]]
    assert (seq, depth, label, said, failed) == (9, 2, "🔧 web_search", "586 ms", False)
    assert title.startswith("Step 9 · 🔧 web_search · starts at 4.3 s · took 586 ms")
    by_seq = {r[0]: r for r in rows}
    assert [r[0] for r in rows[:6]] == [1, 2, 3, 4, 5, 6]  # the orchestrator's span, then its steps, depth first
    assert [by_seq[s][1] for s in (1, 2, 3, 4, 5, 18, 19, 23)] == [0, 0, 1, 1, 2, 1, 2, 1]
    assert by_seq[2][7] == "holds" and by_seq[20][7] == "hot"  # write_doc: 3.6 s of a 22.7 s run
    assert [by_seq[s][8] for s in (20, 1, 2)] == [1, 0, 0]  # ranked among the steps that hold none
    assert data["slowest"][0] == [
        20,
        "3.6 s · step 20",
        "Step 20 · 🔧 write_doc · starts at 13.4 s · took 3.6 s (16% of the run)",
    ]
    assert data["total_ms"] == 22_742.0 and data["axis"] == [[0, "0 s"], [10_000, "10 s"], [20_000, "20 s"]]

    trigger(at, "waterfall", "picked", 20)  # a row's click: the cursor goes there
    assert cursor(at) == 20 and shown_step(at)["heading"] == "🔧 Tool call · step 20"
    assert at.query_params["step"] == "20"
    assert component_data(at, "waterfall")["cursor"] == [r[0] for r in rows].index(20)


def test_steps_without_a_duration_or_a_time_are_said_to_have_none(demo_store):
    t0 = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)
    ingest(demo_store, [StepEvent(session_id="no-clock", seq=i, type="think", content=f"t{i}") for i in (1, 2)])
    ingest(
        demo_store,
        [
            StepEvent(session_id="half", seq=1, type="tool_call", tool_name="fetch", timestamp=t0, duration_ms=2000),
            StepEvent(session_id="half", seq=2, type="error", status="error", error_class="Boom", timestamp=t0),
        ],
    )
    at = page(TIMELINE, params={"session": "no-clock"}, state=WATERFALL)
    data = component_data(at, "waterfall")
    assert [r[5] for r in data["rows"]] == ["time not recorded"] * 2 and data["slowest"] == []
    assert data["caption"].startswith("No step of this run has a time and a duration")
    at = page(TIMELINE, params={"session": "half"}, state=WATERFALL)
    data = component_data(at, "waterfall")
    told = [(r[0], r[2], r[3], r[5], r[6]) for r in data["rows"]]
    assert told == [(1, 0, 2000, "2.0 s", False), (2, 0, None, "no duration", True)]
    assert data["caption"].startswith("1 step with no duration recorded: drawn as a tick.")
    assert data["rows"][0][7] == "hot" and data["rows"][0][8] == 1


def test_a_long_run_is_sent_a_window_that_follows_the_cursor_and_the_scroll(big_store):
    at = page(TIMELINE, params={"session": BIG, "step": "5000"}, state=WATERFALL)
    data = component_data(at, "waterfall")
    assert data["total"] == big_store.get_session(BIG)["steps"] > BIG_STEPS * 0.9 and len(data["rows"]) == WINDOW
    assert data["first"] <= data["cursor"] < data["first"] + WINDOW
    assert data["rows"][data["cursor"] - data["first"]][0] == 5000
    trigger(at, "waterfall", "scrolled", 9_000)  # scrolled far: the rows there, the cursor where it was
    data = component_data(at, "waterfall")
    assert data["first"] <= 9_000 < data["first"] + len(data["rows"]) and cursor(at) == 5000
    trigger(at, "waterfall", "picked", data["rows"][10][0])
    assert cursor(at) == data["rows"][10][0]


def test_durations_and_the_axis_in_plain_numbers():
    assert [took(v) for v in (None, 4, 1646, 65_000, 7_300_000)] == ["—", "4 ms", "1.6 s", "1 min 05 s", "2 h 01 min"]
    assert axis(0) == [] and axis(0.5) == [[0, "0 ms"]] and axis(900) == [[0, "0 ms"], [500, "500 ms"]]
    assert axis(100_000) == [[0, "0 min"], [60_000, "1 min"]]
    assert axis(7_300_000) == [[0, "0 h"], [3_600_000, "1 h"], [7_200_000, "2 h"]]

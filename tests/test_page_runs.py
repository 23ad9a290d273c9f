"""The runs page through AppTest: counts, filters from the sidebar and from links, paging, opening a run."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from apptest_helpers import (  # noqa: F401  (fixtures)
    FAILED_CODING,
    component_data,
    demo_each_store,
    demo_store,
    empty_store,
    filter_values,
    page,
    set_filter,
    trigger,
)

from replay_core.events import SessionEvent
from replay_core.ingest.pipeline import ingest
from replay_core.storage.store import SessionFilter
from ui.common import filter_from_params, filter_params, md

RUNS = "pages/runs.py"


def table_ids(at) -> list[str]:
    return list(at.dataframe[0].value["id"])


def expected_summary(store, flt: SessionFilter) -> str:
    total = store.count_sessions(flt)
    icons = {"running": "⏳", "succeeded": "✅", "failed": "❌", "incomplete": "⚠️"}
    parts = [
        f"{icon} {n} {status}"
        for status, icon in icons.items()
        if flt.status in (None, status) and (n := store.count_sessions(replace(flt, status=status)))
    ]
    return f"**{total} runs**: " + " · ".join(parts)


def test_demo_runs_listed_newest_first(demo_each_store):
    at = page(RUNS)
    assert not at.exception
    assert at.markdown[0].value == expected_summary(demo_each_store, SessionFilter())
    assert at.markdown[0].value.startswith("**18 runs**: ⏳ 1 running · ✅ 13 succeeded · ❌ 4 failed")
    assert table_ids(at) == [r["id"] for r in demo_each_store.list_sessions(limit=25)]
    table = at.dataframe[0].value
    row = table[table["id"] == FAILED_CODING].iloc[0]
    assert (row["Status"], row["Run"], row["Model"], row["Agent"], row["Workflow"], row["Steps"], row["Duration"]) == (
        "❌ failed",
        "PAY-412: add currency to format_price",
        "claude-sonnet-4",
        "coding-agent",
        "code-change",
        25,
        "26.4 s",
    )
    assert row["Tags"] == "coding, pricing, PAY-412"


def test_sidebar_filters_write_the_link(demo_store):
    at = page(RUNS)
    set_filter(at, "status", "failed")
    assert at.query_params["status"] == "failed"
    failed = [r["id"] for r in demo_store.list_sessions(SessionFilter(status="failed"))]
    assert table_ids(at) == failed
    assert at.markdown[0].value == "**4 runs**: ❌ 4 failed"
    set_filter(at, "model", "gpt-4o")
    assert table_ids(at) == [r["id"] for r in demo_store.list_sessions(SessionFilter(status="failed", model="gpt-4o"))]
    set_filter(at, "status", "succeeded")
    assert at.query_params["status"] == "succeeded"
    assert at.markdown[0].value == expected_summary(demo_store, SessionFilter(status="succeeded", model="gpt-4o"))


def test_text_search_looks_inside_steps(demo_store):
    at = page(RUNS, params={"q": "unexpected keyword argument"})
    assert table_ids(at) == [FAILED_CODING]
    assert filter_values(at)["q"] == "unexpected keyword argument"
    cell = at.dataframe[0].value["Matched step"].iloc[0]  # the matched step, its snippet as plain text
    seq = demo_store.search_matches([FAILED_CODING], "unexpected keyword argument")[FAILED_CODING]["seq"]
    assert cell.startswith(f"{seq}: ") and "«unexpected» «keyword» «argument»" in cell


def test_a_shared_link_applies_every_filter(demo_store):
    params = {"status": "succeeded", "tag": "travel", "agent_id": "trip-planner", "since": "2000-01-01"}
    at = page(RUNS, params=params)
    flt = filter_from_params(params)
    assert table_ids(at) == [r["id"] for r in demo_store.list_sessions(flt)]
    assert len(table_ids(at)) == 1
    assert filter_values(at)["tag"] == "travel"
    assert filter_params(flt) == params | {"since": "2000-01-01"}


def test_date_range_and_review_filters(demo_each_store):
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    at = page(RUNS, params={"since": tomorrow})
    assert at.info[0].value == "No run matches these filters. Remove a filter above, or clear them all, to see more."
    demo_each_store.annotate(FAILED_CODING, "bad", "wrong signature")
    at = page(RUNS, params={"review": "bad"})
    assert table_ids(at) == [FAILED_CODING]
    assert at.dataframe[0].value["Review"].tolist() == ["👎 Bad"]
    at = page(RUNS, params={"review": "unreviewed"})
    assert FAILED_CODING not in table_ids(at)
    assert len(table_ids(at)) == 17


def test_paging_happens_in_the_database(empty_store):
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    ingest(
        empty_store,
        [SessionEvent(session_id=f"run-{i:02d}", name=f"run {i}", started_at=t0 + timedelta(hours=i)) for i in range(60)],
    )
    at = page(RUNS)
    assert table_ids(at) == [f"run-{i:02d}" for i in range(59, 34, -1)]
    assert at.get("pagination")[0].num_pages == 3
    at.get("pagination")[0].set_value(3).run()
    assert table_ids(at) == [f"run-{i:02d}" for i in range(9, -1, -1)]


def test_selecting_a_row_opens_its_timeline(demo_store):
    at = page(RUNS)
    row = table_ids(at).index(FAILED_CODING)
    at.session_state["runs_table"] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    at.run()
    assert not at.exception
    assert at.title[0].value == md("PAY-412: add currency to format_price")  # shown as text
    assert at.query_params["session"] == FAILED_CODING


def test_empty_database_explains_how_to_get_runs(empty_store):
    at = page(RUNS)
    assert not at.exception
    assert at.info[0].value.startswith("No runs recorded yet. Load the demo runs with `agent-replay demo`")
    assert not at.dataframe


def test_more_filters_hold_the_rarer_ones_and_a_link_can_set_them(demo_store):
    at = page(RUNS)
    bar = component_data(at, "filters")
    assert bar["more"] == [
        "environment",
        "agent_version",
        "user_id",
        "thread_id",
        "tag",
        "has",
        "failed_tool",
        "error_class",
        "source",
    ]
    assert {f["key"] for f in bar["fields"]} >= set(bar["more"]) and not bar["active"]
    at = page(RUNS, params={"tag": "coding"})  # a link setting one of them: its script opens "More filters"
    assert filter_values(at)["tag"] == "coding" and component_data(at, "filters")["active"]
    set_filter(at, "tag", "")  # cleared
    assert "tag" not in at.query_params and filter_values(at)["tag"] == ""


def test_the_bar_takes_only_its_own_filters_and_real_dates(demo_store):
    """What the browser sends is checked: a key that is no filter, or a date that is none, changes nothing."""
    at = page(RUNS)
    set_filter(at, "session", "demo-01")
    set_filter(at, "since", "not a date")
    assert not at.exception and "session" not in at.query_params and "since" not in at.query_params
    set_filter(at, "since", "2000-01-01")
    assert at.query_params["since"] == "2000-01-01" and filter_values(at)["since"] == "2000-01-01"
    at = page(RUNS, params={"since": "yesterday"})  # a bad date in a link is ignored: the field shows none
    assert filter_values(at)["since"] == "" and len(table_ids(at)) == 18


def test_drill_down_filters_from_analytics_links(demo_each_store):
    for params in ({"failed_tool": "run_tests"}, {"error_class": "TestFailure"}, {"has": "retry"}, {"source": "demo"}):
        at = page(RUNS, params=params)
        assert not at.exception
        assert table_ids(at) == [r["id"] for r in demo_each_store.list_sessions(filter_from_params(params))], params
        assert component_data(at, "filters")["active"]
    assert table_ids(page(RUNS, params={"failed_tool": "run_tests"})) == [FAILED_CODING]
    assert len(table_ids(page(RUNS, params={"has": "retry"}))) == len(demo_each_store.session_ids(SessionFilter(has="retry")))


# ---------------------------------------------------------------------------- filters that let go, chips, replays kept apart

SELECTS = {
    "status": "failed",
    "review": "unreviewed",
    "model": "gpt-4o",
    "agent_id": "coding-agent",
    "workflow": "code-change",
    "tag": "coding",
    "has": "error",
    "source": "demo",
}
TEXTS = {"q": "format_price", "failed_tool": "run_tests", "error_class": "TestFailure"}


def test_every_select_has_any_and_choosing_it_clears_the_link(demo_each_store):
    for key, value in SELECTS.items():
        at = page(RUNS, params={key: value})
        field = next(f for f in component_data(at, "filters")["fields"] if f["key"] == key)
        assert field["value"] == value and field["options"][0] == ["", "Any"], key
        set_filter(at, key, "")  # the first choice, "Any"
        assert key not in at.query_params, key
        at.run()  # and it does not come back
        assert key not in at.query_params and filter_values(at)[key] == "", key
        assert len(table_ids(at)) == 18, key


def test_emptied_text_and_dates_stay_cleared(demo_each_store):
    for key, value in TEXTS.items():
        at = page(RUNS, params={key: value})
        assert filter_values(at)[key] == value
        set_filter(at, key, "")
        assert key not in at.query_params, key
        at.run()
        assert filter_values(at)[key] == "" and len(table_ids(at)) == 18, key
    at = page(RUNS, params={"since": "2000-01-01", "until": "2100-01-01"})
    set_filter(at, "since", "")
    assert "since" not in at.query_params and at.query_params["until"] == "2100-01-01"


def test_chips_show_every_active_filter_and_remove_it(demo_each_store):
    at = page(RUNS, params={"failed_tool": "run_tests", "status": "failed"})  # as an analytics drill-down leaves it
    chips = {b.key: b.label for b in at.button if b.key.startswith("chip_")}
    assert chips == {"chip_status": md("Status: ❌ failed"), "chip_failed_tool": md("Failed tool: run_tests")}
    assert table_ids(at) == [FAILED_CODING]
    at.button(key="chip_failed_tool").click().run()
    assert "failed_tool" not in at.query_params and at.query_params["status"] == "failed"
    assert len(table_ids(at)) == 4 and filter_values(at)["failed_tool"] == ""
    trigger(at, "filters", "clear", True)  # the bar's Clear all
    assert not {k for k in at.query_params if k in SELECTS | TEXTS}
    assert len(table_ids(at)) == 18 and not [b for b in at.button if b.key.startswith("chip_")]


def test_runs_list_says_why_and_never_none(demo_store):
    table = page(RUNS).dataframe[0].value
    # what tells runs apart and what they cost first: on screen at 1440 px without scrolling sideways
    assert list(table.columns[:9]) == ["id", "Status", "Run", "Outcome", "Started", "Steps", "Tokens", "Cost", "Review"]
    row = table[table["id"] == FAILED_CODING].iloc[0]
    assert row["Outcome"].startswith("TestFailure") and row["Id"] == FAILED_CODING
    for column in table.columns:
        assert not any(v is None or str(v) in ("None", "nan") for v in table[column]), column


def test_replays_are_kept_apart_until_asked_for(demo_store):
    from replay_core.whatif.replay import replay
    from replay_core.whatif.replay_config import ReplayConfig

    result = replay(demo_store, FAILED_CODING, None, None, ReplayConfig(model="recorded"))
    at = page(RUNS)
    assert at.markdown[0].value.startswith("**18 runs**") and result.session not in table_ids(at)
    set_filter(at, "replays", True)
    assert at.query_params["replays"] == "1" and at.markdown[0].value.startswith("**19 runs**")
    table = at.dataframe[0].value
    row = table[table["id"] == result.session].iloc[0]
    assert (row["Status"], row["Outcome"]) == ("🔁 replay", "reproduced")  # not the original's "❌ failed"
    assert "Including replays and experiments" in [b.label for b in at.button]


def test_the_runs_listed_become_an_experiments_dataset(demo_store, monkeypatch):
    from replay_core.whatif import dataset as ds

    at = page(RUNS, params={"status": "failed"})
    assert at.button(key="runs_ds_make").disabled  # a dataset needs a name
    at.text_input(key="runs_ds_name").set_value("failed, all of them").run()
    at.button(key="runs_ds_make").click().run()
    assert not at.exception
    cases = {c["session"] for c in ds.show(demo_store, "failed, all of them")["cases"]}
    assert cases == {r["id"] for r in demo_store.list_sessions(SessionFilter(status="failed"))}
    assert any(s.value.startswith("Dataset “failed, all of them” version 1") for s in at.success)
    # viewers read: no dataset form for them
    monkeypatch.setenv("AGENT_REPLAY_PASSWORD", "look")
    viewer = page(RUNS, state={"role": "viewer"})
    assert not viewer.exception and viewer.title[0].value == "Runs" and viewer.dataframe  # signed in, the list shown
    assert not [b for b in viewer.button if b.key == "runs_ds_make"]

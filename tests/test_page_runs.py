"""The runs page through AppTest: counts, filters from the sidebar and from links, paging, opening a run."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from apptest_helpers import FAILED_CODING, demo_db, demo_store, empty_store, page  # noqa: F401  (fixtures)

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
    parts = [f"{icon} {n} {status}" for status, icon in icons.items()
             if flt.status in (None, status) and (n := store.count_sessions(replace(flt, status=status)))]
    return f"**{total} runs**: " + " · ".join(parts)


def test_demo_runs_listed_newest_first(demo_store):
    at = page(RUNS)
    assert not at.exception
    assert at.markdown[0].value == expected_summary(demo_store, SessionFilter())
    assert at.markdown[0].value.startswith("**18 runs**: ⏳ 1 running · ✅ 13 succeeded · ❌ 4 failed")
    assert table_ids(at) == [r["id"] for r in demo_store.list_sessions(limit=25)]
    table = at.dataframe[0].value
    row = table[table["id"] == FAILED_CODING].iloc[0]
    assert (row["Status"], row["Run"], row["Model"], row["Agent"], row["Workflow"], row["Steps"], row["Duration"]) == (
        "❌ failed", "PAY-412: add currency to format_price", "claude-sonnet-4", "coding-agent", "code-change", 25, "26.4 s")
    assert row["Tags"] == "coding, pricing, PAY-412"


def test_sidebar_filters_write_the_link(demo_store):
    at = page(RUNS)
    at.selectbox(key="_url_status").set_value("failed").run()
    assert at.query_params["status"] == "failed"
    failed = [r["id"] for r in demo_store.list_sessions(SessionFilter(status="failed"))]
    assert table_ids(at) == failed
    assert at.markdown[0].value == "**4 runs**: ❌ 4 failed"
    at.selectbox(key="_url_model").set_value("gpt-4o").run()
    assert table_ids(at) == [r["id"] for r in demo_store.list_sessions(SessionFilter(status="failed", model="gpt-4o"))]
    at.selectbox(key="_url_status").set_value("succeeded").run()
    assert at.query_params["status"] == "succeeded"
    assert at.markdown[0].value == expected_summary(demo_store, SessionFilter(status="succeeded", model="gpt-4o"))


def test_text_search_looks_inside_steps(demo_store):
    at = page(RUNS, params={"q": "unexpected keyword argument"})
    assert table_ids(at) == [FAILED_CODING]
    assert at.text_input(key="q").value == "unexpected keyword argument"
    cell = at.dataframe[0].value["Matched step"].iloc[0]  # the matched step, its snippet as plain text
    seq = demo_store.search_matches([FAILED_CODING], "unexpected keyword argument")[FAILED_CODING]["seq"]
    assert cell.startswith(f"{seq}: ") and "«unexpected» «keyword» «argument»" in cell


def test_a_shared_link_applies_every_filter(demo_store):
    params = {"status": "succeeded", "tag": "travel", "agent_id": "trip-planner", "since": "2000-01-01"}
    at = page(RUNS, params=params)
    flt = filter_from_params(params)
    assert table_ids(at) == [r["id"] for r in demo_store.list_sessions(flt)]
    assert len(table_ids(at)) == 1
    assert at.selectbox(key="_url_tag").value == "travel"
    assert filter_params(flt) == params | {"since": "2000-01-01"}


def test_date_range_and_review_filters(demo_store):
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    at = page(RUNS, params={"since": tomorrow})
    assert at.info[0].value == "No run matches these filters. Clear a filter in the sidebar to see more."
    demo_store.annotate(FAILED_CODING, "bad", "wrong signature")
    at = page(RUNS, params={"review": "bad"})
    assert table_ids(at) == [FAILED_CODING]
    assert at.dataframe[0].value["Review"].tolist() == ["👎 Bad"]
    at = page(RUNS, params={"review": "unreviewed"})
    assert FAILED_CODING not in table_ids(at)
    assert len(table_ids(at)) == 17


def test_paging_happens_in_the_database(empty_store):
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    ingest(empty_store, [SessionEvent(session_id=f"run-{i:02d}", name=f"run {i}", started_at=t0 + timedelta(hours=i))
                         for i in range(60)])
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


def test_drill_down_filters_from_analytics_links(demo_store):
    for params in ({"failed_tool": "run_tests"}, {"error_class": "TestFailure"}, {"has": "retry"}, {"source": "demo"}):
        at = page(RUNS, params=params)
        assert not at.exception
        assert table_ids(at) == [r["id"] for r in demo_store.list_sessions(filter_from_params(params))], params
        assert at.expander[0].label == "More filters"
    assert table_ids(page(RUNS, params={"failed_tool": "run_tests"})) == [FAILED_CODING]
    assert len(table_ids(page(RUNS, params={"has": "retry"}))) == len(demo_store.session_ids(SessionFilter(has="retry")))

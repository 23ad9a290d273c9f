"""The threads page through AppTest: the latest conversations, one conversation's runs in order with its totals,
a run opening its timeline; reached from the runs list (a click on a run's thread, the thread filter) and
analytics' cost by user."""

from __future__ import annotations

from apptest_helpers import each_empty_store, empty_store, metric_cards, page, texts  # noqa: F401  (fixtures)
from test_threads import _turns

from ui.common import md

THREADS = "pages/threads.py"


def test_the_latest_threads_and_one_opened(each_empty_store):
    """On both databases: the threads' order, their runs' and their totals are read by SQL."""
    _turns(each_empty_store)
    at = page(THREADS)
    assert not at.exception
    assert at.title[0].value == "Threads"
    table = at.dataframe[0].value
    assert list(table["Thread"]) == ["sales-9", "support-1"] and list(table["Runs"]) == [1, 3]
    at.session_state["threads_table"] = {"selection": {"rows": [1], "columns": [], "cells": []}}
    at.run()
    assert not at.exception and at.query_params["thread"] == "support-1"
    assert at.title[0].value == "Thread" and at.text[0].value == "support-1"
    assert list(at.dataframe[0].value["id"]) == ["turn-1", "turn-2", "turn-3"]  # oldest first
    cards = {c["label"]: c["value"] for c in metric_cards(at, "thread_totals")}
    assert (cards["Runs"], cards["Failed"], cards["Tokens"], cards["Cost"]) == ("3", "1", "330", "$0.7500")
    assert md("2 users: ana, bo") in texts(at)


def test_a_run_of_the_thread_opens_its_timeline(empty_store):
    _turns(empty_store)
    at = page(THREADS, params={"thread": "support-1"})
    at.session_state["thread_runs"] = {"selection": {"rows": [], "columns": [], "cells": [[1, "Run"]]}}
    at.run()
    assert not at.exception
    assert at.query_params["session"] == "turn-2"


def test_an_unknown_thread_says_where_threads_come_from(empty_store):
    at = page(THREADS, params={"thread": "nobody"})
    assert not at.exception
    assert "No run has this thread" in at.info[0].value


def test_no_threads_yet(empty_store):
    at = page(THREADS)
    assert not at.exception and "No run belongs to a thread yet" in at.info[0].value


def test_the_runs_list_opens_a_runs_thread_and_filters_by_user(empty_store):
    _turns(empty_store)
    at = page("pages/runs.py", params={"user_id": "ana"})
    assert not at.exception
    table = at.dataframe[0].value
    assert sorted(table["id"]) == ["turn-1", "turn-2"] and set(table["User"]) == {"ana"}
    at.session_state["runs_table"] = {"selection": {"rows": [], "columns": [], "cells": [[0, "Thread"]]}}
    at.run()
    assert not at.exception
    assert at.title[0].value == "Thread" and at.query_params["thread"] == "support-1"


def test_analytics_cost_by_user(empty_store):
    _turns(empty_store)
    at = page("pages/analytics.py", params={"since": "2026-08-01"}, state={"charts": "Speed and cost", "cost_by_kept": "user"})
    assert not at.exception, at.exception
    assert "The costliest users first (4 of 4)" in texts(at)


def test_a_runs_timeline_names_its_user_and_links_its_thread(empty_store):
    _turns(empty_store)
    at = page("pages/timeline.py", params={"session": "turn-2"})
    assert not at.exception
    assert any("User: " in c.value for c in at.caption)
    (link,) = [p for p in at.get("page_link") if "Thread support" in p.proto.label]
    assert link.proto.page == "threads" and link.proto.query_string == "thread=support-1"

"""A scheduled experiment run cut by a stop of its server (SQLite and PostgreSQL): left `running` while its
lease is renewed, marked `interrupted` with why once the lease lapsed, shown so by the CLI and the
Experiments page, and run again by the next pass, resuming its experiment."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from apptest_helpers import empty_store, page, texts  # noqa: F401  (fixtures)
from cli_helpers import run_main
from experiment_cases import make_cases
from test_eval_loop import T0, reviewed_queue

from replay_core.monitors import loop
from replay_core.whatif.replay_config import RECORDED

CUT = T0 + timedelta(hours=25)  # the second daily run starts, and its server stops


def scheduled(store) -> dict:
    make_cases(store, 4)
    loop.dataset_from_queue(store, reviewed_queue(store, 4, bad={0, 1, 2, 3}), "bad")
    return loop.add_schedule(store, "nightly", "bad", [{"model": RECORDED}])


def cut_short(store, monkeypatch) -> None:
    """The second daily run: its experiment is made, then the server stops (SIGTERM's SystemExit) mid-run."""

    def stopped(*args, **kwargs):
        raise SystemExit(0)

    with monkeypatch.context() as m:
        m.setattr(loop.ex, "run", stopped)
        with pytest.raises(SystemExit):
            loop.run_due(store, CUT)


def cli(monkeypatch, store, *args) -> str:
    ran = run_main(monkeypatch, args, {"AGENT_REPLAY_CLI_ROLE": None, "AGENT_REPLAY_DB_URL": store.url, "COLUMNS": "200"})
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def test_a_run_cut_by_a_stop_is_marked_interrupted_and_the_schedule_runs_again(store, monkeypatch):
    schedule = scheduled(store)
    [first] = loop.run_due(store, T0)
    cut_short(store, monkeypatch)
    cut, _ = store.schedule_runs(schedule["id"])
    assert cut["finished_at"] is None and cut["result"] == {"status": "running"} and cut["experiment_id"]

    # another replica's pass while the run's process still renews its lease: left alone, not run twice
    loop.Lease(store, schedule, CUT + timedelta(minutes=4)).renew()
    assert loop.run_due(store, CUT + timedelta(minutes=5)) == []
    assert loop.summary(store, schedule)["last_status"] == "running"

    # the lease lapsed: interrupted, with why; the CLI says so
    assert loop.interrupt(store, schedule, CUT + timedelta(minutes=4) + loop.LEASE + timedelta(seconds=1))
    assert not loop.interrupt(store, schedule, CUT + timedelta(minutes=30))  # once
    listed = json.loads(cli(monkeypatch, store, "experiment", "schedule", "list", "--json"))
    assert [r["last_status"] for r in listed] == ["interrupted"]
    history = cli(monkeypatch, store, "experiment", "schedule", "history", "nightly")
    assert "a day since the last run → experiment" in history and "(interrupted)" in history
    assert "its server stopped while it ran" in history

    # the next pass runs the schedule again, resuming the cut run's experiment, against the last whole run
    [again] = loop.run_due(store, CUT + timedelta(minutes=20))
    assert again["reason"] == "again after an interrupted run: a day since the last run" and again["status"] == "done"
    assert again["experiment"] == cut["experiment_id"] and again["previous"] == first["experiment"]
    assert [r["result"]["status"] for r in store.schedule_runs(schedule["id"])] == ["done", "interrupted", "done"]
    assert loop.run_due(store, CUT + timedelta(minutes=40)) == []  # done: due again in a day


def test_a_run_left_running_by_a_server_that_stopped_shows_as_interrupted_on_the_page(empty_store, monkeypatch):
    monkeypatch.delenv("AGENT_REPLAY_MODELS", raising=False)
    schedule = scheduled(empty_store)
    loop.run_due(empty_store, T0)
    cut_short(empty_store, monkeypatch)
    assert "(a day since the last run): running" in texts(page("pages/experiments.py"))
    assert loop.interrupt(empty_store, schedule, CUT + loop.LEASE + timedelta(minutes=1))
    shown = texts(page("pages/experiments.py"))
    assert "(a day since the last run): interrupted — its server stopped while it ran" in shown

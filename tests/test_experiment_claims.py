"""An experiment's case × variant is paid for once, however many processes run it: `experiment run`
and `experiment resume` at once (two processes, one database) make one model call per turn of each
case, counted by the local OpenAI server. Budgets are finite amounts above zero, or refused."""

from __future__ import annotations

import math
import subprocess
import sys
import time

import pytest
from experiment_cases import Agent, cli_database, cli_runner, make_cases, refund_dataset, server, variant  # noqa: F401

from replay_core.whatif import dataset as ds
from replay_core.whatif import experiment as ex
from replay_core.whatif.results import summarise

CASES = 12


def test_run_and_resume_at_once_pay_for_each_case_once(store, server, tmp_path):
    ds.create(store, "refunds", [ds.Case(i) for i in make_cases(store, CASES)])
    server.route("fake-a", Agent(server, delay_s=1.0))  # two turns a case: 2 s, two at once: 12 s in all
    experiment_id, _ = ex.start(store, "refunds", [variant(server, "fake-a")], concurrency=2)
    url = store.engine.url.render_as_string(hide_password=False)
    command = [sys.executable, "-m", "replay_core.cli", "experiment", "resume", experiment_id, "--json", "--db", url]
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while server.count() < 2 and time.monotonic() < deadline:  # the first is paying for cases
        time.sleep(0.02)
    second = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for proc in (first, second):
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err.decode()
    assert server.count() == 2 * CASES  # each case's two turns, once
    runs = store.experiment_runs(experiment_id)
    assert len(runs) == CASES and all(r["state"] == "done" and r["attempts"] == 1 for r in runs), [
        (r["state"], r["attempts"], r["outcome"], r["error_class"]) for r in runs
    ]
    shown = summarise(store, experiment_id)
    assert shown["status"] == "done"
    spent = sum(r["cost_usd"] for r in runs)
    assert math.isclose(sum(v["cost_usd"] for v in shown["variants"]), spent)  # what was shown is what was paid


def test_a_claim_held_by_a_live_runner_is_waited_for_and_a_lapsed_one_taken(store, monkeypatch):
    ds.create(store, "refunds", [ds.Case(i) for i in make_cases(store, 1)])
    experiment_id, _ = ex.start(store, "refunds", [ex.ReplayConfig(model="recorded")])
    assert store.claim_experiment_run(experiment_id, "refund-0", 0, lease_s=30) == "claimed"
    assert store.claim_experiment_run(experiment_id, "refund-0", 0, lease_s=30) == "held"  # another runner has it
    assert store.claim_experiment_run(experiment_id, "refund-0", 0, lease_s=-1) == "held"
    store.renew_experiment_runs(experiment_id, [("refund-0", 0)], lease_s=-1)  # its runner died: the lease lapses
    assert store.claim_experiment_run(experiment_id, "refund-0", 0, lease_s=30) == "claimed"
    assert store.experiment_runs(experiment_id)[0]["attempts"] == 2
    store.finish_experiment_run(experiment_id, "refund-0", 0, outcome="completed", passed=1, scores=[])
    assert store.claim_experiment_run(experiment_id, "refund-0", 0, lease_s=30) == "done"


@pytest.mark.parametrize("budget", ["nan", "inf", "-inf", "0", "-1"])
def test_a_budget_that_is_no_finite_amount_above_zero_is_refused(tmp_path, budget, server):
    cli = cli_runner(cli_database(tmp_path, refund_dataset(1)))
    model = ["--model", "openai/fake-a", "--api-base", server.base_url, "--input-cost-per-token", "1e-6"]
    refused = cli("experiment", "run", "refunds", *model, "--output-cost-per-token", "1e-6", "--budget-usd", budget, ok=False)
    assert "--budget-usd: expected a finite amount above 0" in refused.stderr, refused.stderr
    assert server.count() == 0


@pytest.mark.parametrize("budget", [math.nan, math.inf, 0.0, -2.0])
def test_the_library_refuses_such_budgets_to_start_and_to_resume(store, server, budget):
    ds.create(store, "refunds", [ds.Case(i) for i in make_cases(store, 1)])
    with pytest.raises(ex.ExperimentError, match="--budget-usd: expected a finite amount above 0"):
        ex.start(store, "refunds", [variant(server, "fake-a")], budget_usd=budget)
    experiment_id, _ = ex.start(store, "refunds", [variant(server, "fake-a")])
    with pytest.raises(ex.ExperimentError, match="--budget-usd: expected a finite amount above 0"):
        ex.run(store, experiment_id, budget_usd=budget)
    assert server.count() == 0

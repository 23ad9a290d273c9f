"""An experiment's case × variant is paid for once, however many processes run it: `experiment resume`
in a process of its own and a runner in the test's process at once (one database, nothing else shared)
make one model call per turn of each case, counted by the local OpenAI server. Budgets are finite
amounts above zero, or refused."""

from __future__ import annotations

import math
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from experiment_cases import (
    Agent,
    cli_database,
    cli_runner,
    make_cases,
    refund_dataset,
    server,  # noqa: F401  (a fixture)
    variant,
    wait_for,
)

from replay_core.storage.store import Store
from replay_core.whatif import dataset as ds
from replay_core.whatif import experiment as ex
from replay_core.whatif.results import summarise

CASES = 12


def test_run_and_resume_at_once_pay_for_each_case_once(store, server, tmp_path):
    """The model answers no one until both runners have two cases in flight: they overlap for sure, whatever
    the load. The second runs in this process with its own store: a second program's start (seconds of
    imports) would add nothing the claims depend on."""
    ds.create(store, "refunds", [ds.Case(i) for i in make_cases(store, CASES)])
    both_in = threading.Event()
    agent = Agent(server)
    server.route("fake-a", lambda payload: both_in.wait(120) and agent(payload))
    experiment_id, _ = ex.start(store, "refunds", [variant(server, "fake-a", request_timeout_s=150)], concurrency=2)
    url = store.engine.url.render_as_string(hide_password=False)
    command = [sys.executable, "-m", "replay_core.cli", "experiment", "resume", experiment_id, "--json", "--db", url]
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with ThreadPoolExecutor(1) as pool:
        assert wait_for(lambda: server.count() >= 2, "the first runner's two cases in flight", timeout=120)
        second = Store(url)
        ran = pool.submit(ex.run, second, experiment_id)
        try:
            assert wait_for(lambda: server.count() >= 4, "the second runner's two cases in flight", timeout=120)
        finally:
            both_in.set()
        assert ran.result(timeout=180) == "done"
        second.close()
    _, err = first.communicate(timeout=180)
    assert first.returncode == 0, err.decode()
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
def test_a_budget_that_is_no_finite_amount_above_zero_is_refused(tmp_path, budget, server, monkeypatch):
    cli = cli_runner(monkeypatch, cli_database(tmp_path, refund_dataset(1)))
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

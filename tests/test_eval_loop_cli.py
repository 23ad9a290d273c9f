"""`agent-replay dataset from-queue`, `experiment schedule …` and `monitor webhook` on a real database, called
in this process as the program calls them."""

from __future__ import annotations

import json

import pytest
from cli_helpers import run_main
from experiment_cases import make_cases
from test_eval_loop import reviewed_queue

from replay_core.storage.store import Store


@pytest.fixture
def db(tmp_path):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    store = Store(url)
    make_cases(store, 4)
    reviewed_queue(store, 4, bad={1, 3})
    store.close()
    return url


@pytest.fixture
def cli(db, monkeypatch):
    def run(*args, ok=True, env=None):
        proc = run_main(
            monkeypatch, args, {"AGENT_REPLAY_CLI_ROLE": None, "AGENT_REPLAY_DB_URL": db, "COLUMNS": "200", **(env or {})}
        )
        assert (proc.returncode == 0) == ok, proc.stderr
        return proc

    return run


def test_a_queue_dataset_a_schedule_its_runs_and_history(cli):
    made = json.loads(cli("dataset", "from-queue", "1", "--name", "bad", "--bad-only", "--json").stdout)
    assert (made["name"], made["version"], made["cases"]) == ("bad", 1, 2)
    assert "4 cases" in cli("dataset", "from-queue", "1", "--name", "all").stdout
    fed = cli("dataset", "from-queue", "1", "--name", "fed", "--continuous").stdout
    assert "queue 1 feeds dataset fed: every new Bad verdict; now 2 cases (version 1)" in fed
    said = cli("experiment", "schedule", "add", "nightly", "--dataset", "bad", "--model", "recorded").stdout
    assert "schedule 1 nightly: bad, once a day; alerts on monitor 'experiment nightly'" in said
    ran = cli("experiment", "schedule", "run-due").stdout
    assert "nightly: first run → experiment exp-" in ran and "pass rate 100%" in ran
    assert cli("experiment", "schedule", "run-due").stdout.strip() == "no schedule is due"
    (row,) = json.loads(cli("experiment", "schedule", "list", "--json").stdout)
    assert (row["name"], row["trigger"], row["last_status"], row["variants"]) == ("nightly", "daily", "done", ["recorded"])
    (run,) = json.loads(cli("experiment", "schedule", "history", "nightly", "--json").stdout)
    assert run["reason"] == "first run" and run["result"]["variants"][0]["cases"] == 2
    assert "first run" in cli("experiment", "schedule", "history", "1").stdout
    assert "no schedule 'x'" in cli("experiment", "schedule", "history", "x", ok=False).stderr
    refused = cli(
        "experiment", "schedule", "add", "s", "--dataset", "bad", "--model", "recorded", "--trigger", "weekly", ok=False
    )
    assert "trigger: expected one of daily, dataset_version, new_model" in refused.stderr
    refused = cli("dataset", "from-queue", "1", "--bad-only", "--verdict", "Terrible", ok=False)
    assert "verdicts: expected some of this queue's verdicts (Good, Bad, Needs attention)" in refused.stderr


def test_viewers_cannot_schedule_and_the_release_monitor_takes_a_webhook(cli):
    viewer = {"AGENT_REPLAY_CLI_ROLE": "viewer"}
    assert cli("experiment", "schedule", "add", "s", "--dataset", "x", "--model", "recorded", ok=False, env=viewer).returncode
    assert cli("dataset", "from-queue", "1", ok=False, env=viewer).returncode
    said = cli("monitor", "webhook", "release agent_version", "https://hooks.invalid/r", "--webhook-secret-env", "HOOK_KEY")
    assert "release agent_version: alerts go to https://hooks.invalid/r" in said.stdout
    shown = json.loads(cli("monitor", "show", "release agent_version", "--json").stdout)
    assert (shown["webhook_url"], shown["webhook_secret_env"]) == ("https://hooks.invalid/r", "HOOK_KEY")
    assert "release agent_version: no webhook" in cli("monitor", "webhook", "release agent_version").stdout
    assert "webhook: expected an http(s) address" in cli("monitor", "webhook", "1", "mailto:x", ok=False).stderr

"""Experiments judge honestly: a model that cannot reach its provider is refused before launch (library, CLI,
HTTP), naming the missing key and the fix; a case whose provider gave no answer is not scored; the default
`outcome` scorer never takes a failed original's answer as right unless a reviewer said so."""

from __future__ import annotations

import pytest
from experiment_cases import cli_database, cli_runner, make_cases, refund_dataset
from starlette.testclient import TestClient

from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.storage.store import SessionFilter
from replay_core.whatif import dataset as ds
from replay_core.whatif import experiment as ex
from replay_core.whatif.reach import launch_problems, not_scored_reason
from replay_core.whatif.replay_config import ReplayConfig
from replay_core.whatif.results import summarise

KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


@pytest.fixture
def no_keys(monkeypatch):
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)


def test_a_model_without_its_key_is_refused_before_anything_runs(store, no_keys):
    make_cases(store, 2)
    ds.create(store, "refunds", [ds.Case("refund-0"), ds.Case("refund-1")])
    configs = [ReplayConfig(model="openai/gpt-4o-mini"), ReplayConfig(model="anthropic/claude-3-5-haiku-20241022")]
    with pytest.raises(ex.ExperimentError) as refused:
        ex.start(store, "refunds", configs)
    said = str(refused.value)
    assert "openai/gpt-4o-mini cannot run" in said and "export OPENAI_API_KEY=" in said
    assert "anthropic/claude-3-5-haiku-20241022 cannot run" in said and "export ANTHROPIC_API_KEY=" in said
    assert store.list_experiments() == []  # nothing stored, nothing launched
    # the run's own answers need no key; a fallback does
    assert launch_problems([ReplayConfig(model="recorded")]) == []
    assert "OPENAI_API_KEY" in launch_problems([ReplayConfig(model="recorded", fallback_model="openai/gpt-4o-mini")])[0]


def test_an_api_base_that_answers_is_enough_and_one_that_does_not_is_named(no_keys):
    stopped = "http://127.0.0.1:9/v1"  # the discard port: nothing listens
    problems = launch_problems([ReplayConfig(model="openai/gpt-4o-mini", api_base=stopped)])
    assert len(problems) == 1 and "does not answer" in problems[0] and stopped in problems[0]


def test_cli_experiment_run_exits_non_zero_naming_the_key(tmp_path, no_keys, monkeypatch):
    cli = cli_runner(monkeypatch, cli_database(tmp_path, refund_dataset(2)))
    proc = cli("experiment", "run", "refunds", "--model", "openai/gpt-4o-mini", ok=False)
    assert "OPENAI_API_KEY" in proc.stderr and "export" in proc.stderr
    assert "pass" not in proc.stdout  # no results table of a run that never happened
    assert cli("experiment", "list", "--json").stdout.strip() == "[]"


def test_api_launch_is_a_422_naming_the_key(sqlite_store, no_keys):
    make_cases(sqlite_store, 1)
    ds.create(sqlite_store, "refunds", [ds.Case("refund-0")])
    with TestClient(create_app(sqlite_store, access=Access(api_tokens=("t0ken",)))) as client:
        got = client.post(
            "/api/v1/experiments",
            headers={"Authorization": "Bearer t0ken"},
            json={"dataset": "refunds", "models": ["openai/gpt-4o-mini"]},
        )
    assert got.status_code == 422 and "OPENAI_API_KEY" in got.json()["detail"], got.text
    assert sqlite_store.list_experiments() == []


def test_outcome_never_takes_a_failed_originals_answer_as_right_unless_reviewed(store):
    make_cases(store, 2, status="failed")
    store.annotate("refund-1", "good", "the refund was right; the run failed after answering")
    ds.create(store, "failed", [ds.Case("refund-0"), ds.Case("refund-1")])
    eid, _ = ex.start(store, "failed", [ReplayConfig(model="recorded")])
    assert ex.run(store, eid) == "done"
    out = summarise(store, eid)
    cells = {row["case"]: row["cells"][0] for row in out["matrix"]}
    unreviewed, reviewed = cells["refund-0"], cells["refund-1"]
    # the replay reproduced the failed run's answer word for word: not right, and the scorer says why
    assert unreviewed["verdict"] == "fail"
    assert unreviewed["scores"][0]["reason"].startswith("nothing to compare with: the original ended failed")
    assert "expected outcome" in unreviewed["scores"][0]["reason"]
    assert reviewed["verdict"] == "pass"
    assert reviewed["scores"][0]["details"]["reference"] == "the original's final answer (a reviewer marked it good)"
    assert (out["variants"][0]["cases"], out["variants"][0]["passed"]) == (2, 1)


def test_rows_stored_before_the_rule_are_read_as_not_scored():
    old = {"outcome": "provider_error", "error_class": "auth", "passed": 0, "scores": [{"name": "outcome", "passed": False}]}
    assert not_scored_reason(old) == "not scored (provider error: the model refused the credentials)"
    assert not_scored_reason({"outcome": "final_answer", "error_class": None, "passed": 0, "scores": []}) is None


def test_cli_replay_refuses_a_model_without_its_key_and_says_what_a_replay_did(sqlite_store, no_keys):
    from openai_server import OpenAIServer
    from typer.testing import CliRunner

    from replay_core.cli import app
    from replay_core.demo import load_demo

    load_demo(sqlite_store, only_if_empty=False)
    coding = "demo-02-coding-format-price-failed"
    res = CliRunner().invoke(app, ["replay", coding, "--model", "openai/gpt-4o-mini", "--db", sqlite_store.url])
    assert res.exit_code == 1 and "export OPENAI_API_KEY=" in str(res.exception)
    assert sqlite_store.count_sessions(SessionFilter(replay_of=coding)) == 0  # nothing ran
    with OpenAIServer() as server:
        server.script(server.text("Stopping here."))
        args = ["replay", coding, "--from", "8", "--model", "openai/m", "--api-base", server.base_url, "--db", sqlite_store.url]
        res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "answered, diverged from the original at step 8" in res.stdout and "scorer" in res.stdout
    assert "succeeded" not in res.stdout

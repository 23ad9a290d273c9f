"""Experiments through litellm against the scripted local server: pass counts, intervals, regressions,
scorers (judge, custom), resume without paying twice, budgets, failing providers, CLI JSON."""

from __future__ import annotations

import json
import threading
from collections import Counter

import pytest
from experiment_cases import (
    PRICE,
    Agent,
    case_number,
    cli_database,
    cli_runner,
    make_cases,
    refund_dataset,  # noqa: F401
    server,  # noqa: F401  (a fixture)
    variant,
)

from replay_core.storage.store import SessionFilter
from replay_core.whatif import dataset as ds
from replay_core.whatif import experiment as ex
from replay_core.whatif.replay_config import ReplayConfig
from replay_core.whatif.results import summarise, to_csv, wilson
from replay_core.whatif.scorers import SCORERS, Score, scorer


def refunds(store, n: int = 10) -> list[str]:
    ids = make_cases(store, n)
    ds.create(store, "refunds", [ds.Case(i) for i in ids])
    return ids


def per_case(server, model: str) -> Counter:
    return Counter(case_number(p) for p in server.requests if p.get("model") == model)


def test_pass_counts_intervals_regressions_and_improvements(store, server):
    refunds(store)
    server.route("fake-a", Agent(server, wrong=lambda i: i == 9))
    server.route("fake-b", Agent(server, wrong=lambda i: i % 3 == 0))
    server.route("fake-c", Agent(server, wrong=lambda i: i in (1, 2)))
    eid, plan = ex.start(store, "refunds", [variant(server, m) for m in ("fake-a", "fake-b", "fake-c")], concurrency=3)
    assert [e.turns for e in plan.estimates] == [20, 20, 20] and plan.estimates[0].cost_usd is not None
    assert ex.run(store, eid) == "done"
    out = summarise(store, eid)
    got = [(v["model"], v["cases"], v["passed"], v["pass_rate"], v["ci"]) for v in out["variants"]]
    assert got == [
        ("openai/fake-a", 10, 9, 0.9, [0.5958, 0.9821]),
        ("openai/fake-b", 10, 6, 0.6, [0.3127, 0.8318]),
        ("openai/fake-c", 10, 8, 0.8, [0.4902, 0.9433]),
    ]  # published Wilson 95 % bounds
    assert [(r["case"], r["variant"]) for r in out["regressions"]] == [
        ("refund-0", "openai/fake-b"),
        ("refund-3", "openai/fake-b"),
        ("refund-6", "openai/fake-b"),
        ("refund-1", "openai/fake-c"),
        ("refund-2", "openai/fake-c"),
    ]
    assert [(r["case"], r["variant"]) for r in out["improvements"]] == [("refund-9", "openai/fake-c")]
    reg = out["regressions"][0]
    assert reg["reason"] == (
        "final answer “Refund refused for order A-0.” differs from it: “Refund approved for order A-0.” "
        "(compared with the original's final answer)"
    )
    base = store.get_session(reg["baseline"])
    assert (base["replay_of"], base["source"], f"experiment:{eid}" in base["tags"]) == ("refund-0", "experiment", True)
    # every case × variant asked exactly twice (look the order up, then answer); costs from the given prices
    assert all(per_case(server, m) == Counter({i: 2 for i in range(10)}) for m in ("fake-a", "fake-b", "fake-c"))
    a = out["variants"][0]
    assert (a["tokens_in"], a["tokens_out"], a["cost_usd"]) == (600, 200, pytest.approx(10 * 2 * (30e-6 + 20e-6)))
    assert a["p50_ms"] is not None and a["p95_ms"] >= a["p50_ms"]
    # the recorded thought was retraced word for word; the wrong answers depart at the decision (step 5)
    assert out["variants"][0]["departed_at"] == {"5": 1} and out["variants"][1]["departed_at"] == {"5": 4}
    # replays stay out of ordinary lists
    assert store.count_sessions() == 10 and store.count_sessions(SessionFilter(experiments=True)) == 40
    rows = to_csv(out).splitlines()
    assert rows[0].startswith("case,variant,state,verdict,passed,replay_session") and len(rows) == 31
    assert rows[1].startswith("refund-0,openai/fake-a,done,pass,True,")


def test_expected_texts_with_a_contains_rule_and_the_other_scorers(sqlite_store, server):
    store = sqlite_store
    make_cases(store, 4)
    ds.create(
        store,
        "rules",
        [ds.Case("refund-0", "approved"), ds.Case("refund-1", "approved"), ds.Case("refund-2"), ds.Case("refund-3", "refused")],
        match="contains",
    )
    server.route("fake-a", Agent(server, wrong=lambda i: i == 1))
    eid, _ = ex.start(
        store,
        "rules",
        [variant(server, "fake-a")],
        scorers=["outcome", "final_tool", "tool_sequence", "no_divergence", "cost_ceiling", "latency_ceiling"],
        scorer_options={"cost_ceiling": {"usd": 1e-4}, "latency_ceiling": {"ms": 60_000}, "tool_sequence": {"threshold": 1.0}},
    )
    ex.run(store, eid)
    cells = [row["cells"][0] for row in summarise(store, eid)["matrix"]]
    verdicts = [{s["name"]: s["passed"] for s in c["scores"]} for c in cells]
    assert [v["outcome"] for v in verdicts] == [True, False, True, False]
    assert all(v["final_tool"] and v["tool_sequence"] and v["cost_ceiling"] and v["latency_ceiling"] for v in verdicts)
    assert [v["no_divergence"] for v in verdicts] == [True, False, True, True]
    assert cells[3]["scores"][0]["reason"] == (
        "final answer “Refund approved for order A-3.” does not contain “refused” (compared with the expected outcome)"
    )
    assert [c["passed"] for c in cells] == [True, False, True, False]


def test_a_judge_through_litellm_and_a_custom_scorer(sqlite_store, server):
    store = sqlite_store
    refunds(store, 4)
    server.route("fake-a", Agent(server, wrong=lambda i: i == 2))

    def grade(payload):
        prompt = payload["messages"][0]["content"]
        ok = "Refund approved" in prompt.split("The agent's final answer:")[1]
        return server.text(json.dumps({"pass": ok, "reason": "approved as expected" if ok else "it refused"}), usage=(200, 20))

    server.route("judge", grade)

    @scorer("short_answer")
    def short_answer(inp):
        text = inp.replay_steps[-1].content or ""
        return Score("short_answer", "refused" not in text, f"{len(text)} characters")

    try:
        eid, _ = ex.start(
            store,
            "refunds",
            [variant(server, "fake-a")],
            scorers=["judge", "short_answer"],
            scorer_options={
                "judge": {
                    "model": "openai/judge",
                    "api_base": server.base_url,
                    **PRICE,
                    "rubric": "Approve refunds of delivered orders.",
                }
            },
        )
        ex.run(store, eid)
    finally:
        SCORERS.pop("short_answer")
    out = summarise(store, eid)
    judged = [row["cells"][0]["scores"][0] for row in out["matrix"]]
    assert [j["passed"] for j in judged] == [True, True, False, True]
    assert judged[2]["reason"] == "judge openai/judge: it refused"
    assert (
        judged[0]["details"]["model"] == "openai/judge"
        and "Rubric: Approve refunds of delivered orders." in judged[0]["details"]["prompt"]
    )
    assert judged[0]["cost_usd"] == pytest.approx(200e-6 + 40e-6)
    assert server.count("judge") == 4
    custom = [row["cells"][0]["scores"][1] for row in out["matrix"]]
    assert [c["passed"] for c in custom] == [True, True, False, True] and custom[0]["reason"] == "30 characters"
    assert custom[2]["reason"] == "29 characters"
    assert out["variants"][0]["scoring_cost_usd"] == pytest.approx(4 * 240e-6)


def test_a_broken_custom_scorer_fails_its_cases_with_the_error(sqlite_store, server, tmp_path, monkeypatch):
    store = sqlite_store
    refunds(store, 2)
    server.route("fake-a", Agent(server))
    (tmp_path / "team_scorers.py").write_text("def boom(inp):\n    raise RuntimeError('no grader')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ex.ExperimentError, match="scorer 'nope': unknown"):
        ex.start(store, "refunds", [variant(server, "fake-a")], scorers=["nope"])
    eid, _ = ex.start(store, "refunds", [variant(server, "fake-a")], scorers=["outcome", "team_scorers:boom"])
    ex.run(store, eid)
    cell = summarise(store, eid)["matrix"][0]["cells"][0]
    assert cell["passed"] is False and cell["scores"][1] == {
        "name": "team_scorers:boom",
        "passed": False,
        "reason": "scorer raised RuntimeError: no grader",
    }
    SCORERS.pop("team_scorers:boom")


def test_interrupted_then_resumed_runs_every_case_exactly_once(store, server):
    refunds(store, 8)
    server.route("fake-a", Agent(server, delay_s=0.02))
    server.route("fake-b", Agent(server, wrong=lambda i: i < 2, delay_s=0.02))
    eid, _ = ex.start(store, "refunds", [variant(server, "fake-a"), variant(server, "fake-b")], concurrency=2)
    stop = threading.Event()

    def progress(p):
        if sum(p.done) >= 5:
            stop.set()

    assert ex.run(store, eid, stop=stop, on_progress=progress) == "stopped"
    first = summarise(store, eid)
    assert first["status"] == "stopped" and 5 <= first["progress"]["done"] < 16 and first["progress"]["running"] == 0
    assert first["message"].endswith("case × variant runs not started; resume to run them")
    asked_before = server.count()
    assert ex.run(store, eid) == "done"
    out = summarise(store, eid)
    assert [(v["cases"], v["passed"]) for v in out["variants"]] == [(8, 8), (8, 6)]
    assert per_case(server, "fake-a") == per_case(server, "fake-b") == Counter({i: 2 for i in range(8)})  # never paid twice
    assert server.count() == 32 and asked_before < 32
    assert ex.run(store, eid) == "done" and server.count() == 32  # a finished experiment runs nothing


def test_a_replay_left_running_by_a_dead_process_is_run_again(sqlite_store, server):
    store = sqlite_store
    refunds(store, 2)
    server.route("fake-a", Agent(server))
    eid, _ = ex.start(store, "refunds", [variant(server, "fake-a")])
    assert store.claim_experiment_run(eid, "refund-1", 0, lease_s=0.5) == "claimed"  # as a process that died mid-replay
    ex.run(store, eid)  # waits for the claim to lapse, then takes it
    runs = {r["case_session"]: r for r in store.experiment_runs(eid)}
    assert (runs["refund-0"]["attempts"], runs["refund-1"]["attempts"]) == (1, 2)
    assert all(r["state"] == "done" for r in runs.values()) and server.count() == 4


def test_the_budget_is_checked_before_launch(sqlite_store, server):
    store = sqlite_store
    refunds(store, 4)
    server.route("fake-a", Agent(server))
    configs = [variant(server, "fake-a")]
    [est] = ex.plan(store, "refunds", configs).estimates
    with pytest.raises(ex.ExperimentError, match=r"the estimate, \$0\.00\d+, is over the budget of \$0\.0001"):
        ex.start(store, "refunds", configs, budget_usd=0.0001)
    with pytest.raises(ex.ExperimentError, match="is over the budget of 10 tokens"):
        ex.start(store, "refunds", configs, budget_tokens=10)
    unpriced = ReplayConfig(model="openai/fake-a", api_base=server.base_url)
    with pytest.raises(ex.ExperimentError, match="--budget-usd cannot be checked: no price for openai/fake-a"):
        ex.start(store, "refunds", [unpriced], budget_usd=10)
    assert store.list_experiments() == [] and server.count() == 0
    assert est.cost_usd > 0


def test_the_budget_stops_an_experiment_that_costs_more_than_estimated(sqlite_store, server):
    store = sqlite_store
    refunds(store, 10)
    server.route("fake-a", Agent(server, usage=(2000, 500)))  # far more tokens than the recording suggests
    configs = [variant(server, "fake-a")]
    [est] = ex.plan(store, "refunds", configs).estimates
    budget = round(est.cost_usd * 1.5, 6)
    eid, _ = ex.start(store, "refunds", configs, budget_usd=budget, concurrency=1)
    assert ex.run(store, eid) == "budget"
    out = summarise(store, eid)
    per_call = 2000e-6 + 1000e-6
    spent = sum(r["cost_usd"] for r in store.experiment_runs(eid))
    assert spent <= budget + per_call  # one call in flight may pass it
    assert out["progress"]["done"] < 10 and out["variants"][0]["pending"] == 10 - out["progress"]["done"]
    assert out["message"].startswith("budget spent ($") and "resume with a higher budget" in out["message"]
    asked = server.count()
    assert ex.run(store, eid, budget_usd=1.0) == "done"  # more money: only the rest runs
    assert summarise(store, eid)["progress"]["done"] == 10
    assert set(per_case(server, "fake-a")) == set(range(10)) and server.count() > asked
    assert all(n <= 2 for n in per_case(server, "fake-a").values())


def test_one_provider_failing_while_the_other_completes(sqlite_store, server):
    store = sqlite_store
    refunds(store, 6)
    server.route("fake-a", Agent(server))

    def failing(payload):
        i = case_number(payload)
        if i % 3 == 0:
            return server.error(429, "slow down", "rate_limit_error")
        if i % 3 == 1:
            return server.error(500, "upstream broke")
        reply = server.text("late")
        reply.delay_s = 4.0  # twice the timeout: a loaded machine's slow answers to the others stay in time
        return reply

    server.route("fake-b", failing)
    eid, _ = ex.start(
        store, "refunds", [variant(server, "fake-a"), variant(server, "fake-b", retries=1, request_timeout_s=2.0)], concurrency=4
    )
    assert ex.run(store, eid) == "done"
    out = summarise(store, eid)
    a, b = out["variants"]
    assert (a["cases"], a["passed"]) == (6, 6)
    # no answer from the provider says nothing about the model: not scored, kept out of the pass rate
    assert (b["cases"], b["passed"], b["pass_rate"], b["not_scored"]) == (0, 0, None, 6)
    reasons = {r["case"]: r["reason"] for r in b["not_scored_reasons"]}
    assert reasons["refund-0"] == "not scored (provider error: openai is refusing requests for now (too many requests))"
    assert reasons["refund-2"] == "not scored (provider error: openai did not answer in time)"
    classes = {r["case_session"]: r["error_class"] for r in store.experiment_runs(eid) if r["variant"] == 1}
    assert classes == {
        "refund-0": "rate_limit",
        "refund-3": "rate_limit",
        "refund-1": "server_error",
        "refund-4": "server_error",
        "refund-2": "timeout",
        "refund-5": "timeout",
    }
    assert out["regressions"] == []
    assert {c["cells"][1]["verdict"] for c in out["matrix"]} == {
        "not scored (provider error: openai is refusing requests for now (too many requests))",
        "not scored (provider error: openai had a server error)",
        "not scored (provider error: openai did not answer in time)",
    }
    assert per_case(server, "fake-b")[0] == 2  # one retry on the rate limit, no more


def test_cli_experiment_run_json_shape(tmp_path, server, monkeypatch):
    cli = cli_runner(monkeypatch, cli_database(tmp_path, refund_dataset(3)))
    server.route("fake-a", Agent(server))
    server.route("fake-b", Agent(server, wrong=lambda i: i == 1))
    prices = ["--input-cost-per-token", "0.000001", "--output-cost-per-token", "0.000002"]
    proc = cli(
        "experiment",
        "run",
        "refunds",
        "--model",
        "openai/fake-a",
        "--model",
        "openai/fake-b",
        "--api-base",
        server.base_url,
        "--concurrency",
        "2",
        "--json",
    )
    body = json.loads(proc.stdout)
    assert list(body)[:3] == ["experiment", "dataset", "status"] and body["dataset"] == "refunds"
    assert set(body) >= {"experiment", "dataset", "variants", "regressions", "improvements"}
    for v in body["variants"]:
        assert set(v) >= {
            "model",
            "cases",
            "passed",
            "pass_rate",
            "ci",
            "cost_usd",
            "tokens_in",
            "tokens_out",
            "p50_ms",
            "p95_ms",
        }
    assert [(v["model"], v["passed"], v["ci"]) for v in body["variants"]] == [
        ("openai/fake-a", 3, list(wilson(3, 3))),
        ("openai/fake-b", 2, list(wilson(2, 3))),
    ]
    assert body["variants"][0]["cost_usd"] is None  # no price given: unknown, not free
    [reg] = body["regressions"]
    assert set(reg) >= {"case", "session", "variant", "baseline"} and (reg["case"], reg["variant"]) == (
        "refund-1",
        "openai/fake-b",
    )
    assert body["improvements"] == []
    shown = json.loads(cli("experiment", "show", body["experiment"], "--json", "--csv", str(tmp_path / "m.csv")).stdout)
    assert shown["variants"] == body["variants"]
    assert (tmp_path / "m.csv").read_text().count("\n") == 7
    listed = json.loads(cli("experiment", "list", "--json").stdout)
    assert [e["experiment"] for e in listed] == [body["experiment"]] and listed[0]["runs_done"] == 6
    table = cli("experiment", "show", body["experiment"]).stdout
    assert (
        "regressions (passed on the baseline, fail here):" in table
        and f"agent-replay compare {reg['baseline']} {reg['session']}" in table
    )
    over = cli(
        "experiment",
        "run",
        "refunds",
        "--model",
        "openai/fake-a",
        "--api-base",
        server.base_url,
        *prices,
        "--budget-usd",
        "0.000001",
        ok=False,
    )
    assert over.stderr.startswith("error: the estimate, $") and "Traceback" not in over.stderr
    assert cli("experiment", "resume", "exp-nope", ok=False).stderr.strip() == "error: no experiment 'exp-nope'"
    assert cli("experiment", "run", "nope", "--model", "x", ok=False).stderr.strip() == "error: no dataset named 'nope'"

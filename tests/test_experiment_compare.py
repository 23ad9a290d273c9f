"""Experiments, continued: two experiments compared, datasets from a selection of runs, live tool
functions, start points by step kind (refused cases counted), and one timeline read per case.
Everything goes through litellm to the scripted local server."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from experiment_cases import (
    START,
    Agent,
    answer,
    case_number,
    cli_database,
    cli_runner,
    make_cases,
    refund_dataset,  # noqa: F401
    server,  # noqa: F401  (a fixture)
    variant,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_core.events import SessionEndEvent, SessionEvent, StepEvent
from replay_core.ingest.pipeline import ingest
from replay_core.storage.store import SessionFilter
from replay_core.whatif import dataset as ds
from replay_core.whatif import experiment as ex
from replay_core.whatif import start_point
from replay_core.whatif.experiment_compare import CompareError, compare_experiments
from replay_core.whatif.results import summarise, wilson


def experiment(store, server, dataset: str, models: list[str], **kw) -> str:
    eid, _ = ex.start(store, dataset, [variant(server, m) for m in models], **kw)
    assert ex.run(store, eid, tools=kw.get("tools")) == "done"
    return eid


# ---------------------------------------------------------------------------- comparing two experiments


def test_two_experiments_compared_per_variant_and_scorer(store, server):
    make_cases(store, 8)
    ds.create(store, "refunds", [ds.Case(f"refund-{i}") for i in range(8)])
    server.route("old-a", Agent(server, wrong=lambda i: i in (0, 1)))
    server.route("old-b", Agent(server))
    a = experiment(store, server, "refunds", ["old-a", "old-b"], scorers=["outcome", "final_tool"])
    # B: variant "openai/old-a" now fails 1, 5 and 6 instead of 0 and 1; a new variant only in B; a scorer only in B
    server.route("old-a", Agent(server, wrong=lambda i: i in (1, 5, 6)))
    server.route("new-c", Agent(server))
    b = experiment(store, server, "refunds", ["old-a", "new-c"], scorers=["outcome", "final_tool", "no_divergence"])
    found = compare_experiments(store, a, b)
    assert found["same_dataset_version"] and found["cases"] == {"compared": 8, "only_in_a": [], "only_in_b": []}
    assert found["not_comparable"] == {
        "variants_only_in_a": ["openai/old-b"],
        "variants_only_in_b": ["openai/new-c"],
        "scorers_only_in_a": [],
        "scorers_only_in_b": ["no_divergence"],
    }
    [v] = found["variants"]
    assert (v["variant"], v["cases"], v["a"], v["b"]) == (
        "openai/old-a",
        8,
        {"passed": 6, "pass_rate": 0.75, "ci": list(wilson(6, 8))},
        {"passed": 5, "pass_rate": 0.625, "ci": list(wilson(5, 8))},
    )
    assert [r["case"] for r in v["improved"]] == ["refund-0"] and [r["case"] for r in v["regressed"]] == ["refund-5", "refund-6"]
    assert v["delta"] == -0.125 and v["not_scored_on_both"] == []
    outcome, final_tool = v["scorers"]
    assert (outcome["scorer"], outcome["improved"], outcome["regressed"]) == ("outcome", ["refund-0"], ["refund-5", "refund-6"])
    assert (final_tool["a"]["passed"], final_tool["b"]["passed"], final_tool["regressed"]) == (
        8,
        8,
        [],
    )  # the same tool call either way
    reg = v["regressed"][0]
    assert store.get_session(reg["a_session"])["replay_of"] == store.get_session(reg["b_session"])["replay_of"] == "refund-5"
    assert found["notes"] == []
    # pairing by position compares old-b (A's second) with new-c (B's second) too
    assert [(x["variant"], x["b_variant"]) for x in compare_experiments(store, a, b, by_position=True)["variants"]] == [
        ("openai/old-a", "openai/old-a"),
        ("openai/old-b", "openai/new-c"),
    ]


def test_overlapping_datasets_compare_only_the_shared_cases(sqlite_store, server):
    store = sqlite_store
    make_cases(store, 6)
    ds.create(store, "first", [ds.Case(f"refund-{i}") for i in range(4)])
    ds.create(store, "second", [ds.Case(f"refund-{i}") for i in range(2, 6)])
    ds.create(store, "apart", [ds.Case("refund-5")])
    server.route("m", Agent(server, wrong=lambda i: i == 3))
    a = experiment(store, server, "first", ["m"])
    b = experiment(store, server, "second", ["m"], start="first decision")
    found = compare_experiments(store, a, b)
    assert found["cases"] == {"compared": 2, "only_in_a": ["refund-0", "refund-1"], "only_in_b": ["refund-4", "refund-5"]}
    assert not found["same_dataset_version"] and found["notes"][0].startswith(
        "different datasets or versions (first v1, second v1)"
    )
    assert "different start points (first-model-turn in A, first decision in B)" in found["notes"][1]
    [v] = found["variants"]
    assert (v["cases"], v["a"]["passed"], v["b"]["passed"], v["improved"], v["regressed"]) == (2, 1, 1, [], [])
    c = experiment(store, server, "apart", ["m"])
    with pytest.raises(CompareError, match="share no case"):
        compare_experiments(store, a, c)
    with pytest.raises(CompareError, match="no experiment 'exp-nope'"):
        compare_experiments(store, a, "exp-nope")


# ---------------------------------------------------------------------------- datasets from a selection


def test_dataset_from_sessions_and_from_a_filter(store):
    make_cases(store, 4)
    make_cases(store, 2, first=10, status="failed", workflow="billing")
    made = ds.dataset_from_sessions(store, "picked", ["refund-1", "refund-2", "refund-1"])
    assert (made["version"], made["cases"]) == (1, 2)
    # a review queue's items: its session ids with what each should have done
    grown = ds.dataset_from_sessions(
        store,
        "picked",
        ["refund-2", "refund-3", "refund-10"],
        expected={"refund-10": "Refund refused: order not delivered."},
        made_from={"queue": "q-7"},
    )
    assert (grown["version"], grown["cases"], grown["added"]) == (2, 4, 2)
    shown = {c["session"]: c for c in ds.show(store, "picked")["cases"]}
    assert shown["refund-10"]["expected"] == "Refund refused: order not delivered." and shown["refund-3"]["expected"] is None
    assert store.get_dataset("picked")["made_from"][-1] == {"queue": "q-7"}
    with pytest.raises(ds.DatasetError, match="no such run: nope"):
        ds.dataset_from_sessions(store, "picked", ["refund-0", "nope"])
    assert store.get_dataset("picked")["version"] == 2  # nothing stored
    by_filter = ds.dataset_from_filter(
        store, "failed-billing", ds.parse_filter("status=failed workflow=billing model=gpt-4o agent=support-bot")
    )
    assert by_filter["cases"] == 2
    assert ds.parse_filter({"agent": "support-bot", "since": "7d"}).agent_id == "support-bot"
    with pytest.raises(ds.DatasetError, match=r"filter\.colour: not a filter"):
        ds.parse_filter("colour=red")
    with pytest.raises(ds.DatasetError, match="filter: expected KEY=VALUE"):
        ds.parse_filter("failed")
    with pytest.raises(ds.DatasetError, match="no run matches"):
        ds.dataset_from_filter(store, "none", SessionFilter(model="nope"))


def test_cli_dataset_create_from_sessions_and_from_filter(tmp_path, monkeypatch):
    cli = cli_runner(
        monkeypatch, cli_database(tmp_path, lambda store: (make_cases(store, 3), make_cases(store, 2, first=5, status="failed")))
    )
    assert json.loads(cli("dataset", "create", "two", "--sessions", "refund-0,refund-2", "--json").stdout)["cases"] == 2
    made = json.loads(cli("dataset", "create", "failed", "--from-filter", "status=failed agent=support-bot", "--json").stdout)
    assert (made["cases"], made["version"]) == (2, 1)
    assert cli("dataset", "create", "x", "--from-filter", "colour=red", ok=False).stderr.startswith(
        "error: filter.colour: not a filter"
    )


# ---------------------------------------------------------------------------- live tools


def lookup_calls():
    calls = []

    def get_order(order_id: str) -> dict:
        calls.append(order_id)
        return {"status": "delivered", "total": 42, "checked": "live"}

    return calls, get_order


def test_live_tool_functions_instead_of_the_recorded_answers(sqlite_store, server):
    store = sqlite_store
    make_cases(store, 3)
    ds.create(store, "refunds", [ds.Case(f"refund-{i}") for i in range(3)])
    server.route("m", Agent(server))
    calls, get_order = lookup_calls()
    recorded = experiment(store, server, "refunds", ["m"], tools={"get_order": get_order})
    assert calls == []  # recorded by default: the recording holds these calls
    [v] = summarise(store, recorded)["variants"]
    assert v["tool_results"] == {"live": 0, "recorded": 3} and v["passed"] == 3
    eid, _ = ex.start(store, "refunds", [variant(server, "m", tool_mode="live")], tools={"get_order": get_order})
    with pytest.raises(ex.ExperimentError, match="calls live tools it was not given: get_order"):
        ex.run(store, eid)
    assert ex.run(store, eid, tools={"get_order": get_order}) == "done"
    assert sorted(calls) == ["A-0", "A-1", "A-2"]
    out = summarise(store, eid)
    assert out["variants"][0]["tool_results"] == {"live": 3, "recorded": 0} and out["variants"][0]["passed"] == 3
    cell = out["matrix"][0]["cells"][0]
    [live] = [s for s in store.load_steps(cell["session"]) if s.type == "tool_result"]
    assert cell["tools"] == {"live": [live.seq], "recorded": []} and (live.metadata or {}).get("live") is True
    assert json.loads(live.content)["checked"] == "live"
    # the model the server sent for the second call saw the live function's answer
    assert any(
        '"checked":"live"' in (m.get("content") or "") for p in server.requests for m in p["messages"] if m.get("role") == "tool"
    )
    with pytest.raises(ex.ExperimentError, match="no tool functions were given"):
        ex.start(store, "refunds", [variant(server, "m", tool_mode="live")])


def test_a_call_the_recording_lacks_goes_to_the_live_function(sqlite_store, server):
    store = sqlite_store
    make_cases(store, 2)
    ds.create(store, "refunds", [ds.Case(f"refund-{i}") for i in range(2)])

    def other_order(payload):  # asks for another order than the recorded one, then answers
        i = case_number(payload)
        if not any(m.get("role") == "tool" for m in payload["messages"]):
            return server.tool_calls(("get_order", {"order_id": f"B-{i}"}), content="Look the order up first.")
        return server.text(answer(i))

    server.route("m", other_order)
    calls, get_order = lookup_calls()
    without = experiment(store, server, "refunds", ["m"])
    assert summarise(store, without)["variants"][0]["outcomes"] == {"diverged": 2}
    with_tools = experiment(store, server, "refunds", ["m"], tools={"get_order": get_order})
    assert sorted(calls) == ["B-0", "B-1"]
    [v] = summarise(store, with_tools)["variants"]
    assert v["tool_results"] == {"live": 2, "recorded": 0} and v["outcomes"] == {"final_answer": 2} and v["passed"] == 2


# ---------------------------------------------------------------------------- start points by step kind


def tool_error_runs(store, n: int, *, with_error) -> list[str]:
    """Refund runs whose first lookup fails (when with_error(i)) and is retried."""
    events, ids = [], []
    for i in range(n):
        sid, t = f"flaky-{i}", START + timedelta(hours=1, minutes=i)
        ids.append(sid)
        events.append(
            SessionEvent(
                session_id=sid, name=f"flaky {i}", agent_id="support-bot", model="gpt-4o", workflow="refund", started_at=t
            )
        )
        steps = [
            dict(type="input", content=f"Please refund my order A-{i}."),
            dict(type="think", content="Look the order up first."),
            dict(type="tool_call", tool_name="get_order", tool_args={"order_id": f"A-{i}"}, tool_call_id=f"c{i}"),
        ]
        if with_error(i):
            steps += [
                dict(
                    type="tool_result",
                    tool_name="get_order",
                    tool_call_id=f"c{i}",
                    content="upstream timeout",
                    status="error",
                    error_class="Timeout",
                ),
                dict(type="think", content="Try again."),
                dict(type="tool_call", tool_name="get_order", tool_args={"order_id": f"A-{i}"}, tool_call_id=f"d{i}"),
            ]
        steps += [
            dict(
                type="tool_result",
                tool_name="get_order",
                tool_call_id=steps[-1]["tool_call_id"],
                content='{"status": "delivered"}',
            ),
            dict(type="decision", content=answer(i)),
        ]
        for seq, fields in enumerate(steps, 1):
            events.append(StepEvent(session_id=sid, event_id=f"e{seq}", seq=seq, timestamp=t + timedelta(seconds=seq), **fields))
        events.append(SessionEndEvent(session_id=sid, status="succeeded", outcome=answer(i), ended_at=t + timedelta(seconds=20)))
    ingest(store, events)
    return ids


def test_start_from_a_step_kind_refuses_runs_without_one(store, server):
    ids = tool_error_runs(store, 4, with_error=lambda i: i % 2 == 0)
    ds.create(store, "flaky", [ds.Case(i) for i in ids])
    server.route("m", Agent(server))
    spec = "first model_turn after first tool_error"
    eid, p = ex.start(store, "flaky", [variant(server, "m")], start=spec)
    assert p.start.spec == spec and sorted(p.unplayable) == ["flaky-1", "flaky-3"]
    assert ex.run(store, eid) == "done"
    [v] = summarise(store, eid)["variants"]
    assert (v["cases"], v["passed"], v["refused"], v["pending"], v["ci"]) == (2, 2, 2, 0, list(wilson(2, 2)))
    assert v["refusals"] == [
        {"case": "flaky-1", "reason": f"the run has no tool_error step (start: {spec})"},
        {"case": "flaky-3", "reason": f"the run has no tool_error step (start: {spec})"},
    ]
    runs = {r["case_session"]: r for r in store.experiment_runs(eid)}
    assert store.get_session(runs["flaky-0"]["replay_session"])["replay_from"] == 5  # the retry's thought
    assert runs["flaky-1"]["replay_session"] is None and runs["flaky-1"]["passed"] is None
    assert server.count() == 2  # the two refused cases cost nothing: one answer each for the others
    assert summarise(store, eid)["regressions"] == []
    last = experiment(store, server, "flaky", ["m"], start="last user-message")
    assert summarise(store, last)["variants"][0]["refused"] == 0
    with pytest.raises(ex.ExperimentError, match="--from: start 'second turn': expected first-model-turn"):
        ex.start(store, "flaky", [variant(server, "m")], start="second turn")


KIND_NAMES = sorted(start_point.KINDS)
STEP_TYPES = ["input", "think", "tool_call", "tool_result", "observation", "decision", "error"]


@settings(deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(STEP_TYPES), st.booleans(), st.booleans()), max_size=12),
    st.sampled_from(["first", "last"]),
    st.sampled_from(KIND_NAMES),
    st.sampled_from([None, *KIND_NAMES]),
)
def test_a_start_point_resolves_to_the_step_it_names(shape, which, kind, after):
    steps = [
        StepEvent(session_id="s", type=t, seq=i + 1, status="error" if err else "ok", tool_name="t" if tool else None)
        for i, (t, err, tool) in enumerate(shape)
    ]
    spec = f"{which} {kind}" + (f" after first {after}" if after else "")
    point = start_point.parse(spec)
    test = start_point.KINDS[kind]
    lo = 0
    if after:
        marks = [i for i, s in enumerate(steps) if start_point.KINDS[after](s)]
        lo = marks[0] + 1 if marks else None
    hits = [] if lo is None else [i for i in range(lo, len(steps)) if test(steps[i])]
    if not hits:
        with pytest.raises(start_point.NoSuchStep):
            point.resolve(steps)
    else:
        assert point.resolve(steps) == steps[hits[0] if which == "first" else hits[-1]].seq


def test_cli_from_step_type(tmp_path, server, monkeypatch):
    def make(store) -> None:
        ds.create(store, "flaky", [ds.Case(i) for i in tool_error_runs(store, 3, with_error=lambda i: i != 1)])

    cli = cli_runner(monkeypatch, cli_database(tmp_path, make))
    server.route("m", Agent(server))
    proc = cli(
        "experiment",
        "run",
        "flaky",
        "--model",
        "openai/m",
        "--api-base",
        server.base_url,
        "--from-step-type",
        "tool_error",
        "--json",
    )
    [v] = json.loads(proc.stdout)["variants"]
    assert (v["cases"], v["passed"], v["refused"]) == (2, 2, 1)


# ---------------------------------------------------------------------------- one read of each case


def test_each_case_is_opened_once_for_all_its_variants(sqlite_store, server, monkeypatch):
    store = sqlite_store
    make_cases(store, 4)
    ds.create(store, "refunds", [ds.Case(f"refund-{i}") for i in range(4)])
    for m in ("a", "b", "c"):
        server.route(m, Agent(server))
    eid, _ = ex.start(store, "refunds", [variant(server, m) for m in ("a", "b", "c")], concurrency=3)
    opened, read_steps = [], []
    real_open = ex.open_timeline
    monkeypatch.setattr(ex, "open_timeline", lambda s, sid: opened.append(sid) or real_open(s, sid))
    real_read = store.load_step_columns  # every read of a run's steps (load_steps and an opened run's columns)
    monkeypatch.setattr(store, "load_step_columns", lambda sid, **kw: read_steps.append(sid) or real_read(sid, **kw))
    assert ex.run(store, eid) == "done"
    assert sorted(opened) == [f"refund-{i}" for i in range(4)]
    originals = [s for s in read_steps if "~replay" not in s]
    assert originals == opened  # compare and the scorers reuse the opened run


def test_cli_live_tools_and_experiment_compare(tmp_path, server, monkeypatch):
    db = cli_database(tmp_path, refund_dataset(3))
    (tmp_path / "team_tools.py").write_text(
        "import json, os\n"
        "def get_order(order_id):\n"
        "    with open(os.environ['TOOL_LOG'], 'a') as f:\n"
        "        f.write(order_id + '\\n')\n"
        "    return {'status': 'delivered', 'checked': 'live'}\n"
    )
    monkeypatch.syspath_prepend(tmp_path)  # where `--tool` finds team_tools, as PYTHONPATH would
    cli = cli_runner(monkeypatch, db, TOOL_LOG=str(tmp_path / "calls.log"))
    server.route("m", Agent(server, wrong=lambda i: i == 2))
    common = ("experiment", "run", "refunds", "--model", "openai/m", "--api-base", server.base_url, "--json")
    live = json.loads(cli(*common, "--tool", "get_order=team_tools:get_order", "--tool-mode", "live").stdout)
    assert live["variants"][0]["tool_results"] == {"live": 3, "recorded": 0}
    assert sorted((tmp_path / "calls.log").read_text().split()) == ["A-0", "A-1", "A-2"]
    server.route("m", Agent(server))
    recorded = json.loads(cli(*common).stdout)
    assert recorded["variants"][0]["tool_results"] == {"live": 0, "recorded": 3}
    found = json.loads(cli("experiment", "compare", live["experiment"], recorded["experiment"], "--json").stdout)
    [v] = found["variants"]
    assert (v["a"]["passed"], v["b"]["passed"], [r["case"] for r in v["improved"]]) == (2, 3, ["refund-2"])
    table = cli("experiment", "compare", live["experiment"], recorded["experiment"]).stdout
    assert "3 cases in both" in table and "improved refund-2 · openai/m: agent-replay compare" in table
    assert (
        cli("experiment", "compare", live["experiment"], "exp-nope", ok=False).stderr.strip() == "error: no experiment 'exp-nope'"
    )
    assert cli(*common, "--tool", "nowhere", ok=False).stderr.startswith("error: --tool: expected NAME=module:function")


def _stored_experiment(store, name: str, cells: dict[str, bool | None], n: list[int]) -> str:
    """An experiment with one variant whose verdicts are given (None: refused), stored without replays."""
    n[0] += 1
    made = ds.create(store, f"{name}-{n[0]}", [ds.Case(c) for c in cells])
    eid = f"exp-{name}-{n[0]}"
    store.create_experiment(
        eid,
        made["id"],
        made["version"],
        {"names": ["m"], "variants": [{"model": "m"}], "start": "first-model-turn", "scorers": ["outcome"]},
    )
    for case, passed in cells.items():
        store.claim_experiment_run(eid, case, 0, lease_s=30)
        store.finish_experiment_run(
            eid,
            case,
            0,
            outcome="refused" if passed is None else "final_answer",
            passed=None if passed is None else int(passed),
            scores=[{"name": "outcome", "passed": bool(passed)}],
        )
    return eid


CASES = [f"refund-{i}" for i in range(6)]
VERDICTS = st.dictionaries(st.sampled_from(CASES), st.one_of(st.none(), st.booleans()), min_size=1)


def test_compare_counts_every_shared_case_once(sqlite_store):
    make_cases(sqlite_store, 6)
    made = [0]

    @settings(max_examples=40, deadline=None)
    @given(VERDICTS, VERDICTS)
    def check(a_cells, b_cells):
        a, b = _stored_experiment(sqlite_store, "a", a_cells, made), _stored_experiment(sqlite_store, "b", b_cells, made)
        shared = [c for c in a_cells if c in b_cells]
        if not shared:
            with pytest.raises(CompareError):
                compare_experiments(sqlite_store, a, b)
            return
        found = compare_experiments(sqlite_store, a, b)
        [v] = found["variants"]
        scored = [c for c in shared if a_cells[c] is not None and b_cells[c] is not None]
        assert found["cases"]["compared"] == len(shared) and v["cases"] == len(scored)
        assert sorted(v["not_scored_on_both"]) == sorted(set(shared) - set(scored))
        assert sorted(found["cases"]["only_in_a"] + shared) == sorted(a_cells)
        assert sorted(found["cases"]["only_in_b"] + shared) == sorted(b_cells)
        assert {r["case"] for r in v["improved"]} == {c for c in scored if b_cells[c] and not a_cells[c]}
        assert {r["case"] for r in v["regressed"]} == {c for c in scored if a_cells[c] and not b_cells[c]}
        assert v["b"]["passed"] - v["a"]["passed"] == len(v["improved"]) - len(v["regressed"])
        assert v["a"]["ci"] == list(wilson(v["a"]["passed"], len(scored)))

    check()

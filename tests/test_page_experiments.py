"""The experiments page through the app (AppTest): make a dataset, estimate, launch against the local
server, read the results with links to compare; viewers read but cannot launch."""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlparse

import pytest
from apptest_helpers import each_empty_store, empty_store, page, texts  # noqa: F401  (fixtures)
from experiment_cases import Agent, make_cases
from openai_server import OpenAIServer

from replay_core.whatif import dataset as ds
from replay_core.whatif import experiment as ex
from replay_core.whatif.replay_config import PROVIDER_KEYS, ReplayConfig
from ui.common import md

PAGE = "pages/experiments.py"


@pytest.fixture
def local_server(monkeypatch):
    for name in (*PROVIDER_KEYS, "AGENT_REPLAY_API_KEY_ENV"):
        monkeypatch.delenv(name, raising=False)
    with OpenAIServer() as server:
        monkeypatch.setenv("AGENT_REPLAY_API_BASE", server.base_url)
        monkeypatch.setenv("AGENT_REPLAY_MODELS", "openai/fake-a,openai/fake-b")
        server.route("fake-a", Agent(server))
        server.route("fake-b", Agent(server, wrong=lambda i: i == 2))
        yield server


def frame(at, column: str):
    """The first table on the page with this column."""
    return next(df.value for df in at.dataframe if column in df.value.columns)


def wait_done(store, experiment_id: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = store.get_experiment(experiment_id)
        if row["status"] != "running":
            return row
        time.sleep(0.1)
    raise AssertionError("the experiment did not finish")


def test_make_a_dataset_launch_and_read_the_results(each_empty_store, local_server):
    make_cases(each_empty_store, 4)
    make_cases(each_empty_store, 1, status="failed", first=9)
    at = page(PAGE)
    assert not at.exception
    assert "No dataset yet." in texts(at)
    at.text_input(key="ds_name").input("refunds")
    at.selectbox(key="ds_status").select("succeeded")
    at.button(key="ds_make").click().run()
    assert md("Dataset refunds: 4 cases.") in texts(at)
    assert "No dataset yet." not in texts(at) and frame(at, "dataset")["dataset"].tolist() == ["refunds"]  # the list above too
    assert [c["session"] for c in ds.show(each_empty_store, "refunds")["cases"]] == [f"refund-{i}" for i in range(4)]
    at.multiselect(key="ex_models").select("openai/fake-a").select("openai/fake-b").run()
    estimate = frame(at, "tokens in (≈)")
    assert estimate["model"].tolist() == ["openai/fake-a", "openai/fake-b"] and estimate["cases"].tolist() == [4, 4]
    at.button(key="ex_launch").click().run()
    experiment_id = at.query_params["experiment"]
    assert wait_done(each_empty_store, experiment_id)["status"] == "done"
    assert local_server.count() == 16
    at = page(PAGE, params={"experiment": experiment_id})
    assert not at.exception
    variants = frame(at, "pass rate")
    assert variants["passed"].tolist() == [4, 3] and variants["pass rate"].tolist() == ["100%", "75%"]
    assert variants["95% interval"].tolist() == ["51%–100%", "30%–95%"]
    assert variants["left the original at"].tolist() == ["—", "step 5 (1 case)"]
    matrix = frame(at, "case")
    link = urlparse(matrix["openai/fake-b"].tolist()[2])
    query = {k: v[0] for k, v in parse_qs(link.query).items()}
    assert link.path == "/compare" and query["a"] == "refund-2" and query["verdict"] == "fail"
    assert each_empty_store.get_session(query["b"])["replay_of"] == "refund-2"
    [regression] = [pl for pl in at.get("page_link") if pl.proto.page.endswith("compare")]
    assert regression.proto.label.startswith(md("refund-2 · openai/fake-b: final answer"))
    assert md("Status: done. 8 of 8 replays done. Interval: 95% Wilson score.") in texts(at)
    # the cell's link opens compare on that replay, though experiment replays are not in the runs list
    cmp = page("pages/compare.py", params={"a": query["a"], "b": query["b"]})
    assert not cmp.exception
    assert cmp.error[0].value.startswith(md("First divergence"))


def test_viewers_read_results_but_cannot_launch(empty_store, local_server, monkeypatch):
    make_cases(empty_store, 2)
    ds.create(empty_store, "refunds", [ds.Case("refund-0"), ds.Case("refund-1")])
    eid, _ = ex.start(empty_store, "refunds", [ReplayConfig(model="openai/fake-a", api_base=local_server.base_url)])
    ex.run(empty_store, eid)
    monkeypatch.setenv("AGENT_REPLAY_PASSWORD", "look")
    monkeypatch.setenv("AGENT_REPLAY_EDITOR_PASSWORD", "change")
    at = page(PAGE, params={"experiment": eid}, state={"role": "viewer"})
    assert not at.exception
    assert at.button(key="ds_make").disabled
    at.multiselect(key="ex_models").select("openai/fake-a").run()
    assert at.button(key="ex_launch").disabled
    assert "Only editors can make datasets and launch experiments." in texts(at)
    assert frame(at, "pass rate")["passed"].tolist() == [2]


def test_a_dataset_from_picked_runs_and_two_experiments_compared(empty_store, local_server):
    make_cases(empty_store, 3)
    make_cases(empty_store, 2, first=5, workflow="billing")
    ds.create(empty_store, "refunds-elsewhere", [ds.Case("refund-0")])
    at = page(PAGE)
    at.selectbox(key="ds_workflow").select("billing").run()
    assert md("2 runs match.") in texts(at) and frame(at, "workflow")["run"].tolist() == ["refund-6", "refund-5"]
    at.selectbox(key="ds_workflow").select("(any)").run()
    at.selectbox(key="ds_agent").select("support-bot").run()
    assert md("5 runs match.") in texts(at)
    at.text_input(key="ds_name").input("picked")
    at.multiselect(key="ds_pick").select("refund-0").select("refund-2").select("refund-6")
    at.button(key="ds_make").click().run()
    assert md("Dataset picked: 3 cases.") in texts(at)
    at.multiselect(key="ds_pick").unselect("refund-0").unselect("refund-2").unselect("refund-6").select("refund-1")
    at.button(key="ds_make").click().run()
    assert md("Dataset picked version 2 (1 added): 4 cases.") in texts(at)
    ids = []
    for model in ("openai/fake-a", "openai/fake-b"):  # fake-b gets refund-2 wrong
        eid, _ = ex.start(empty_store, "picked", [ReplayConfig(model=model, api_base=local_server.base_url)])
        ex.run(empty_store, eid)
        ids.append(eid)
    other, _ = ex.start(empty_store, "refunds-elsewhere", [ReplayConfig(model="recorded")])  # another dataset: not offered
    at = page(PAGE, params={"experiment": ids[1]})
    assert not at.exception
    assert at.selectbox(key="cmp_a").options == [next(o for o in at.selectbox(key="cmp_a").options if ids[0] in o)]
    assert not [o for o in at.selectbox(key="cmp_a").options if other in o] and at.selectbox(key="cmp_a").value is None
    at.selectbox(key="cmp_a").select(ids[0]).run()
    assert md("Not comparable, variants only in a: openai/fake-a") in texts(at)
    at.checkbox(key="cmp_position").check().run()
    table = frame(at, "regressed")
    assert table[["variant", "scorer", "cases", "A", "B", "improved", "regressed"]].values.tolist()[0] == [
        "openai/fake-a",
        "(all)",
        4,
        "100% (51%–100%)",
        "75% (30%–95%)",
        0,
        1,
    ]
    [link] = [pl for pl in at.get("page_link") if pl.proto.label.startswith(md("regressed: refund-2"))]
    assert (
        empty_store.get_session(dict(parse_qs(urlparse("?" + link.proto.query_string).query))["b"][0])["replay_of"] == "refund-2"
    )


def test_a_model_without_its_key_cannot_launch_and_a_provider_error_is_not_a_fail(empty_store, local_server):
    make_cases(empty_store, 2)
    ds.create(empty_store, "refunds", [ds.Case("refund-0"), ds.Case("refund-1")])
    at = page(PAGE)
    at.text_input(key="ex_api_base").input("")
    at.text_input(key="ex_models_typed").input("openai/gpt-4o-mini").run()
    [said] = [e.value for e in at.error]
    assert md("openai/gpt-4o-mini cannot run") in said and md("export OPENAI_API_KEY=") in said
    assert at.button(key="ex_launch").disabled
    # a provider that answers nothing: the cases are not scored, and the matrix never says fail
    local_server.route("fake-c", lambda payload: local_server.error(500, "upstream broke"))
    eid, _ = ex.start(empty_store, "refunds", [ReplayConfig(model="openai/fake-c", api_base=local_server.base_url, retries=0)])
    ex.run(empty_store, eid)
    at = page(PAGE, params={"experiment": eid})
    assert not at.exception
    variants = frame(at, "pass rate")
    assert variants[["cases scored", "pass rate", "not scored (provider error)"]].values.tolist() == [[0, "—", 2]]
    assert any("2 of 2 cases not scored" in w.value and "had a server error" in w.value for w in at.warning)
    cells = frame(at, "case")["openai/fake-c"].tolist()
    assert all("verdict=not-scored" in c for c in cells)
    [picker] = [b for b in at.selectbox if b.label == "Experiment"]
    assert picker.options and not any("running" in o or "done" in o for o in picker.options)  # no status to go stale

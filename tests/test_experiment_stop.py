"""Stopping a running experiment from wherever it is asked: the library through another Store on the
same database (as another process or replica would), the HTTP API, the CLI and the page. The replays
in flight finish, nothing more is launched, and resuming runs the rest, never a finished one twice."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from apptest_helpers import empty_store, page, texts  # noqa: F401  (fixtures)
from experiment_cases import (  # noqa: F401  (server: a fixture)
    Agent,
    case_number,
    cli_database,
    cli_runner,
    make_cases,
    refund_dataset,
    server,
    variant,
    wait_for,
)
from starlette.testclient import TestClient

from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.storage.actor import Actor, PermissionDenied
from replay_core.storage.store import Store
from replay_core.whatif import dataset as ds
from replay_core.whatif import experiment as ex
from replay_core.whatif.results import summarise
from ui.common import md

EDITOR, VIEWER = "ed1tor-token-for-tests", "v1ewer-token-for-tests"


def refund_experiment(store: Store, server, n: int = 6) -> str:
    """n refund cases run one at a time by the model `fake-a`, which answers at once (unless held_calls)."""
    ds.create(store, "refunds", [ds.Case(i) for i in make_cases(store, n)])
    server.route("fake-a", Agent(server))
    experiment_id, _ = ex.start(store, "refunds", [variant(server, "fake-a")], concurrency=1)
    return experiment_id


def held_calls(server) -> threading.Event:
    """`fake-a` answers case 0 at once and holds every later call until the event returned is set: a stop asked
    meanwhile finds cases left to run, whatever the machine's load (a model slow by a fixed delay raced it)."""
    release = threading.Event()
    agent = Agent(server)
    server.route("fake-a", lambda payload: (case_number(payload) == 0 or release.wait(60)) and agent(payload))
    return release


def done_runs(store: Store, experiment_id: str) -> int:
    return sum(r["state"] == "done" for r in store.experiment_runs(experiment_id))


def test_a_stop_asked_through_another_store_stops_the_runner_and_resume_runs_the_rest_once(store, server):
    experiment_id = refund_experiment(store, server)
    release = held_calls(server)
    runner = threading.Thread(target=ex.run, args=(store, experiment_id))  # not launch(): no in-process event to set
    runner.start()
    wait_for(lambda: done_runs(store, experiment_id) >= 1, "a first case")
    other = Store(store.engine.url.render_as_string(hide_password=False), migrate=False)
    try:
        assert ex.request_stop(other, experiment_id) == "stopping"
    finally:
        other.close()
        release.set()
    runner.join(60)
    assert not runner.is_alive()
    stopped = summarise(store, experiment_id)
    assert stopped["status"] == "stopped" and stopped["progress"]["running"] == 0
    assert 1 <= stopped["progress"]["done"] < 6, stopped["progress"]
    assert stopped["message"].startswith("stopped: ") and stopped["message"].endswith("resume to run them")
    assert ex.run(store, experiment_id) == "done"
    assert summarise(store, experiment_id)["progress"]["done"] == 6
    asked = Counter(case_number(p) for p in server.requests)
    assert asked == Counter({i: 2 for i in range(6)})  # each case's two model calls, once: nothing paid twice
    audit = store.audit_entries(actions=["replay"])
    assert any(e["target"] == f"experiment {experiment_id}" and e["detail"] == {"op": "stop"} for e in audit)


def test_stopping_what_is_not_running_or_as_a_viewer_is_refused_and_changes_nothing(sqlite_store, server):
    store = sqlite_store
    experiment_id = refund_experiment(store, server, n=1)
    viewer = Actor("vera", "viewer", "test")
    with pytest.raises(PermissionDenied):
        ex.request_stop(store, experiment_id, actor=viewer)
    assert store.experiment_status(experiment_id) == "running"
    assert [e["outcome"] for e in store.audit_entries(actions=["replay"])] == ["denied"]
    assert ex.run(store, experiment_id) == "done"
    with pytest.raises(ex.ExperimentError, match=f"experiment {experiment_id} is done, not running: nothing to stop"):
        ex.request_stop(store, experiment_id)
    with pytest.raises(ex.ExperimentError, match="no experiment 'exp-nope'"):
        ex.request_stop(store, "exp-nope")
    assert store.experiment_status(experiment_id) == "done"


def test_stop_over_http_then_poll_to_stopped(sqlite_store, server):
    store = sqlite_store
    ds.create(store, "refunds", [ds.Case(i) for i in make_cases(store, 6)])
    release = held_calls(server)
    app = create_app(store, access=Access(api_tokens=(EDITOR, VIEWER), token_roles=("editor", "viewer")))
    with TestClient(app) as client:
        launched = client.post(
            "/api/v1/experiments",
            headers={"Authorization": f"Bearer {EDITOR}"},
            json={"dataset": "refunds", "models": ["openai/fake-a"], "api_base": server.base_url, "concurrency": 1},
        )
        assert launched.status_code == 202, launched.text
        experiment_id = launched.json()["experiment"]
        stop_path = f"/api/v1/experiments/{experiment_id}/stop"
        refused = client.post(stop_path, headers={"Authorization": f"Bearer {VIEWER}"})
        assert refused.status_code == 403
        wait_for(lambda: done_runs(store, experiment_id) >= 1, "a first case")
        stopping = client.post(stop_path, headers={"Authorization": f"Bearer {EDITOR}"})
        release.set()
        assert stopping.status_code == 202, stopping.text
        assert stopping.json() == {
            "experiment": experiment_id,
            "status": "stopping",
            "poll": f"/api/v1/experiments/{experiment_id}",
        }

        def stopped() -> dict | None:
            got = client.get(stopping.json()["poll"], headers={"Authorization": f"Bearer {EDITOR}"}).json()
            return got if got["status"] == "stopped" else None

        polled = wait_for(stopped, "the runner to stop")
        assert 1 <= polled["progress"]["done"] < 6
        again = client.post(stop_path, headers={"Authorization": f"Bearer {EDITOR}"})
        assert again.status_code == 409 and again.json()["detail"].endswith("is stopped, not running: nothing to stop")
        assert client.post("/api/v1/experiments/exp-nope/stop", headers={"Authorization": f"Bearer {EDITOR}"}).status_code == 404
        assert client.post(stop_path).status_code == 401


def test_cli_stops_an_experiment_whose_process_died_and_resume_finishes_it(tmp_path, server, monkeypatch):
    server.route("fake-a", Agent(server))
    holder: dict[str, str] = {}

    def make(store: Store) -> None:
        refund_dataset(2)(store)
        holder["id"], _ = ex.start(store, "refunds", [variant(server, "fake-a")])  # stored `running`, no runner: as after a crash

    cli = cli_runner(monkeypatch, cli_database(tmp_path, make))
    experiment_id = holder["id"]
    stopped = cli("experiment", "stop", experiment_id, "--json")
    assert '"status": "stopping"' in stopped.stdout
    cli("experiment", "resume", experiment_id, "--json")
    refused = cli("experiment", "stop", experiment_id, ok=False)
    assert f"experiment {experiment_id} is done, not running: nothing to stop" in refused.stderr
    assert server.count() == 4


def test_the_page_stops_a_running_experiment_and_viewers_cannot(empty_store, server, monkeypatch):
    store = empty_store
    experiment_id = refund_experiment(store, server, n=1)  # stored `running`; no runner in this test
    with monkeypatch.context() as door:  # a signed-in viewer
        door.setenv("AGENT_REPLAY_PASSWORD", "look")
        door.setenv("AGENT_REPLAY_EDITOR_PASSWORD", "change")
        seen = page("pages/experiments.py", params={"experiment": experiment_id}, state={"role": "viewer"})
        assert seen.button(key="ex_stop").disabled
        assert seen.button(key="ex_stop").help == "Only editors can stop or resume an experiment."
    at = page("pages/experiments.py", params={"experiment": experiment_id})
    assert not at.button(key="ex_stop").disabled
    at.button(key="ex_stop").click().run()
    assert not at.exception
    assert store.experiment_status(experiment_id) == "stopping"
    assert md("Status: stopping — stop asked: the replays in flight finish; resume to run the rest.") in texts(at)
    store.set_experiment_status(experiment_id, "stopped", "stopped: 1 case × variant runs not started; resume to run them")
    at = page("pages/experiments.py", params={"experiment": experiment_id})
    at.button(key="ex_resume").click().run()
    assert not at.exception
    assert wait_for(lambda: store.experiment_status(experiment_id) == "done", "the resumed experiment")


def test_the_stop_button_in_chromium(browser, tmp_path, server):
    """What a person sees: the button on a running experiment, its click, then the status saying it is stopping."""
    from apptest_helpers import served_app

    url = f"sqlite:///{tmp_path / 'stop.db'}"
    store = Store(url)
    experiment_id = refund_experiment(store, server, n=1)  # stored `running`, as a run elsewhere shows it
    store.close()
    with served_app(url) as base:
        pg = browser.new_page(viewport={"width": 1440, "height": 900})
        pg.goto(f"{base}/experiments?experiment={experiment_id}")
        button = pg.get_by_role("button", name="Stop the experiment")
        button.wait_for(timeout=60_000)
        assert button.is_enabled()
        button.click()
        pg.get_by_text("Status: stopping — stop asked").wait_for(timeout=30_000)
        # the rerun draws the status before it is done: the old button goes when the run ends
        pg.get_by_role("button", name="Stop the experiment").wait_for(state="detached", timeout=30_000)
    reopened = Store(url, migrate=False)
    try:
        assert reopened.experiment_status(experiment_id) == "stopping"
    finally:
        reopened.close()

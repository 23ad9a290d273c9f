"""Datasets and experiments over HTTP (Starlette TestClient) against the scripted local model server:
launch returns at once, the work runs in the background, GET shows progress then results."""

from __future__ import annotations

import threading
import time

import pytest
from experiment_cases import Agent, make_cases
from openai_server import OpenAIServer
from starlette.testclient import TestClient

from replay_core.server.api import create_app
from replay_core.server.auth import Access

TOKEN = "t0ken-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def server():
    with OpenAIServer() as srv:
        yield srv


@pytest.fixture
def client(sqlite_store):
    with TestClient(create_app(sqlite_store, access=Access(api_tokens=(TOKEN,)))) as c:
        yield c


def held_until(gate: threading.Event, agent: Agent):
    """`agent`'s answers, each sent once `gate` is set (or after 5 s: a launch that waited on them fails then)."""

    def reply(payload):
        gate.wait(5)
        return agent(payload)

    return reply


def test_dataset_then_experiment_polled_to_its_results(sqlite_store, client, server):
    make_cases(sqlite_store, 5)
    models_answer = threading.Event()
    server.route("fake-a", held_until(models_answer, Agent(server)))
    server.route("fake-b", held_until(models_answer, Agent(server, wrong=lambda i: i in (0, 4))))
    made = client.post(
        "/api/v1/datasets", json={"name": "refunds", "filter": {"status": "succeeded", "workflow": "refund"}}, headers=AUTH
    )
    assert made.status_code == 201 and made.json()["cases"] == 5
    assert [d["name"] for d in client.get("/api/v1/datasets", headers=AUTH).json()["datasets"]] == ["refunds"]
    assert len(client.get("/api/v1/datasets/refunds", headers=AUTH).json()["cases"]) == 5
    launched = client.post(
        "/api/v1/experiments",
        headers=AUTH,
        json={"dataset": "refunds", "models": ["openai/fake-a", "openai/fake-b"], "api_base": server.base_url, "concurrency": 1},
    )
    assert launched.status_code == 202, launched.text
    body = launched.json()
    assert body["status"] == "running" and body["poll"] == f"/api/v1/experiments/{body['experiment']}"
    polled = client.get(body["poll"], headers=AUTH).json()
    # the models have answered nothing yet: the 20 calls did not run inside the request
    assert polled["status"] == "running" and polled["progress"]["total"] == 10 and polled["progress"]["done"] == 0
    models_answer.set()
    deadline = time.monotonic() + 180  # a bound, not a speed: the first litellm call of a loaded worker takes its import
    while polled["status"] == "running" and time.monotonic() < deadline:
        assert polled["progress"]["total"] == 10
        time.sleep(0.1)
        polled = client.get(body["poll"], headers=AUTH).json()
    assert polled["status"] == "done" and polled["progress"]["done"] == 10
    assert [(v["model"], v["passed"]) for v in polled["variants"]] == [("openai/fake-a", 5), ("openai/fake-b", 3)]
    assert [r["case"] for r in polled["regressions"]] == ["refund-0", "refund-4"]
    assert [e["experiment"] for e in client.get("/api/v1/experiments", headers=AUTH).json()["experiments"]] == [
        body["experiment"]
    ]


def test_bad_requests_are_refused_with_a_reason_and_nothing_runs(sqlite_store, client, server):
    make_cases(sqlite_store, 1)
    cases = [
        ("/api/v1/datasets", {"name": "x", "runs": ["nope"]}, 422, "--runs: no such run: nope"),
        ("/api/v1/datasets", {"name": "x", "filter": {"colour": "red"}}, 422, "filter.colour: not a dataset filter"),
        ("/api/v1/datasets", [1, 2], 422, "body: expected a JSON object"),
        ("/api/v1/experiments", {"dataset": "nope", "models": ["x"]}, 422, "no dataset named 'nope'"),
    ]
    for path, payload, status, detail in cases:
        got = client.post(path, json=payload, headers=AUTH)
        assert got.status_code == status and got.json()["detail"].startswith(detail), got.text
    client.post("/api/v1/datasets", json={"name": "one", "runs": ["refund-0"]}, headers=AUTH)
    got = client.post(
        "/api/v1/experiments", json={"dataset": "one", "variants": [{"model": "openai/x", "temprature": 1}]}, headers=AUTH
    )
    assert got.status_code == 422 and got.json()["detail"] == "temprature: not a replay setting"
    assert client.get("/api/v1/experiments/exp-nope", headers=AUTH).status_code == 404
    assert client.get("/api/v1/datasets/nope", headers=AUTH).status_code == 404
    assert client.get("/api/v1/experiments").status_code == 401
    assert server.count() == 0


def test_two_experiments_compared_over_http(sqlite_store, client, server):
    from replay_core.whatif import experiment as ex
    from replay_core.whatif.replay_config import ReplayConfig

    make_cases(sqlite_store, 4, workflow="billing")  # succeeded: their answers count as right
    made = client.post(
        "/api/v1/datasets", json={"name": "billing", "filter": {"workflow": "billing", "agent": "support-bot"}}, headers=AUTH
    )
    assert made.status_code == 201 and made.json()["cases"] == 4
    ids = []
    for wrong in ((0,), (0, 1, 2)):
        server.route("m", Agent(server, wrong=lambda i, wrong=wrong: i in wrong))
        eid, _ = ex.start(sqlite_store, "billing", [ReplayConfig(model="openai/m", api_base=server.base_url)])
        ex.run(sqlite_store, eid)
        ids.append(eid)
    got = client.get(f"/api/v1/experiments/{ids[0]}/compare/{ids[1]}", headers=AUTH)
    assert got.status_code == 200, got.text
    [v] = got.json()["variants"]
    assert (v["a"]["passed"], v["b"]["passed"], [r["case"] for r in v["regressed"]]) == (3, 1, ["refund-1", "refund-2"])
    assert client.get(f"/api/v1/experiments/{ids[0]}/compare/exp-nope", headers=AUTH).status_code == 404
    assert client.get(f"/api/v1/experiments/{ids[0]}/compare/{ids[1]}?by=colour", headers=AUTH).status_code == 422
    assert client.get(f"/api/v1/experiments/{ids[0]}/compare/{ids[1]}").status_code == 401

"""The evaluation loop and experiments over HTTP: a queue's runs as a dataset, a feed, schedules and their
runs, a monitor's webhook; and every case an experiment launched over the API replays is audited with the
token's name, not the server's local user."""

from __future__ import annotations

import time

import pytest
from experiment_cases import Agent, make_cases, server  # noqa: F401  (server: a fixture)
from starlette.testclient import TestClient
from test_eval_loop import reviewed_queue

from replay_core.server.api import create_app
from replay_core.server.auth import Access

EDITOR, VIEWER = "ed1tor-token-0000", "v1ewer-token-0000"
ED = {"Authorization": f"Bearer {EDITOR}"}
VI = {"Authorization": f"Bearer {VIEWER}"}


@pytest.fixture
def client(sqlite_store):
    access = Access(api_tokens=(EDITOR, VIEWER), token_roles=("editor", "viewer"), token_names=("ci-bot", "watcher"))
    with TestClient(create_app(sqlite_store, access=access)) as c:
        yield c


def test_an_experiment_launched_over_the_api_audits_each_replay_as_the_token(sqlite_store, client, server):
    make_cases(sqlite_store, 3)
    server.route("fake-a", Agent(server))
    assert client.post(
        "/api/v1/datasets", json={"name": "d", "runs": ["refund-0", "refund-1", "refund-2"]}, headers=ED
    ).is_success
    launched = client.post(
        "/api/v1/experiments", json={"dataset": "d", "models": ["openai/fake-a"], "api_base": server.base_url}, headers=ED
    )
    assert launched.status_code == 202, launched.text
    poll, deadline = launched.json()["poll"], time.monotonic() + 60
    while client.get(poll, headers=ED).json()["status"] == "running" and time.monotonic() < deadline:
        time.sleep(0.1)
    replays = [e for e in sqlite_store.audit_entries(limit=200) if e["action"] == "replay" and e["target"].startswith("refund-")]
    assert sorted(e["target"] for e in replays) == ["refund-0", "refund-1", "refund-2"]
    assert {(e["who"], e["origin"]) for e in replays} == {("ci-bot", replays[0]["origin"])} and replays[0]["who"] != "local"


def test_queue_dataset_feed_and_schedules_over_http(sqlite_store, client):
    make_cases(sqlite_store, 4)
    queue_id = reviewed_queue(sqlite_store, 4, bad={0, 2})
    made = client.post(f"/api/v1/queues/{queue_id}/dataset", json={"name": "bad ones", "bad_only": True}, headers=ED)
    assert made.status_code == 201 and (made.json()["cases"], made.json()["version"]) == (2, 1)
    assert client.post(f"/api/v1/queues/{queue_id}/dataset", headers=VI).status_code == 403
    assert client.post("/api/v1/queues/999/dataset", headers=ED).status_code == 404
    refused = client.post(f"/api/v1/queues/{queue_id}/dataset", json={"verdicts": "Bad"}, headers=ED)
    assert refused.status_code == 422 and refused.json()["errors"][0]["loc"] == "verdicts"
    fed = client.put(f"/api/v1/queues/{queue_id}/feed", json={"dataset": "fed"}, headers=ED)
    assert fed.status_code == 200 and fed.json()["synced"]["cases"] == 2
    body = {"name": "nightly", "dataset": "fed", "models": ["recorded"], "trigger": "dataset_version"}
    added = client.post("/api/v1/schedules", json=body, headers=ED)
    assert added.status_code == 201, added.text
    assert client.post("/api/v1/schedules", json=body, headers=ED).json()["errors"][0]["loc"] == "name"
    assert client.post("/api/v1/schedules", json=body | {"name": "x"}, headers=VI).status_code == 403
    assert client.post("/api/v1/schedules/run-due", headers=ED).status_code == 202
    runs_url, deadline = f"/api/v1/schedules/{added.json()['id']}/runs", time.monotonic() + 60
    while not [r for r in client.get(runs_url, headers=VI).json()["runs"] if r["finished_at"]] and time.monotonic() < deadline:
        time.sleep(0.1)
    (run,) = client.get(runs_url, headers=VI).json()["runs"]
    assert run["reason"] == "first run" and run["result"]["status"] == "done"
    (listed,) = client.get("/api/v1/schedules", headers=VI).json()["schedules"]
    assert (listed["name"], listed["last_status"], listed["regressions"]) == ("nightly", "done", 0)
    assert client.get("/api/v1/schedules/99/runs", headers=VI).status_code == 404


def test_the_built_in_release_monitor_gets_a_webhook(sqlite_store, client):
    from replay_core.monitors.releases import ensure_monitor

    monitor = ensure_monitor(sqlite_store)
    url = f"/api/v1/monitors/{monitor['id']}/webhook"
    put = client.put(url, json={"url": "https://hooks.invalid/releases", "secret_env": "RELEASE_HOOK_SECRET"}, headers=ED)
    assert put.status_code == 200 and put.json()["webhook_url"] == "https://hooks.invalid/releases"
    assert sqlite_store.get_monitor("release agent_version")["webhook_secret_env"] == "RELEASE_HOOK_SECRET"
    assert client.put(url, json={"url": "ftp://x"}, headers=ED).json()["errors"][0]["loc"] == "webhook"
    assert client.put(url, json={"url": None}, headers=VI).status_code == 403
    assert client.put(url, json={"url": None}, headers=ED).json()["webhook_secret_env"] is None

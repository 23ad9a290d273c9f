"""The monitor, alert and release routes through Starlette's TestClient, on SQLite and PostgreSQL:
roles, bodies refused with the field named (never a 500), a monitor added, judged, muted and its
alert acknowledged — audited under the token's name — and a release comparison."""

from __future__ import annotations

import pytest
from monitor_workload import runs
from test_api_queues import as_, client  # noqa: F401  (a fixture: the API over the `store` fixture, tokens by role)

from replay_core.vocabulary import now_utc

RULE = {"metric": "failure_rate", "threshold": 0.2, "filters": {"workflow": "checkout"}}


def test_a_monitor_added_checked_muted_and_its_alert_acknowledged(client, store):
    runs(store, 40, day=1, fail=0.6, seed=11, now=now_utc())  # the routes judge the last 24 h of now
    body = {"name": "checkout failures", "rule": RULE}
    assert client.post("/api/v1/monitors", json=body, headers=as_("viewer")).status_code == 403
    made = client.post("/api/v1/monitors", json=body, headers=as_("editor"))
    assert made.status_code == 201, made.text
    mid = made.json()["id"]
    checked = client.post(f"/api/v1/monitors/{mid}/check", headers=as_("editor")).json()
    assert checked["verdict"] == "firing" and checked["event"] == "opened"
    [listed] = client.get("/api/v1/monitors", headers=as_("viewer")).json()["monitors"]
    assert listed["last_verdict"] == "firing" and listed["alert_open"] is True
    shown = client.get(f"/api/v1/monitors/{mid}", headers=as_("viewer")).json()
    assert shown["rule_sentence"].startswith("runs that failed") and shown["open_alert"]["figure"]["runs_link"]
    muted = client.post(f"/api/v1/monitors/{mid}/mute", json={"hours": 2}, headers=as_("editor"))
    assert muted.status_code == 200 and muted.json()["muted_until"]
    [alert] = client.get("/api/v1/alerts", params={"monitor": mid}, headers=as_("viewer")).json()["alerts"]
    assert any("charge_card" in p for p in alert["figure"]["patterns"])  # named when first shown
    assert alert["figure"]["patterns"] == shown["open_alert"]["figure"]["patterns"]
    assert client.post(f"/api/v1/alerts/{alert['id']}/ack", headers=as_("viewer")).status_code == 403
    acked = client.post(f"/api/v1/alerts/{alert['id']}/ack", headers=as_("editor")).json()
    assert acked["acked_by"].startswith("api token")
    assert client.get("/api/v1/alerts", headers=as_("viewer")).json()["alerts"][0]["acked_by"] == acked["acked_by"]
    audited = [(e["outcome"], e["who"]) for e in store.audit_entries(limit=20) if e["action"] == "manage_monitors"]
    done = [who for outcome, who in audited if outcome == "ok"]
    assert done == [acked["acked_by"]] * 3  # add, mute, ack; the viewer's two refusals are there too
    assert sorted(outcome for outcome, _ in audited) == ["denied", "denied", "ok", "ok", "ok"]
    assert client.get("/api/v1/monitors/999", headers=as_("viewer")).status_code == 404
    assert client.post("/api/v1/alerts/999/ack", headers=as_("editor")).status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "x", "rule": {"metric": "vibes", "threshold": 1}}, "metric"),
        ({"name": "x", "rule": {"metric": "failure_rate", "threshold": 2}}, "threshold"),
        ({"name": "x", "rule": "failure_rate > 0.2"}, "rule"),
        ({"name": "x"}, "rule"),
        ({"name": 7, "rule": RULE}, "name"),
        ({"name": "x", "rule": RULE, "webhook_url": "file:///etc/passwd"}, "webhook"),
        ({"name": "x", "rule": RULE, "colour": "red"}, "colour"),
        ([RULE], "body"),
    ],
)
def test_a_bad_monitor_body_is_a_422_naming_the_field(client, body, field):
    answer = client.post("/api/v1/monitors", json=body, headers=as_("editor"))
    assert answer.status_code == 422, answer.text
    assert answer.json()["errors"][0]["loc"] == field


def test_bad_parameters_are_422s(client):
    made = client.post("/api/v1/monitors", json={"name": "m", "rule": RULE}, headers=as_("editor")).json()
    for hours in (-1, "2", None, 10**9):
        answer = client.post(f"/api/v1/monitors/{made['id']}/mute", json={"hours": hours}, headers=as_("editor"))
        assert answer.status_code == 422 and answer.json()["errors"][0]["loc"] == "hours"
    assert client.get("/api/v1/alerts?limit=0", headers=as_("viewer")).status_code == 422
    missing = client.get("/api/v1/releases/compare?a=1.5.0", headers=as_("viewer"))
    assert missing.status_code == 422 and missing.json()["errors"][0]["loc"] == "b"
    odd = client.get("/api/v1/releases/compare?a=1&b=2&dimension=colour", headers=as_("viewer"))
    assert odd.status_code == 422 and odd.json()["errors"][0]["loc"] == "dimension"


def test_releases_compared_over_http(client, store):
    runs(store, 60, day=3, fail=0.05, version="1.5.0", seed=12)
    runs(store, 60, day=1, fail=0.60, version="1.6.0", seed=13)
    answer = client.get("/api/v1/releases/compare", params={"a": "1.5.0", "b": "1.6.0"}, headers=as_("viewer"))
    assert answer.status_code == 200
    scopes = answer.json()["scopes"]
    assert list(scopes) == ["all workflows", "checkout"]
    assert {m["metric"]: m["verdict"] for m in scopes["checkout"]}["failure_rate"] == "worse"
    few = client.get("/api/v1/releases/compare", params={"a": "1.5.0", "b": "1.6.0", "min_runs": 100}, headers=as_("viewer"))
    assert {m["verdict"] for m in few.json()["scopes"]["checkout"]} == {"no evidence yet"}

"""The queue and share routes through Starlette's TestClient, on SQLite and PostgreSQL: roles,
working a queue, and share links opened with no bearer token (404 unknown, 410 expired or
revoked, one object per token)."""

from __future__ import annotations

import csv
import io

import pytest
from starlette.testclient import TestClient
from test_queues import add_runs

from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.storage.tables import share_links

TOKENS = {"editor": "tok-editor-0123456789", "reviewer": "tok-reviewer-0123456789", "viewer": "tok-viewer-0123456789"}


@pytest.fixture
def client(store):
    access = Access(api_tokens=tuple(TOKENS.values()), token_roles=tuple(TOKENS), token_names=("", "Sam", ""))
    with TestClient(create_app(store, access=access)) as c:
        yield c


def as_(role: str) -> dict:
    return {"Authorization": f"Bearer {TOKENS[role]}"}


def test_a_queue_made_worked_and_read_over_http(client, store):
    add_runs(store, 3)
    add_runs(store, 1, status="succeeded", prefix="ok")
    body = {"name": "failed", "filter": {"status": "failed"}, "reviews_per_item": 1, "rubric": {"verdicts": ["Yes", "No"]}}
    assert client.post("/api/v1/queues", json=body, headers=as_("reviewer")).status_code == 403
    made = client.post("/api/v1/queues", json=body, headers=as_("editor"))
    assert made.status_code == 201 and made.json()["items"] == 3
    qid = made.json()["id"]
    assert client.post(f"/api/v1/queues/{qid}/next", json={"reviewer": "Sam"}, headers=as_("viewer")).status_code == 403
    item = client.post(f"/api/v1/queues/{qid}/next", json={"reviewer": "Sam"}, headers=as_("reviewer")).json()["item"]
    assert item["session_id"] == "run-0" and item["held_by"] == "Sam"
    bad = client.post(
        f"/api/v1/queues/{qid}/items/{item['id']}/review", json={"reviewer": "Sam", "verdict": "Maybe"}, headers=as_("reviewer")
    )
    assert bad.status_code == 422 and bad.json()["detail"] == "verdict: expected one of Yes, No, got 'Maybe'"
    ok = client.post(
        f"/api/v1/queues/{qid}/items/{item['id']}/review",
        json={"reviewer": "Sam", "verdict": "No", "note": "late"},
        headers=as_("reviewer"),
    )
    assert ok.status_code == 200
    nxt = client.post(f"/api/v1/queues/{qid}/next", json={"reviewer": "Sam"}, headers=as_("reviewer")).json()["item"]
    assert (
        client.post(f"/api/v1/queues/{qid}/items/{nxt['id']}/skip", json={"reviewer": "Sam"}, headers=as_("reviewer")).status_code
        == 200
    )
    shown = client.get(f"/api/v1/queues/{qid}", headers=as_("viewer")).json()
    assert shown["queue"]["reviews"] == 1 and shown["items"][0]["reviews"][0]["note"] == "late"
    listed = client.get("/api/v1/queues", headers=as_("viewer")).json()["queues"]
    assert [(q["id"], q["items_done"]) for q in listed] == [(qid, 1)]
    exported = client.get(f"/api/v1/queues/{qid}/export.csv", headers=as_("viewer"))
    assert exported.headers["content-type"].startswith("text/csv")
    assert list(csv.DictReader(io.StringIO(exported.text)))[0]["verdict"] == "No"
    assert client.get("/api/v1/queues/99", headers=as_("viewer")).status_code == 404
    assert (
        client.post("/api/v1/queues", json={"name": "x", "filter": {"status": "nope"}}, headers=as_("editor")).status_code == 422
    )
    assert client.delete(f"/api/v1/queues/{qid}", headers=as_("reviewer")).status_code == 403
    assert client.delete(f"/api/v1/queues/{qid}", headers=as_("editor")).json() == {"id": qid, "deleted": True}
    assert client.delete(f"/api/v1/queues/{qid}", headers=as_("editor")).status_code == 404


def test_a_share_opens_without_a_token_and_shows_only_its_run(client, store):
    add_runs(store, 2)
    assert client.post("/api/v1/shares", json={"session": "run-0"}, headers=as_("reviewer")).status_code == 403
    made = client.post("/api/v1/shares", json={"session": "run-0", "expires": "1d"}, headers=as_("editor")).json()
    opened = client.get(f"/api/v1/share/{made['token']}")  # no bearer token
    assert opened.status_code == 200 and opened.headers["cache-control"] == "no-store"
    body = opened.json()
    assert body["kind"] == "run" and body["run"]["session"]["id"] == "run-0"
    assert {s["session_id"] for s in body["run"]["steps"]} == {"run-0"}
    assert "run-1" not in opened.text
    # the token opens its own object only: nothing the visitor adds reaches another run
    assert "run-1" not in client.get(f"/api/v1/share/{made['token']}?session=run-1").text
    assert client.get("/api/v1/sessions/run-1", headers={"Authorization": f"Bearer {made['token']}"}).status_code == 401
    assert client.get("/api/v1/share/unknown-token").status_code == 404
    listed = client.get("/api/v1/shares", headers=as_("editor")).json()["shares"]
    assert [(s["id"], s["opened"], s["state"]) for s in listed] == [(made["id"], 2, "active")]
    assert made["token"] not in str(listed)
    assert client.delete(f"/api/v1/shares/{made['id']}", headers=as_("editor")).json() == {"id": made["id"], "revoked": True}
    gone = client.get(f"/api/v1/share/{made['token']}")
    assert gone.status_code == 410 and gone.json()["reason"] == "revoked"
    assert gone.json()["detail"].startswith("This link was revoked on ")


def test_expired_compare_and_queue_shares(client, store):
    add_runs(store, 2)
    pair = client.post("/api/v1/shares", json={"session": "run-0", "other": "run-1"}, headers=as_("editor")).json()
    body = client.get(f"/api/v1/share/{pair['token']}").json()
    assert body["kind"] == "compare" and [r["session"]["id"] for r in body["runs"]] == ["run-0", "run-1"]
    assert body["comparison"]["a"] == "run-0"
    qid = client.post("/api/v1/queues", json={"name": "q", "runs": ["run-1"]}, headers=as_("editor")).json()["id"]
    q = client.post("/api/v1/shares", json={"queue": qid}, headers=as_("editor")).json()
    shown = client.get(f"/api/v1/share/{q['token']}").json()
    assert shown["kind"] == "queue" and [i["session_id"] for i in shown["items"]] == ["run-1"] and "steps" not in str(shown)
    with store.engine.begin() as conn:
        conn.execute(share_links.update().where(share_links.c.id == pair["id"]).values(expires_at=share_links.c.created_at))
    expired = client.get(f"/api/v1/share/{pair['token']}")
    assert expired.status_code == 410 and expired.json()["reason"] == "expired"
    assert client.post("/api/v1/shares", json={"session": "nope"}, headers=as_("editor")).status_code == 422
    assert (
        client.post("/api/v1/shares", json={"session": "run-0", "expires": "forever"}, headers=as_("editor")).status_code == 422
    )
    opens = [e for e in store.audit_entries(actions=["share"]) if e["detail"]["op"] == "open"]
    assert [e["outcome"] for e in opens] == ["expired", "ok", "ok"]

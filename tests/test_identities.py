"""Who acts comes from a credential, never from what a request or a command line types in.

The CLI's role (AGENT_REPLAY_CLI_ROLE) is one of the three roles or the command stops, and every
command checks it before it touches data; a reviewer's API token is one reviewer, whatever the body
says; every change is in the audit log under the actor that made it. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import io

import orjson
import pytest
from cli_helpers import run_main
from PIL import Image
from starlette.testclient import TestClient
from test_access import bearer
from test_queues import add_runs

from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.storage.actor import ROLES

TOKENS = "editor:ed:tok-editor-0000,reviewer:alice:tok-alice-0000,reviewer:bob:tok-bob-0000,reviewer:tok-anon-0000"


def cli(monkeypatch, store, *args, role: str | None = None):
    return run_main(monkeypatch, [*args, "--db", store.url], {"AGENT_REPLAY_CLI_ROLE": role, "COLUMNS": "300"})


def lines(store, action: str) -> list[dict]:
    return store.audit_entries(actions=[action])


def test_an_unknown_cli_role_stops_every_command_naming_the_roles(store, monkeypatch):
    add_runs(store, 2)
    for args in (["sessions"], ["stats"], ["retention", "--days", "0.0001"]):
        ran = cli(monkeypatch, store, *args, role="admin")
        assert ran.returncode == 1
        assert ran.stderr.strip() == "error: AGENT_REPLAY_CLI_ROLE: expected one of viewer, reviewer, editor, got 'admin'"
    assert store.count_sessions() == 2


def test_the_cli_role_is_enforced_on_retention_and_datasets(store, monkeypatch):
    add_runs(store, 3)
    ran = cli(monkeypatch, store, "retention", "--days", "0.0001", role="viewer")
    assert ran.returncode == 1 and "viewers may not delete runs" in ran.stderr
    ran = cli(monkeypatch, store, "dataset", "create", "ds", "--runs", "run-0", role="viewer")
    assert ran.returncode == 1 and "viewers may not" in ran.stderr
    assert store.count_sessions() == 3 and store.get_dataset("ds") is None
    refused = [(e["action"], e["outcome"], e["role"], e["origin"]) for e in store.audit_entries(outcomes=["denied"])]
    assert sorted(refused) == [("delete", "denied", "viewer", "cli"), ("ingest", "denied", "viewer", "cli")]
    assert cli(monkeypatch, store, "dataset", "create", "ds", "--runs", "run-0", role="editor").returncode == 0
    (made,) = lines(store, "dataset")
    assert (made["role"], made["origin"], made["target"], made["detail"]["cases"]) == ("editor", "cli", "dataset ds", 1)
    ran = cli(monkeypatch, store, "retention", "--days", "0.0001")
    assert ran.returncode == 0 and store.count_sessions() == 0
    (deleted,) = [e for e in lines(store, "delete") if e["outcome"] == "ok"]
    assert (deleted["role"], deleted["origin"], deleted["detail"]["sessions"]) == ("editor", "cli", 3)
    assert deleted["who"] != "retention policy"


def test_every_cli_command_checks_the_role():
    from typer.main import get_group

    from replay_core.cli.all_commands import app

    def walk(group, prefix=""):
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                yield from walk(command, f"{prefix}{name} ")
            else:
                yield prefix + name, command

    found = dict(walk(get_group(app)))
    assert len(found) > 30
    unchecked = [name for name, command in found.items() if getattr(command.callback, "__wrapped__", None) is None]
    assert unchecked == []
    assert {vars(c.callback.__wrapped__).get("cli_action") or vars(c.callback).get("cli_action") for c in found.values()} <= {
        "read",
        "import",
        "ingest",
        "replay",
        "delete",
        "read_audit",
        "manage_queues",
        "share",
        "maintain",
        "manage_monitors",
    }


def test_demo_force_is_audited(store, monkeypatch):
    add_runs(store, 1)
    assert cli(monkeypatch, store, "demo", "--force").returncode == 0
    (loaded,) = lines(store, "import")
    assert (loaded["origin"], loaded["target"]) == ("cli", "demo") and loaded["detail"]["sessions"] > 1
    ran = cli(monkeypatch, store, "demo", "--force", role="reviewer")
    assert ran.returncode == 1 and "reviewers may not import runs" in ran.stderr


@pytest.fixture
def api(store):
    access = Access.load(env={"AGENT_REPLAY_API_TOKENS": TOKENS}, secrets={})
    with TestClient(create_app(store, access=access)) as c:
        yield c


def test_a_reviewer_token_is_one_reviewer(api, store):
    access = Access.load(env={"AGENT_REPLAY_API_TOKENS": TOKENS}, secrets={})
    assert [access.token_actor(f"Bearer {t}").who for t in access.api_tokens[:3]] == ["ed", "alice", "bob"]
    assert access.token_actor("Bearer tok-anon-0000").who.startswith("api token ")
    assert set(access.token_roles) <= set(ROLES)
    add_runs(store, 2)
    made = api.post(
        "/api/v1/queues", json={"name": "q", "runs": ["run-0", "run-1"], "assign": ["alice"]}, headers=bearer("tok-editor-0000")
    )
    qid = made.json()["id"]
    stolen = api.post(f"/api/v1/queues/{qid}/next", json={"reviewer": "alice"}, headers=bearer("tok-bob-0000"))
    assert stolen.status_code == 422 and stolen.json()["errors"][0]["loc"] == "reviewer" and "'bob'" in stolen.json()["detail"]
    assert api.post(f"/api/v1/queues/{qid}/next", json={}, headers=bearer("tok-bob-0000")).status_code == 422  # not assigned
    item = api.post(f"/api/v1/queues/{qid}/next", json={}, headers=bearer("tok-alice-0000")).json()["item"]
    assert item["held_by"] == "alice"
    review = {"reviewer": "alice", "verdict": "Good"}
    stolen = api.post(f"/api/v1/queues/{qid}/items/{item['id']}/review", json=review, headers=bearer("tok-bob-0000"))
    assert stolen.status_code == 422
    ok = api.post(f"/api/v1/queues/{qid}/items/{item['id']}/review", json={"verdict": "Good"}, headers=bearer("tok-alice-0000"))
    assert ok.status_code == 200
    (saved,) = [e for e in lines(store, "review") if e["outcome"] == "ok"]
    assert (saved["who"], saved["role"], saved["detail"]["reviewer"]) == ("alice", "reviewer", "alice")
    shown = api.get(f"/api/v1/queues/{qid}", headers=bearer("tok-bob-0000")).json()
    assert [r["reviewer"] for i in shown["items"] for r in i["reviews"]] == ["alice"]


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (4, 4), "red").save(out, "PNG")
    return out.getvalue()


def test_every_write_over_http_is_audited_once_per_request_as_its_token(api, store):
    ed = bearer("tok-editor-0000")
    steps = [{"event_id": f"e{i}", "seq": i, "type": "think", "content": "x"} for i in range(1, 51)]
    assert api.post("/api/v1/sessions", json={"session_id": "h1", "name": "h"}, headers=ed).status_code == 200
    assert api.post("/api/v1/sessions/h1/steps", json={"steps": steps}, headers=ed).status_code == 200
    png = api.post("/api/v1/sessions/h1/steps/e1/attachments", content=_png(), headers={**ed, "Content-Type": "image/png"})
    assert png.status_code == 200, png.text
    otlp = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "cd" * 16,
                                "spanId": f"{i:016x}",
                                "name": "plan",
                                "startTimeUnixNano": "1700000000000000000",
                                "endTimeUnixNano": "1700000001000000000",
                            }
                            for i in range(1, 21)
                        ]
                    }
                ]
            }
        ]
    }
    r = api.post("/v1/traces", content=orjson.dumps(otlp), headers={**ed, "Content-Type": "application/json"})
    assert r.status_code == 200
    made = api.post("/api/v1/datasets", json={"name": "d", "runs": ["h1"], "expected": "x"}, headers=ed)
    assert made.status_code == 201, made.text
    ingests = lines(store, "ingest")
    assert [(e["who"], e["origin"], e["detail"]["steps"]) for e in reversed(ingests)] == [
        ("ed", "testclient", 0),
        ("ed", "testclient", 50),
        ("ed", "testclient", 20),
    ]
    (attached,) = lines(store, "attach")
    assert (attached["who"], attached["target"]) == ("ed", "h1 e1")
    (dataset,) = lines(store, "dataset")
    assert (dataset["who"], dataset["target"], dataset["detail"]["cases"]) == ("ed", "dataset d", 1)

"""Data integrity over HTTP, on SQLite and PostgreSQL: hostile but storable-looking input is a
422 naming the field (never a 500), every error is JSON, an ended run keeps its end unless
replaced, a database that cannot take writes answers 503 and /healthz says degraded.

Each case is tried on both databases."""

from __future__ import annotations

import os
import stat

import pytest
from starlette.testclient import TestClient

from replay_core.events import JSON_MAX_DEPTH
from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.storage.store import Store

TOKEN = "integrity-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def client(store):
    with TestClient(create_app(store, access=Access(api_tokens=(TOKEN,))), raise_server_exceptions=False) as c:
        yield c


def nested(depth: int):
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def step(**fields) -> dict:
    return {"type": "think", "content": "c", **fields}


LONG = "x" * 201
STEP_CASES = [
    ("seq ≥ 2^63", [step(seq=2**63)], "steps[0].seq"),
    ("seq ≥ 2^31", [step(seq=2**31)], "steps[0].seq"),
    ("tokens_in ≥ 2^63", [step(tokens_in=2**63)], "steps[0].tokens_in"),
    ("tokens_out ≥ 2^31", [step(tokens_out=2**31)], "steps[0].tokens_out"),
    ("retry ≥ 2^31", [step(retry=2**31)], "steps[0].retry"),
    # found by the fuzz: a finite duration whose µs overflow to infinity in the rollups
    ("duration_ms 1e308", [step(duration_ms=1e308)], "steps[0].duration_ms"),
    ("cost_usd past 1e15", [step(cost_usd=2e15)], "steps[0].cost_usd"),
    ("duration_ms an int past 1e15", [step(duration_ms=10**16)], "steps[0].duration_ms"),
    ("tool_args nested 256 deep", [step(type="tool_call", tool_name="t", tool_args=nested(256))], "steps[0].tool_args"),
    ("metadata nested past the cap", [step(metadata={"a": nested(JSON_MAX_DEPTH)})], "steps[0].metadata"),
    ("NUL in content", [step(content="a\x00b")], "steps[0].content"),
    ("NUL in a metadata key", [step(metadata={"k\x00": 1})], "steps[0].metadata"),
    ("NUL in an unknown field's name", [step(**{"extra\x00": 1})], "steps[0].metadata"),
    ("NUL in tool_args", [step(type="tool_call", tool_name="t", tool_args={"q": "a\x00"})], "steps[0].tool_args"),
    ("NUL in context", [step(context=[{"role": "user", "content": "\x00"}])], "steps[0].context"),
    ("tool_name over 200", [step(type="tool_call", tool_name=LONG)], "steps[0].tool_name"),
    ("event_id over 200", [step(event_id=LONG)], "steps[0].event_id"),
    ("parent_id over 200", [step(parent_id=LONG)], "steps[0].parent_id"),
    ("model over 200", [step(model=LONG)], "steps[0].model"),
    ("tool_call_id over 200", [step(tool_call_id=LONG)], "steps[0].tool_call_id"),
    ("error_class over 200", [step(type="error", error_class=LONG)], "steps[0].error_class"),
]

SESSION_CASES = [
    ("NUL in session id", {"session_id": "run\x00"}, "session_id"),
    ("session id over 200", {"session_id": LONG}, "session_id"),
    ("NUL in name", {"session_id": "r", "name": "a\x00"}, "name"),
    ("environment over 100", {"session_id": "r", "environment": "e" * 101}, "environment"),
    ("agent_version over 100", {"session_id": "r", "agent_version": "v" * 101}, "agent_version"),
    ("source over 100", {"session_id": "r", "source": "s" * 101}, "source"),
    ("agent_id over 200", {"session_id": "r", "agent_id": LONG}, "agent_id"),
    ("workflow over 200", {"session_id": "r", "workflow": LONG}, "workflow"),
    ("replay_from ≥ 2^31", {"session_id": "r", "replay_from": 2**31}, "replay_from"),
    ("replay_of names an unknown run", {"session_id": "r", "replay_of": "no-such-run"}, "replay_of"),
    ("NUL in a tag", {"session_id": "r", "tags": ["ok", "b\x00"]}, "tags.1"),
]


@pytest.mark.parametrize("case, body, loc", STEP_CASES, ids=[c[0] for c in STEP_CASES])
def test_a_bad_step_is_a_422_naming_the_field_and_nothing_is_stored(client, store, case, body, loc):
    res = client.post("/api/v1/sessions/run-1/steps", json=body, headers=AUTH)
    assert res.status_code == 422, res.text
    assert res.headers["content-type"] == "application/json"
    assert res.json()["errors"][0]["loc"] == loc
    assert store.count_sessions() == 0


@pytest.mark.parametrize("case, body, loc", SESSION_CASES, ids=[c[0] for c in SESSION_CASES])
def test_a_bad_session_is_a_422_naming_the_field_and_nothing_is_stored(client, store, case, body, loc):
    res = client.post("/api/v1/sessions", json=body, headers=AUTH)
    assert res.status_code == 422, res.text
    assert loc in {e["loc"] for e in res.json()["errors"]}
    assert store.count_sessions() == 0


@pytest.mark.parametrize(
    "query, loc",
    [
        ({"offset": "9223372036854775808"}, "offset"),
        ({"q": "\x00"}, "q"),
        ({"model": "m\x00"}, "model"),
        ({"limit": "99999999999999999999"}, "limit"),
    ],
)
def test_bad_query_parameters_are_a_422(client, query, loc):
    res = client.get("/api/v1/sessions", params=query, headers=AUTH)
    assert res.status_code == 422, res.text
    assert res.json()["errors"][0]["loc"] == loc


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/sessions/a%00b",
        f"/api/v1/sessions/{LONG}",
        "/api/v1/sessions/a%00b/snapshot?step=1",
        "/api/v1/sessions/r/snapshot?step=9223372036854775808",
    ],
)
def test_bad_ids_in_the_path_are_a_422(client, path):
    res = client.get(path, headers=AUTH)
    assert res.status_code == 422, res.text
    assert res.json()["detail"]


def test_values_at_the_limits_are_stored_on_both_databases(client, store):
    sid = "s" * 200
    res = client.post(
        "/api/v1/sessions",
        json={
            "session_id": sid,
            "environment": "e" * 100,
            "source": "s" * 100,
            "agent_version": "v" * 100,
            "replay_from": 2**31 - 1,
        },
        headers=AUTH,
    )
    assert res.status_code == 200, res.text
    body = [
        step(
            seq=2**31 - 1,
            tokens_in=2**31 - 1,
            retry=2**31 - 1,
            tool_name="t" * 200,
            tool_args={"deep": nested(JSON_MAX_DEPTH - 1), "big": 2**63 - 1, "literal": "\\u0000"},
        )
    ]
    res = client.post(f"/api/v1/sessions/{sid}/steps", json=body, headers=AUTH)
    assert res.status_code == 200, res.text
    [stored] = store.load_steps(sid)
    assert (stored.seq, stored.tokens_in, stored.tool_args["big"]) == (2**31 - 1, 2**31 - 1, 2**63 - 1)
    assert stored.tool_args["literal"] == "\\u0000"
    assert client.get(f"/api/v1/sessions/{sid}", headers=AUTH).status_code == 200


OTLP_BAD_KEY = {
    "resourceSpans": [
        {
            "scopeSpans": [
                {
                    "spans": [
                        {
                            "traceId": "0af7651916cd43dd8448eb211c80319c",
                            "spanId": "b7ad6b7169203331",
                            "name": "chat gpt-4o",
                            "startTimeUnixNano": "1700000000000000000",
                            "endTimeUnixNano": "1700000001000000000",
                            "attributes": [
                                {"key": 5, "value": {"stringValue": "x"}},
                                {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "123456789012345678901"}},
                            ],
                        }
                    ]
                }
            ]
        }
    ]
}


@pytest.mark.parametrize(
    "attributes",
    [
        [{"key": 5, "value": {"stringValue": "x"}}],
        [{"key": "gen_ai.usage.input_tokens", "value": {"intValue": "123456789012345678901"}}],
        [{"key": "custom.big", "value": {"intValue": "123456789012345678901"}}],
    ],
    ids=["non-string key", "20-digit token count", "20-digit custom attribute"],
)
def test_hostile_otlp_attributes_are_never_a_500(client, store, attributes):
    body = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {"spans": [{**OTLP_BAD_KEY["resourceSpans"][0]["scopeSpans"][0]["spans"][0], "attributes": attributes}]}
                ]
            }
        ]
    }
    res = client.post("/v1/traces", json=body, headers=AUTH)
    assert res.status_code < 500, res.text
    assert res.headers["content-type"].startswith("application/json")


# ---------------------------------------------------------------- an ended run keeps its end


def test_a_second_different_end_is_refused_with_409_and_replace_overrides_it(client, store):
    client.post("/api/v1/sessions", json={"session_id": "r", "name": "first name"}, headers=AUTH)
    assert client.post("/api/v1/sessions/r/end", json={"status": "failed", "outcome": "boom"}, headers=AUTH).status_code == 200
    again = client.post("/api/v1/sessions/r/end", json={"status": "failed", "outcome": "boom"}, headers=AUTH)
    assert again.status_code == 200  # the same end again (a retried delivery) is fine
    res = client.post("/api/v1/sessions/r/end", json={"status": "succeeded"}, headers=AUTH)
    assert res.status_code == 409
    assert "already ended" in res.json()["detail"]
    res = client.post("/api/v1/sessions", json={"session_id": "r", "name": "renamed"}, headers=AUTH)
    assert res.status_code == 409
    row = store.get_session("r")
    assert (row["status"], row["outcome"], row["name"]) == ("failed", "boom", "first name")
    res = client.post("/api/v1/sessions/r/end?replace=true", json={"status": "succeeded", "outcome": "fixed"}, headers=AUTH)
    assert res.status_code == 200
    assert (
        client.post("/api/v1/sessions?replace=true", json={"session_id": "r", "name": "renamed"}, headers=AUTH).status_code == 200
    )
    row = store.get_session("r")
    assert (row["status"], row["outcome"], row["name"]) == ("succeeded", "fixed", "renamed")
    assert client.post("/api/v1/sessions/r/end?replace=maybe", json={}, headers=AUTH).status_code == 422


def test_a_late_end_still_closes_a_running_or_idle_run(client, store):
    for sid in ("running", "idle"):
        client.post(f"/api/v1/sessions/{sid}/steps", json=[step(timestamp="2026-01-01T00:00:00Z")], headers=AUTH)
    assert store.expire_idle() >= 1
    assert store.get_session("idle")["status"] == "incomplete"
    for sid in ("running", "idle"):
        assert client.post(f"/api/v1/sessions/{sid}/end", json={"status": "failed"}, headers=AUTH).status_code == 200
        assert store.get_session(sid)["status"] == "failed"


def test_steps_still_reach_an_ended_run(client, store):
    client.post("/api/v1/sessions/r/steps", json=[step(event_id="a")], headers=AUTH)
    client.post("/api/v1/sessions/r/end", json={"status": "succeeded"}, headers=AUTH)
    assert client.post("/api/v1/sessions/r/steps", json=[step(event_id="b")], headers=AUTH).json()["steps"] == 1
    assert store.get_session("r")["status"] == "succeeded"


def test_import_keeps_an_ended_run_and_reports_it_unless_replace(store, tmp_path):
    from replay_core.ingest.pipeline import import_file

    def run_file(name: str, status: str) -> str:
        path = tmp_path / name
        path.write_text(
            f'{{"schema":"agent-replay/v1","kind":"session","session_id":"imp","name":"{name}"}}\n'
            '{"schema":"agent-replay/v1","kind":"step","session_id":"imp","type":"think","content":"hi","event_id":"e1"}\n'
            f'{{"schema":"agent-replay/v1","kind":"session_end","session_id":"imp","status":"{status}"}}\n'
        )
        return str(path)

    first = import_file(store, run_file("a.jsonl", "failed"))
    assert first.conflicts == []
    second = import_file(store, run_file("b.jsonl", "succeeded"))
    assert len(second.conflicts) == 1 and "imp" in second.conflicts[0]
    assert (store.get_session("imp")["status"], store.get_session("imp")["name"]) == ("failed", "a.jsonl")
    third = import_file(store, run_file("b.jsonl", "succeeded"), replace=True)
    assert third.conflicts == []
    assert (store.get_session("imp")["status"], store.get_session("imp")["name"]) == ("succeeded", "b.jsonl")


# ---------------------------------------------------------------- a database that cannot take writes


def test_a_read_only_sqlite_file_answers_503_with_retry_after_and_healthz_degraded(tmp_path):
    path = tmp_path / "ro.db"
    Store(f"sqlite:///{path}").close()
    writable = Store(f"sqlite:///{path}")
    writable.write([])
    ro = Store(f"sqlite:///file:{path}?mode=ro&uri=true", migrate=False)
    with TestClient(create_app(ro, access=Access(api_tokens=(TOKEN,))), raise_server_exceptions=False) as c:
        assert c.get("/healthz").json()["status"] == "ok"
        res = c.post("/api/v1/sessions", json={"session_id": "r"}, headers=AUTH)
        assert res.status_code == 503, res.text
        assert res.headers["retry-after"] == "30"
        assert "readonly" in res.json()["detail"]
        health = c.get("/healthz").json()
        assert health["status"] == "degraded" and "readonly" in health["reason"]
    # the same file made writable again through a writable store: writes succeed, health recovers
    app = create_app(writable, access=Access(api_tokens=(TOKEN,)))
    with TestClient(app) as c:
        assert c.post("/api/v1/sessions", json={"session_id": "r"}, headers=AUTH).status_code == 200
        assert c.get("/healthz").json()["status"] == "ok"
    ro.close()
    writable.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file permissions")
def test_a_chmod_read_only_sqlite_file_answers_503(tmp_path):  # pragma: no cover - needs a non-root user
    path = tmp_path / "ro.db"
    Store(f"sqlite:///{path}").close()
    os.chmod(path, stat.S_IRUSR)
    with TestClient(create_app(Store(f"sqlite:///{path}", migrate=False), access=Access(api_tokens=(TOKEN,)))) as c:
        assert c.post("/api/v1/sessions", json={"session_id": "r"}, headers=AUTH).status_code == 503


def test_unknown_routes_and_methods_answer_json(client):
    for res in (client.get("/api/v1/nothing"), client.delete("/api/v1/sessions", headers=AUTH)):
        assert res.status_code in (404, 405)
        assert res.headers["content-type"] == "application/json"


def test_import_names_file_line_and_field_for_a_value_past_the_limits(store, tmp_path):
    from replay_core.ingest.pipeline import ImportRejected, import_file

    path = tmp_path / "long.jsonl"
    path.write_text(
        '{"schema":"agent-replay/v1","kind":"session","session_id":"f"}\n'
        '{"schema":"agent-replay/v1","kind":"step","session_id":"f","type":"tool_call","tool_name":"%s"}\n'
        '{"schema":"agent-replay/v1","kind":"step","session_id":"f","type":"think","seq":2147483648}\n' % ("t" * 300)
    )
    with pytest.raises(ImportRejected) as caught:
        import_file(store, path)
    lines = [str(e) for e in caught.value.errors]
    assert len(lines) == 2
    assert lines[0].startswith(f"{path}:2") and "tool_name" in lines[0] and "\n" not in lines[0]
    assert lines[1].startswith(f"{path}:3") and "seq" in lines[1]
    assert store.count_sessions() == 0


def test_errors_keep_the_keep_alive_connection_on_a_served_api(store):
    import http.client

    from api_thread import api_in_thread

    with api_in_thread(store.url, TOKEN) as base:
        conn = http.client.HTTPConnection(base.removeprefix("http://"), timeout=30)
        headers = {**AUTH, "Content-Type": "application/json"}
        requests = [
            ("POST", "/api/v1/sessions/r/steps", '[{"type":"think","seq":9223372036854775808}]', 422),
            ("GET", "/api/v1/sessions?q=%00", None, 422),
            ("GET", "/api/v1/sessions?offset=9223372036854775808", None, 422),
            ("POST", "/api/v1/sessions", '{"session_id":"x","replay_of":"nobody"}', 422),
            ("GET", "/api/v1/nothing", None, 404),
            ("POST", "/api/v1/sessions", "{not json", 400),
            ("GET", "/api/v1/sessions/missing", None, 404),
            ("GET", "/healthz", None, 200),
        ]
        sockets = set()
        for method, path, body, status in requests:
            conn.request(method, path, body=body, headers=headers)
            res = conn.getresponse()
            payload = res.read()
            assert (res.status, res.getheader("content-type")) == (status, "application/json"), payload
            assert not res.will_close
            sockets.add(id(conn.sock))
        assert len(sockets) == 1
        conn.close()


@pytest.mark.postgres
def test_a_read_only_postgres_answers_503_and_healthz_degraded(pg_store):
    from sqlalchemy import create_engine

    engine = create_engine(pg_store.url, connect_args={"options": "-c default_transaction_read_only=on"})
    ro = Store(pg_store.url, engine=engine, migrate=False)
    with TestClient(create_app(ro, access=Access(api_tokens=(TOKEN,))), raise_server_exceptions=False) as c:
        res = c.post("/api/v1/sessions/r/steps", json=[step()], headers=AUTH)
        assert res.status_code == 503, res.text
        assert res.headers["retry-after"] == "30" and "read-only" in res.json()["detail"]
        health = c.get("/healthz").json()
        assert health["status"] == "degraded" and "read-only" in health["reason"]
    ro.close()


def test_cli_import_reports_kept_runs_and_replace_changes_them(store, tmp_path):
    from typer.testing import CliRunner

    from replay_core.cli import app

    def write(name: str, status: str):
        path = tmp_path / name
        path.write_text(
            f'{{"schema":"agent-replay/v1","kind":"session","session_id":"cli-run","name":"{name}"}}\n'
            '{"schema":"agent-replay/v1","kind":"step","session_id":"cli-run","event_id":"e1","type":"think","content":"x"}\n'
            f'{{"schema":"agent-replay/v1","kind":"session_end","session_id":"cli-run","status":"{status}"}}\n'
        )
        return str(path)

    runner = CliRunner()
    assert runner.invoke(app, ["import", write("a.jsonl", "failed"), "--db", store.url]).exit_code == 0
    res = runner.invoke(app, ["import", write("b.jsonl", "succeeded"), "--db", store.url])
    assert res.exit_code == 0, res.output
    assert "kept: session 'cli-run' already ended (failed)" in res.output
    assert store.get_session("cli-run")["status"] == "failed"
    res = runner.invoke(app, ["import", write("b.jsonl", "succeeded"), "--db", store.url, "--replace"])
    assert res.exit_code == 0 and "kept:" not in res.output
    assert (store.get_session("cli-run")["status"], store.get_session("cli-run")["name"]) == ("succeeded", "b.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"schema":"agent-replay/v1","kind":"session","session_id":"r2","replay_of":"ghost"}\n'
        '{"schema":"agent-replay/v1","kind":"step","session_id":"r2","event_id":"e1","type":"think","content":"x"}\n'
    )
    res = runner.invoke(app, ["import", str(bad), "--db", store.url])
    said = " ".join(res.output.split())  # the console wraps long lines at its width
    assert res.exit_code == 1 and f"{bad}: replay_of: session 'r2' names 'ghost'" in said and "Traceback" not in said


# ---------------------------------------------------------------- the JSON rule, as a property

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as hs  # noqa: E402

from replay_core.events import _json_ok, _json_problem  # noqa: E402

_scalars = (
    hs.none()
    | hs.booleans()
    | hs.integers(min_value=-(2**65), max_value=2**65)
    | hs.floats(allow_nan=False)
    | hs.text(alphabet=hs.sampled_from('ab\x00\\u0{}[]"'), max_size=8)
)
_json = hs.recursive(
    _scalars,
    lambda kids: hs.lists(kids, max_size=3) | hs.dictionaries(hs.text(alphabet="ab\x00", max_size=3), kids, max_size=3),
    max_leaves=20,
)


def _deep(depth: int, leaf):
    for _ in range(depth):
        leaf = [leaf] if depth % 2 else {"k": leaf}
    return leaf


@settings(deadline=None, derandomize=True)
@given(value=_json, depth=hs.integers(min_value=0, max_value=140))
def test_the_fast_json_check_agrees_with_the_walk_and_what_it_accepts_serializes(value, depth):
    import orjson

    value = _deep(depth, value) if depth > 120 else value
    expected = _json_problem(value)
    try:
        _json_ok(value)
        accepted = True
    except ValueError as exc:
        accepted = False
        assert str(exc) == expected
    assert accepted == (expected is None)
    if accepted:  # the store's serializer, inside a few more levels as the API answers wrap it
        assert b"\\u0000" not in orjson.dumps({"steps": [{"tool_args": value}]}).replace(b"\\\\", b"")

"""The HTTP API through Starlette's TestClient, on SQLite and PostgreSQL: every route, every error."""

from __future__ import annotations

import gzip

import orjson
import pytest
from apptest_helpers import emit_agent_spans
from starlette.testclient import TestClient

from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.storage.filter_params import session_filter
from replay_core.storage.store import SessionFilter

TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def client(store):
    with TestClient(create_app(store, access=Access(api_tokens=("other-token", TOKEN)), max_body=64 * 1024)) as c:
        yield c


def steps(n: int, start: int = 1, **extra) -> list[dict]:
    kinds = ["think", "tool_call", "tool_result", "decision"]
    out = []
    for seq in range(start, start + n):
        kind = kinds[(seq - 1) % 4]
        step = {
            "event_id": f"e{seq}",
            "seq": seq,
            "type": kind,
            "timestamp": f"2026-05-01T09:00:{seq % 60:02d}Z",
            "tokens_in": 10,
            "tokens_out": 2,
            "cost_usd": 0.001,
            **extra,
        }
        if kind == "tool_call":
            step.update(tool_name="search", tool_args={"q": f"item {seq}"}, tool_call_id=f"c{seq}")
        elif kind == "tool_result":
            step.update(tool_name="search", tool_call_id=f"c{seq - 1}", content='{"hits": 3}')
        else:
            step["content"] = f"step {seq} thinking about the order"
        out.append(step)
    return out


def open_run(client, sid="run-1", **fields):
    body = {
        "session_id": sid,
        "name": "refund request",
        "model": "gpt-4o",
        "agent_id": "support-bot",
        "started_at": "2026-05-01T09:00:00Z",
        **fields,
    }
    res = client.post("/api/v1/sessions", json=body, headers=AUTH)
    assert res.status_code == 200, res.text
    return res.json()


# ------------------------------------------------------------------ auth


def test_healthz_needs_no_token(client):
    res = client.get("/healthz")
    assert res.status_code == 200
    assert res.json() == {"status": "ok", "sessions": 0}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/api/v1/sessions"),
        ("get", "/api/v1/sessions"),
        ("get", "/api/v1/sessions/run-1"),
        ("post", "/api/v1/sessions/run-1/steps"),
        ("post", "/api/v1/sessions/run-1/end"),
        ("get", "/api/v1/sessions/run-1/snapshot?step=1"),
        ("post", "/v1/traces"),
    ],
)
@pytest.mark.parametrize(
    "header",
    [None, "Bearer wrong-token", f"Basic {TOKEN}", f"bearer{TOKEN}", "Bearer ", f"Bearer {TOKEN}x"],
)
def test_every_route_refuses_a_bad_or_missing_token(client, store, method, path, header):
    headers = {"Authorization": header} if header else {}
    kwargs = {"content": b'{"session_id": "run-1"}'} if method == "post" else {}
    res = getattr(client, method)(path, headers=headers, **kwargs)
    assert res.status_code == 401
    assert res.headers["www-authenticate"] == "Bearer"
    assert res.json() == {"detail": "missing or invalid bearer token"}
    assert TOKEN not in res.text
    assert store.count_sessions() == 0


def test_no_configured_tokens_closes_the_api(sqlite_store):
    with TestClient(create_app(sqlite_store, access=Access())) as c:
        res = c.post("/api/v1/sessions", json={"session_id": "x"}, headers=AUTH)
    assert res.status_code == 401
    assert "no API tokens are configured" in res.json()["detail"]
    assert sqlite_store.count_sessions() == 0


def test_token_comes_from_the_environment_or_secrets(sqlite_store, monkeypatch):
    monkeypatch.setenv("AGENT_REPLAY_API_TOKENS", " a-token , b-token ")
    with TestClient(create_app(sqlite_store, access=Access.load(secrets={}))) as c:
        assert c.get("/api/v1/sessions", headers={"Authorization": "Bearer b-token"}).status_code == 200
        assert c.get("/api/v1/sessions", headers={"Authorization": "Bearer c-token"}).status_code == 401
    monkeypatch.delenv("AGENT_REPLAY_API_TOKENS")
    access = Access.load(secrets={"AGENT_REPLAY_API_TOKENS": ["s-token"]})
    with TestClient(create_app(sqlite_store, access=access)) as c:
        assert c.get("/api/v1/sessions", headers={"Authorization": "Bearer s-token"}).status_code == 200


# ------------------------------------------------------------------ writing


def test_open_add_steps_and_end_a_run(client, store):
    assert open_run(client) == {"sessions": ["run-1"], "steps": 0, "duplicates": 0, "redacted": 0, "errors": []}
    res = client.post("/api/v1/sessions/run-1/steps", json=steps(3), headers=AUTH)
    assert res.json() == {"sessions": ["run-1"], "steps": 3, "duplicates": 0, "redacted": 0, "errors": []}
    one = steps(1, start=4)[0]
    res = client.post("/api/v1/sessions/run-1/steps", json=one, headers=AUTH)
    assert res.json()["steps"] == 1
    res = client.post("/api/v1/sessions/run-1/steps", json={"steps": steps(2, start=5)}, headers=AUTH)
    assert res.json()["steps"] == 2
    res = client.post(
        "/api/v1/sessions/run-1/end", json={"status": "failed", "outcome": "gave up", "error_class": "Timeout"}, headers=AUTH
    )
    assert res.status_code == 200
    row = store.get_session("run-1")
    assert (row["status"], row["outcome"], row["error_class"], row["steps"], row["source"]) == (
        "failed",
        "gave up",
        "Timeout",
        6,
        "http",
    )
    assert [s.seq for s in store.load_steps("run-1")] == [1, 2, 3, 4, 5, 6]
    assert store.load_steps("run-1")[1].tool_args == {"q": "item 2"}


def test_the_same_steps_twice_are_stored_once(client, store):
    open_run(client)
    client.post("/api/v1/sessions/run-1/steps", json=steps(4), headers=AUTH)
    res = client.post("/api/v1/sessions/run-1/steps", json=steps(6), headers=AUTH)
    assert res.json()["steps"] == 2
    assert res.json()["duplicates"] == 4
    assert store.get_session("run-1")["steps"] == 6


def test_secrets_are_redacted_before_storage(client, store):
    open_run(client)
    body = [
        {"type": "think", "content": "call it with api_key=sk-proj-abcdefghijklmnopqrstuvwxyz0123"},
        {"type": "tool_call", "tool_name": "http_get", "tool_args": {"url": "https://x.test", "password": "hunter2hunter2"}},
    ]
    res = client.post("/api/v1/sessions/run-1/steps", json=body, headers=AUTH)
    assert res.json()["redacted"] == 2
    stored = store.load_steps("run-1")
    assert "sk-proj" not in stored[0].content
    assert stored[1].tool_args["password"] == "[REDACTED]"


def test_steps_may_create_their_run_and_seq_is_optional(client, store):
    res = client.post(
        "/api/v1/sessions/late-run/steps", json=[{"type": "think", "content": "a"}, {"type": "decision"}], headers=AUTH
    )
    assert res.json()["sessions"] == ["late-run"]
    assert [(s.seq, s.type) for s in store.load_steps("late-run")] == [(1, "think"), (2, "decision")]
    assert store.get_session("late-run")["status"] == "running"


def test_an_empty_end_body_means_succeeded(client, store):
    open_run(client)
    res = client.post("/api/v1/sessions/run-1/end", headers=AUTH)
    assert res.status_code == 200
    assert store.get_session("run-1")["status"] == "succeeded"


def test_ending_an_unknown_run_is_404(client, store):
    res = client.post("/api/v1/sessions/nope/end", json={"status": "failed"}, headers=AUTH)
    assert res.status_code == 404
    assert res.json() == {"detail": "no session 'nope'"}
    assert store.count_sessions() == 0


# ------------------------------------------------------------------ refused bodies


def test_a_bad_item_refuses_the_whole_batch_naming_it(client, store):
    open_run(client)
    batch = steps(5)
    batch[3]["type"] = "thinking"
    batch[4]["tokens_in"] = -3
    res = client.post("/api/v1/sessions/run-1/steps", json=batch, headers=AUTH)
    assert res.status_code == 422
    body = res.json()
    assert body["detail"].startswith("steps[3].type: Input should be 'think', 'tool_call'")
    assert body["detail"].endswith("(and 1 more)")
    assert [e["loc"] for e in body["errors"]] == ["steps[3].type", "steps[4].tokens_in"]
    assert body["errors"][1]["msg"] == "Input should be greater than or equal to 0"
    assert store.get_session("run-1")["steps"] == 0


def test_route_fields_must_agree_with_the_body(client, store):
    open_run(client)
    batch = steps(2)
    batch[1]["session_id"] = "run-2"
    res = client.post("/api/v1/sessions/run-1/steps", json=batch, headers=AUTH)
    assert res.status_code == 422
    assert res.json()["errors"] == [{"loc": "steps[1].session_id", "msg": "this route takes 'run-1', the body says 'run-2'"}]
    res = client.post("/api/v1/sessions/run-1/steps", json={**steps(1)[0], "kind": "session"}, headers=AUTH)
    assert res.json()["errors"] == [{"loc": "steps[0].kind", "msg": "this route takes 'step', the body says 'session'"}]
    res = client.post("/api/v1/sessions/run-1/end", json={"session_id": "run-9"}, headers=AUTH)
    assert res.json()["detail"] == "session_id: this route takes 'run-1', the body says 'run-9'"
    assert store.get_session("run-1")["steps"] == 0
    assert store.get_session("run-1")["status"] == "running"
    # Given and equal is fine.
    res = client.post("/api/v1/sessions/run-1/steps", json=[{**steps(1)[0], "session_id": "run-1", "kind": "step"}], headers=AUTH)
    assert res.json()["steps"] == 1


@pytest.mark.parametrize(
    ("body", "loc", "msg"),
    [
        ({"name": "no id"}, "session_id", "Field required"),
        ({"session_id": ""}, "session_id", "String should have at least 1 character"),
        ({"session_id": "s", "schema": "agent-replay/v9"}, "schema", "Input should be 'agent-replay/v1'"),
        ({"session_id": "s", "started_at": "yesterday"}, "started_at", None),
        ({"session_id": "s", "tags": "urgent"}, "tags", "Input should be a valid list"),
        ([{"session_id": "s"}], "body", "expected a JSON object, got list"),
    ],
)
def test_a_bad_session_body_is_422_naming_the_field(client, store, body, loc, msg):
    res = client.post("/api/v1/sessions", json=body, headers=AUTH)
    assert res.status_code == 422
    err = res.json()["errors"][0]
    assert err["loc"] == loc
    if msg:
        assert err["msg"] == msg
    assert store.count_sessions() == 0


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ([1, {"type": "think"}], "steps[0]"),
        ({"steps": "not a list"}, "steps"),
        ([{"type": "think"}, {"content": "no type"}], "steps[1].type"),
    ],
)
def test_bad_step_shapes_are_422(client, store, body, loc):
    open_run(client)
    res = client.post("/api/v1/sessions/run-1/steps", json=body, headers=AUTH)
    assert res.status_code == 422
    assert res.json()["errors"][0]["loc"] == loc
    assert store.get_session("run-1")["steps"] == 0


@pytest.mark.parametrize("content", [b"{not json", b"", b"   ", b'{"session_id": "a"'])
def test_malformed_json_is_400(client, store, content):
    res = client.post("/api/v1/sessions", content=content, headers={**AUTH, "Content-Type": "application/json"})
    assert res.status_code == 400
    assert res.json()["detail"].startswith("body: ")
    assert store.count_sessions() == 0


def test_an_oversized_body_is_413_and_nothing_is_stored(client, store):
    open_run(client)
    big = steps(1)[0] | {"content": "x" * (70 * 1024)}
    res = client.post("/api/v1/sessions/run-1/steps", json=[big], headers=AUTH)
    assert res.status_code == 413
    assert res.json()["detail"] == "body larger than 0.0625 MB (AGENT_REPLAY_MAX_BODY_MB)"
    assert store.get_session("run-1")["steps"] == 0


def test_gzip_bodies_are_unpacked_within_the_limit(client, store):
    open_run(client)
    packed = gzip.compress(orjson.dumps(steps(3)))
    res = client.post(
        "/api/v1/sessions/run-1/steps",
        content=packed,
        headers={**AUTH, "Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert res.json()["steps"] == 3
    bomb = gzip.compress(orjson.dumps([steps(1)[0] | {"content": "y" * (200 * 1024)}]))
    assert len(bomb) < 64 * 1024
    res = client.post(
        "/api/v1/sessions/run-1/steps",
        content=bomb,
        headers={**AUTH, "Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert res.status_code == 413
    res = client.post("/api/v1/sessions/run-1/steps", content=b"not gzip at all", headers={**AUTH, "Content-Encoding": "gzip"})
    assert res.status_code == 400
    res = client.post("/api/v1/sessions/run-1/steps", content=b"[]", headers={**AUTH, "Content-Encoding": "br"})
    assert res.status_code == 415
    assert store.get_session("run-1")["steps"] == 3


# ------------------------------------------------------------------ reading


def _three_runs(client):
    open_run(client, "a-run", name="alpha", model="gpt-4o", started_at="2026-05-01T09:00:00Z")
    open_run(client, "b-run", name="beta", model="claude-sonnet-4", started_at="2026-05-02T09:00:00Z", tags=["prod", "x"])
    open_run(client, "c-run", name="gamma", model="gpt-4o", started_at="2026-05-03T09:00:00Z")
    client.post("/api/v1/sessions/b-run/steps", json=[{"type": "think", "content": "The Refund policy allows it"}], headers=AUTH)
    client.post("/api/v1/sessions/c-run/end", json={"status": "failed"}, headers=AUTH)


@pytest.mark.parametrize(
    ("query", "ids"),
    [
        ("", ["c-run", "b-run", "a-run"]),
        ("?model=gpt-4o", ["c-run", "a-run"]),
        ("?status=failed", ["c-run"]),
        ("?q=refund%20POLICY", ["b-run"]),
        ("?tag=prod", ["b-run"]),
        ("?since=2026-05-02", ["c-run", "b-run"]),
        ("?until=2026-05-02", ["b-run", "a-run"]),
        ("?since=2026-05-01T12:00:00Z&until=2026-05-02T12:00:00Z", ["b-run"]),
        ("?review=unreviewed&status=running", ["b-run", "a-run"]),
        ("?limit=1&offset=1", ["b-run"]),
    ],
)
def test_list_sessions_filters_and_pages(client, query, ids):
    _three_runs(client)
    res = client.get(f"/api/v1/sessions{query}", headers=AUTH)
    assert res.status_code == 200
    body = res.json()
    assert [s["id"] for s in body["sessions"]] == ids
    assert body["total"] == (3 if "limit" in query else len(ids))


def test_list_sessions_rows_carry_totals(client):
    _three_runs(client)
    row = client.get("/api/v1/sessions?q=refund", headers=AUTH).json()["sessions"][0]
    assert (row["name"], row["steps"], row["tags"], row["status"]) == ("beta", 1, ["prod", "x"], "running")
    assert row["started_at"] == "2026-05-02T09:00:00+00:00"


@pytest.mark.parametrize(
    ("query", "loc"),
    [
        ("?limit=0", "limit"),
        ("?limit=501", "limit"),
        ("?limit=ten", "limit"),
        ("?offset=-1", "offset"),
        ("?status=done", "status"),
        ("?review=great", "review"),
        ("?since=last-week", "since"),
    ],
)
def test_bad_list_parameters_are_422_naming_them(client, query, loc):
    res = client.get(f"/api/v1/sessions{query}", headers=AUTH)
    assert res.status_code == 422
    assert res.json()["errors"][0]["loc"] == loc
    assert res.json()["detail"].startswith(f"{loc}: ")


def test_get_session_has_steps_cycles_gaps_and_a_summary(client):
    open_run(client)
    batch = steps(8)
    del batch[4:6]  # seqs 5 and 6 never arrive
    client.post("/api/v1/sessions/run-1/steps", json=batch, headers=AUTH)
    client.post("/api/v1/sessions/run-1/end", json={"status": "succeeded"}, headers=AUTH)
    body = client.get("/api/v1/sessions/run-1", headers=AUTH).json()
    assert body["session"]["id"] == "run-1"
    assert body["session"]["status"] == "succeeded"
    assert [s["seq"] for s in body["steps"]] == [1, 2, 3, 4, 7, 8]
    assert body["steps"][1]["tool_args"] == {"q": "item 2"}
    assert [(c["first_seq"], c["last_seq"]) for c in body["cycles"]] == [(1, 4), (7, 8)]
    assert body["gaps"] == [{"first_missing": 5, "last_missing": 6, "label": "steps 5–6 missing"}]
    assert body["summary"] == "Succeeded after 2 cycles (6 steps); steps 5–6 missing."


def test_get_unknown_session_is_404(client):
    res = client.get("/api/v1/sessions/ghost", headers=AUTH)
    assert res.status_code == 404
    assert res.json() == {"detail": "no session 'ghost'"}


def test_snapshot_at_a_step(client):
    open_run(client)
    client.post("/api/v1/sessions/run-1/steps", json=steps(4), headers=AUTH)
    body = client.get("/api/v1/sessions/run-1/snapshot?step=3", headers=AUTH).json()
    assert body["seq"] == 3
    assert body["cycle"] == 0
    assert body["totals"]["tokens_in"] == 30
    assert body["totals"]["tool_calls"] == 1
    assert body["context_source"] == "rebuilt"
    assert [m["role"] for m in body["context"]] == ["assistant"]
    assert body["context"][0]["tool_calls"][0]["function"] == {"name": "search", "arguments": '{"q":"item 2"}'}


@pytest.mark.parametrize(
    ("path", "status", "detail"),
    [
        ("/api/v1/sessions/run-1/snapshot", 422, "step: required query parameter"),
        ("/api/v1/sessions/run-1/snapshot?step=two", 422, "step: expected an integer between 0 and 2147483647, got 'two'"),
        ("/api/v1/sessions/ghost/snapshot?step=1", 404, "no session 'ghost'"),
        ("/api/v1/sessions/run-1/snapshot?step=1", 404, "session 'run-1' has no steps yet"),
    ],
)
def test_snapshot_errors(client, path, status, detail):
    open_run(client)
    res = client.get(path, headers=AUTH)
    assert res.status_code == status
    assert res.json()["detail"] == detail


# ------------------------------------------------------------------ filters shared with the UI


def test_session_filter_strict_and_lenient():
    params = {"status": "failed", "model": "gpt-4o", "since": "2026-05-01", "q": " refund ", "review": "bad"}
    flt = session_filter(params)
    assert (flt.status, flt.model, flt.text, flt.review) == ("failed", "gpt-4o", "refund", "bad")
    assert flt.since.isoformat() == "2026-05-01T00:00:00+00:00"
    with pytest.raises(ValueError, match="status: expected one of"):
        session_filter({"status": "nope"})
    assert session_filter({"status": "nope", "since": "garbage", "model": "m"}, strict=False) == SessionFilter(model="m")


# ------------------------------------------------------------------ access settings


def test_passwords_open_roles_editor_first():
    access = Access(viewer_password="look", editor_password="change")
    assert access.gated
    assert (access.role_for("change"), access.role_for("look"), access.role_for("nope"), access.role_for("")) == (
        "editor",
        "viewer",
        None,
        None,
    )
    assert Access(editor_password="same", viewer_password="same").role_for("same") == "editor"
    assert Access(viewer_password="only").role_for("only") == "viewer"
    assert not Access().gated
    assert "change" not in repr(access)


def test_settings_come_from_env_before_the_secrets_file(tmp_path):
    from replay_core.server.auth import read_secrets_files

    project, home = tmp_path / "project.toml", tmp_path / "home.toml"
    project.write_text('AGENT_REPLAY_PASSWORD = "from-project"\nAGENT_REPLAY_API_TOKENS = "p1,p2"\n')
    home.write_text('AGENT_REPLAY_PASSWORD = "from-home"\nAGENT_REPLAY_EDITOR_PASSWORD = "home-editor"\n')
    secrets = read_secrets_files([project, tmp_path / "missing.toml", home])
    access = Access.load(env={}, secrets=secrets)
    assert (access.viewer_password, access.editor_password, access.api_tokens) == ("from-project", "home-editor", ("p1", "p2"))
    access = Access.load(env={"AGENT_REPLAY_PASSWORD": "from-env", "AGENT_REPLAY_API_TOKENS": "e1"}, secrets=secrets)
    assert (access.viewer_password, access.api_tokens) == ("from-env", ("e1",))


# ------------------------------------------------------------------ OTLP/HTTP


def otlp_request(conversation: str = "otel-run-1"):
    """An OTLP ExportTraceServiceRequest made by the OpenTelemetry SDK: an agent with a model call and a tool call."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "otel-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    emit_agent_spans(provider.get_tracer("test"), conversation)
    provider.shutdown()
    return encode_spans(memory.get_finished_spans())


def test_otlp_protobuf_spans_become_a_run(client, store):
    body = otlp_request().SerializeToString()
    res = client.post("/v1/traces", content=body, headers={**AUTH, "Content-Type": "application/x-protobuf"})
    assert res.status_code == 200
    assert res.headers["content-type"] == "application/x-protobuf"
    assert res.content == b""
    steps = store.load_steps("otel-run-1")
    assert [(s.type, s.tool_name) for s in steps] == [
        ("span", None),
        ("think", None),
        ("tool_call", "search"),
        ("tool_result", "search"),
    ]
    assert (steps[1].tokens_in, steps[1].tokens_out, steps[1].model) == (120, 12, "gpt-4o")
    assert steps[2].tool_args == {"q": "status of PO-1"}
    assert store.get_session("otel-run-1")["source"] == "otlp-proto"
    # The same export again stores nothing twice.
    client.post("/v1/traces", content=body, headers={**AUTH, "Content-Type": "application/x-protobuf"})
    assert store.get_session("otel-run-1")["steps"] == 4


def test_otlp_json_spans_become_a_run(client, store):
    from google.protobuf.json_format import MessageToJson

    body = MessageToJson(otlp_request("otel-json-run")).encode()
    res = client.post("/v1/traces", content=body, headers={**AUTH, "Content-Type": "application/json"})
    assert res.status_code == 200
    assert res.json() == {}
    assert store.get_session("otel-json-run")["steps"] == 4
    assert store.get_session("otel-json-run")["source"] == "otlp-json"


@pytest.mark.parametrize(
    ("content", "content_type", "status"),
    [
        (b"\x0a\xff\xff", "application/x-protobuf", 400),
        (b'{"resourceSpans": "nope"}', "application/json", 400),
        (b"{", "application/json", 400),
        (b"spans", "text/plain", 415),
        (b"spans", "", 415),
    ],
)
def test_bad_otlp_bodies_are_refused(client, store, content, content_type, status):
    res = client.post("/v1/traces", content=content, headers={**AUTH, "Content-Type": content_type})
    assert res.status_code == status
    assert res.json()["detail"]
    assert store.count_sessions() == 0


def test_otlp_body_limit(client, store):
    body = otlp_request().SerializeToString() + b"\x00" * (65 * 1024)
    res = client.post("/v1/traces", content=body, headers={**AUTH, "Content-Type": "application/x-protobuf"})
    assert res.status_code == 413
    assert store.count_sessions() == 0


def test_session_ids_with_slashes_and_spaces(client, store):
    from urllib.parse import quote

    sid = "team-a/run 7"
    path = f"/api/v1/sessions/{quote(sid, safe='')}"
    assert client.post("/api/v1/sessions", json={"session_id": sid}, headers=AUTH).status_code == 200
    assert client.post(f"{path}/steps", json=steps(4), headers=AUTH).json()["steps"] == 4
    assert client.get(f"{path}/snapshot?step=2", headers=AUTH).json()["seq"] == 2
    assert client.post(f"{path}/end", json={"status": "failed"}, headers=AUTH).status_code == 200
    assert client.get(path, headers=AUTH).json()["session"]["status"] == "failed"
    assert store.get_session(sid)["steps"] == 4


def test_listening_sockets_get_tcp_nodelay():
    import socket

    from replay_core.server.sockets import tcp_nodelay_on_listening_sockets

    server = socket.socket(socket.AF_INET)  # as Streamlit binds it: protocol 0, so asyncio leaves Nagle on
    server.bind(("127.0.0.1", 0))
    server.listen()
    assert server.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
    try:
        assert tcp_nodelay_on_listening_sockets() >= 1
        assert server.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        with socket.create_connection(server.getsockname()):
            accepted, _ = server.accept()
            with accepted:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    finally:
        server.close()


def test_drill_down_filters_in_the_api(client):
    open_run(client, "tool-fail")
    client.post(
        "/api/v1/sessions/tool-fail/steps",
        headers=AUTH,
        json=[
            {"type": "tool_call", "tool_name": "run_tests", "tool_call_id": "c1"},
            {
                "type": "tool_result",
                "tool_name": "run_tests",
                "tool_call_id": "c1",
                "status": "error",
                "error_class": "TestFailure",
            },
        ],
    )
    open_run(client, "fine")
    client.post("/api/v1/sessions/fine/steps", headers=AUTH, json=[{"type": "think", "content": "ok"}])
    for query in ("failed_tool=run_tests", "error_class=TestFailure", "has=error"):
        assert [s["id"] for s in client.get(f"/api/v1/sessions?{query}", headers=AUTH).json()["sessions"]] == ["tool-fail"]
    res = client.get("/api/v1/sessions?has=everything", headers=AUTH)
    assert res.status_code == 422
    assert res.json()["errors"][0]["loc"] == "has"


def test_list_sessions_leaves_replays_out_unless_asked(client):
    _three_runs(client)
    open_run(client, "a-replay", name="alpha replayed", replay_of="a-run", started_at="2026-05-04T09:00:00Z")

    def ids(query: str) -> list[str]:
        return [s["id"] for s in client.get(f"/api/v1/sessions{query}", headers=AUTH).json()["sessions"]]

    assert ids("") == ["c-run", "b-run", "a-run"]
    assert ids("?replays=1") == ids("?replays=true") == ["a-replay", "c-run", "b-run", "a-run"]
    assert ids("?replay_of=a-run") == ["a-replay"]  # named, it is found
    res = client.get("/api/v1/sessions?replays=maybe", headers=AUTH)
    assert res.status_code == 422 and "replays" in res.text

"""The real served app (`streamlit run streamlit_app.py` on 127.0.0.1) with real clients:
httpx posting batches, and the OpenTelemetry SDK's OTLP/HTTP exporter sending spans."""

from __future__ import annotations

import httpx
import pytest
from apptest_helpers import emit_agent_spans, served_app

from replay_core.storage.store import Store

TOKEN = "served-token-42"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('served') / 'served.db'}"
    Store(url).close()  # migrated before the server opens it
    with served_app(url, AGENT_REPLAY_API_TOKENS=f"other,{TOKEN}", AGENT_REPLAY_MAX_BODY_MB="1") as base:
        store = Store(url)
        yield base, store
        store.close()


def batch(start: int, n: int) -> list[dict]:
    kinds = ["think", "tool_call", "tool_result", "decision"]
    out = []
    for seq in range(start, start + n):
        step = {"event_id": f"e{seq}", "seq": seq, "type": kinds[(seq - 1) % 4], "tokens_in": 3}
        if step["type"] == "tool_call":
            step.update(tool_name="lookup", tool_args={"row": seq})
        else:
            step["content"] = f"row {seq}"
        out.append(step)
    return out


def test_httpx_posts_batches_to_the_served_app(served):
    base, store = served
    with httpx.Client(base_url=base, headers=AUTH, timeout=30) as http:
        assert http.get("/healthz").json()["status"] == "ok"
        res = http.post("/api/v1/sessions", json={"session_id": "served-1", "name": "over the wire", "agent_id": "bot"})
        assert res.status_code == 200
        for start in range(1, 2001, 500):
            res = http.post("/api/v1/sessions/served-1/steps", json=batch(start, 500))
            assert res.json() == {"sessions": ["served-1"], "steps": 500, "duplicates": 0, "redacted": 0, "errors": []}
        assert http.post("/api/v1/sessions/served-1/steps", json=batch(1, 500)).json()["duplicates"] == 500
        assert http.post("/api/v1/sessions/served-1/end", json={"status": "succeeded"}).status_code == 200
        body = http.get("/api/v1/sessions/served-1").json()
        assert len(body["steps"]) == 2000
        assert body["summary"] == "Succeeded after 500 cycles (2000 steps)."
        assert http.get("/api/v1/sessions/served-1/snapshot", params={"step": 1000}).json()["totals"]["tokens_in"] == 3000
        listed = http.get("/api/v1/sessions", params={"q": "row 1999"}).json()
        assert [s["id"] for s in listed["sessions"]] == ["served-1"]
    row = store.get_session("served-1")
    assert (row["steps"], row["status"], row["source"]) == (2000, "succeeded", "http")


def test_the_served_app_refuses_bad_tokens_and_big_bodies(served):
    base, store = served
    with httpx.Client(base_url=base, timeout=30) as http:
        res = http.post("/api/v1/sessions", json={"session_id": "sneaky"}, headers={"Authorization": "Bearer guess"})
        assert res.status_code == 401
        res = http.post(
            "/api/v1/sessions/served-big/steps", headers=AUTH, json=[{"type": "think", "content": "x" * (1024 * 1024)}]
        )
        assert res.status_code == 413
        res = http.post("/api/v1/sessions/served-bad/steps", headers=AUTH, json=[{"type": "think"}, {"type": "nap"}])
        assert res.status_code == 422
        assert res.json()["errors"][0]["loc"] == "steps[1].type"
    for sid in ("sneaky", "served-big", "served-bad"):
        assert store.get_session(sid) is None


def test_opentelemetry_sdk_exports_spans_into_the_store(served):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    base, store = served
    provider = TracerProvider(resource=Resource.create({"service.name": "otel-agent"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces", headers=AUTH)))
    emit_agent_spans(provider.get_tracer("served-test"), "otel-served", ("status of PO-1", "status of PO-2"))
    assert provider.force_flush(timeout_millis=20_000)
    provider.shutdown()
    steps = store.load_steps("otel-served")
    assert [(s.type, s.tool_name) for s in steps] == [
        ("span", None),
        ("think", None),
        ("tool_call", "search"),
        ("tool_result", "search"),
        ("tool_call", "search"),
        ("tool_result", "search"),
    ]
    assert steps[1].tokens_in == 120
    assert steps[2].tool_args == {"q": "status of PO-1"}
    assert store.get_session("otel-served")["agent_id"] == "triage"

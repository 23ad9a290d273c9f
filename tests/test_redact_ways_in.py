"""Every corpus secret, sent in by every way in, is found nowhere in the database afterwards.

The scan is blunt: the SQLite file's raw bytes (with its WAL), `pg_dump --data-only` of the
PostgreSQL database, and every row of every table as text, searched for each secret as
sent, JSON-escaped, and for each of its lines of 12 characters or more (a PEM body).
Ways in: HTTP API, OTLP/HTTP, a native file, an OTLP file, an OpenAI chat log, the SDK, the
litellm logger, a replay's model output, review notes; and the export of what was stored.
"""

from __future__ import annotations

import base64
import io
import subprocess
import time

import orjson
import pytest
from openai_server import OpenAIServer
from secrets_corpus import SECRETS, SESSION_IDS, STEP_IDS, content, tool_args
from sqlalchemy import select
from sqlalchemy.engine import make_url
from starlette.testclient import TestClient

from replay_core.events import SessionEndEvent, SessionEvent, StepEvent
from replay_core.ingest.annotate import annotate
from replay_core.ingest.formats import native, otlp_export
from replay_core.ingest.pipeline import import_bytes
from replay_core.sdk.recorder import Recorder
from replay_core.server.api import create_app
from replay_core.server.auth import Access, token_name
from replay_core.storage.tables import metadata
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig

ID_SECRETS = [s for s in SECRETS if len(s.text) <= 200]  # the contract's identifier width
SHORT_ID_SECRETS = [s for s in SECRETS if len(s.text) <= 100]  # environment, agent_version, source
TOKEN = "ways-in-token-0000"


def needles(secret: str) -> set[str]:
    found = {secret, orjson.dumps(secret).decode()[1:-1]}
    found |= {line for line in secret.replace("\\n", "\n").splitlines() if len(line) >= 12}
    return found


def raw_text(store) -> str:
    """What a person with the database could read: file bytes or a dump, and every row as text."""
    parts = []
    with store.engine.connect() as conn:
        for table in metadata.sorted_tables:
            parts += [repr(tuple(r)) for r in conn.execute(select(table))]
    url = make_url(store.url)
    if url.get_backend_name() == "sqlite":
        store.engine.dispose()
        for suffix in ("", "-wal"):
            try:
                with open(url.database + suffix, "rb") as fh:
                    parts.append(fh.read().decode("latin-1"))
            except FileNotFoundError:
                pass
    else:
        dump = subprocess.run(
            [
                "pg_dump",
                "--data-only",
                "-h",
                url.host or "127.0.0.1",
                "-p",
                str(url.port or 5432),
                "-U",
                url.username or "postgres",
                url.database,
            ],
            capture_output=True,
            check=True,
            timeout=120,
        )
        parts.append(dump.stdout.decode("utf-8", "replace"))
    return "\n".join(parts)


def assert_no_leak(store, secrets=SECRETS) -> None:
    text = raw_text(store)
    leaked = [s.label for s in secrets if any(n in text for n in needles(s.secret))]
    assert leaked == []
    assert "[REDACTED]" in text


def corpus_events(sid: str) -> list:
    """The corpus in every field a run has: free text, JSON and identifiers."""
    events: list = [
        SessionEvent(session_id=sid, name="run " + SECRETS[0].text, metadata={"note": SECRETS[1].text}, tags=[SECRETS[2].text])
    ]
    for i, s in enumerate(ID_SECRETS):
        short = len(s.text) <= 100
        events.append(
            SessionEvent(
                session_id=f"{sid}-{i}",
                **{f: s.text for f in SESSION_IDS if short or f not in ("environment", "agent_version", "source")},
            )
        )
        events.append(StepEvent(session_id=f"{sid}-{i}", seq=1, type="tool_call", **{f: s.text for f in STEP_IDS}))
    for i, s in enumerate(SECRETS):
        events.append(
            StepEvent(
                session_id=sid,
                event_id=f"c{i}",
                seq=i + 1,
                type="tool_call",
                tool_name="http",
                content=content(s.text),
                tool_args=tool_args(s.text),
                metadata={"raw": s.text},
            )
        )
    events.append(SessionEndEvent(session_id=sid, status="failed", outcome="crashed: " + SECRETS[3].text))
    return events


@pytest.fixture
def api(store):
    with TestClient(create_app(store, access=Access(api_tokens=(TOKEN,)))) as c:
        yield c


def test_http_api(store, api):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for ev in corpus_events("http"):
        body = orjson.loads(native.dumps(ev))
        if ev.kind == "session":
            r = api.post("/api/v1/sessions", json=body, headers=auth)
        elif ev.kind == "step":
            r = api.post(f"/api/v1/sessions/{ev.session_id}/steps", json=body, headers=auth)
        else:
            r = api.post(f"/api/v1/sessions/{ev.session_id}/end", json=body, headers=auth)
        assert r.status_code == 200, r.text
    assert_no_leak(store)


def test_otlp_http_and_an_otlp_file(store, api):
    body = orjson.dumps(otlp_export.to_otlp(corpus_events("otlp")))
    r = api.post("/v1/traces", content=body, headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    out = io.BytesIO()
    otlp_export.write(corpus_events("otlp-file"), out)
    import_bytes(store, out.getvalue(), "trace.otlp.json")
    assert store.count_sessions() > len(ID_SECRETS)
    assert_no_leak(store)


def test_a_native_file_and_its_export(store):
    out = io.BytesIO()
    native.write(corpus_events("file"), out)
    report = import_bytes(store, out.getvalue(), "run.jsonl")
    assert report.steps == len(SECRETS) + len(ID_SECRETS)
    exported = io.BytesIO()
    native.write(store.export_events(store.session_ids()), exported)
    text = exported.getvalue().decode()
    assert [s.label for s in SECRETS if any(n in text for n in needles(s.secret))] == []
    assert_no_leak(store)


def test_an_openai_chat_log(store):
    lines = []
    for i, s in enumerate(SECRETS):
        lines.append(
            orjson.dumps(
                {
                    "id": f"chatcmpl-{i}",
                    "model": "gpt-4o",
                    "messages": [
                        {"role": "system", "content": "You are a support agent."},
                        {"role": "user", "content": content(s.text)},
                        {"role": "assistant", "content": "Noted: " + s.text},
                    ],
                }
            )
        )
    import_bytes(store, b"\n".join(lines) + b"\n", "chat_log.jsonl")
    assert store.count_sessions() >= 1
    assert_no_leak(store)


def test_the_sdk_and_the_litellm_logger(store, tmp_path):
    import litellm  # here, not at collection: seconds of CPU in every pytest-xdist worker

    rec = Recorder(store.url, spool_dir=str(tmp_path / "spool"), flush_interval=0.05)
    try:
        for s in ID_SECRETS[:20]:
            with rec.session(
                name=s.text, agent_id=s.text, environment=s.text[:100] if len(s.text) <= 100 else None, model=s.text
            ) as run:
                run.think(content(s.text))
                run.tool_call(s.text[:200], {"q": s.text})
        litellm.callbacks = [rec.litellm_logger()]
        with rec.session(name="litellm") as run:
            for s in SECRETS:
                litellm.completion(
                    model="gpt-4o",
                    messages=[{"role": "user", "content": content(s.text)}],
                    mock_response="Sure: " + s.text,
                    metadata={"agent_replay_session": run.id},
                )
    finally:
        litellm.callbacks = []
        rec.close(settle=5)
    deadline = time.monotonic() + 30
    while store.count_sessions() < 21 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.count_sessions() == 21
    assert_no_leak(store)


def test_replay_output_and_review_notes(store):
    sid = "to-replay"
    import_bytes(
        store,
        b"\n".join(
            native.dumps(e)
            for e in [
                SessionEvent(session_id=sid, name="a run"),
                StepEvent(session_id=sid, seq=1, type="input", content="What is the key?"),
                StepEvent(session_id=sid, seq=2, type="decision", content="I cannot say."),
            ]
        )
        + b"\n",
        "run.jsonl",
    )
    with OpenAIServer() as server:
        server.script(server.text(" ".join(s.text for s in SECRETS)))
        result = replay(
            store,
            sid,
            None,
            None,
            ReplayConfig(model="openai/fake-model", api_base=server.base_url, backoff_s=0.01, request_timeout_s=5.0),
        )
    assert store.load_steps(result.session)
    for s in SECRETS:
        annotate(store, sid, "bad", "the agent leaked " + s.text, author=s.text[:200] if len(s.text) <= 200 else None)
    assert_no_leak(store)


def _png() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (4, 4), "blue").save(out, "PNG")
    return out.getvalue()


def _otlp_span(trace: str, span: str, name: str, attributes: dict, parent: str | None = None) -> dict:
    return {
        "traceId": trace,
        "spanId": span,
        **({"parentSpanId": parent} if parent else {}),
        "name": name,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }


def _otlp_body(spans: list[dict]) -> bytes:
    return orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})


def test_open_otlp_tool_calls_keep_no_secret(store, api):
    """Tool calls a model emitted that no tool span has answered yet wait for a later batch in
    `otlp_open_calls`: their arguments are kept redacted like the step shown for them, and the
    batch that answers them still joins each call to its tool span."""
    trace = "ab" * 16
    calls = [
        {"type": "tool_call", "id": f"call-{i}", "name": "deploy", "arguments": {"password": s.text, "note": content(s.text)}}
        for i, s in enumerate(SECRETS)
    ]
    model = _otlp_span(
        trace,
        "0000000000000001",
        "chat gpt-4o",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.output.messages": orjson.dumps([{"role": "assistant", "parts": calls}]).decode(),
        },
    )
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    assert api.post("/v1/traces", content=_otlp_body([model]), headers=auth).status_code == 200
    with store.engine.connect() as conn:
        assert len(conn.execute(select(metadata.tables["otlp_open_calls"])).all()) == len(SECRETS)
    assert_no_leak(store)
    tools = [
        _otlp_span(
            trace,
            f"{i + 2:016x}",
            "execute_tool deploy",
            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "deploy", "gen_ai.tool.call.id": f"call-{i}"},
        )
        for i in range(len(SECRETS))
    ]
    assert api.post("/v1/traces", content=_otlp_body(tools), headers=auth).status_code == 200
    steps = store.load_steps(trace)
    assert sum(s.type == "tool_call" for s in steps) == len(SECRETS)  # each call joined to its tool span, none doubled
    assert sum(s.type == "tool_result" for s in steps) == len(SECRETS)
    assert_no_leak(store)


def test_attachment_metadata_and_queue_reviews_over_http(store, api):
    """An attachment's name and target, and a reviewer's note and "should have done", hold what
    people paste from runs: redacted like the runs."""
    auth = {"Authorization": f"Bearer {TOKEN}"}
    steps = [{"event_id": f"s{i}", "seq": i + 1, "type": "think", "content": "look"} for i in range(len(SECRETS))]
    assert api.post("/api/v1/sessions", json={"session_id": "attached", "name": "a"}, headers=auth).status_code == 200
    assert api.post("/api/v1/sessions/attached/steps", json={"steps": steps}, headers=auth).status_code == 200
    png = base64.b64encode(_png()).decode()
    for i, s in enumerate(SECRETS):
        body = {"media_type": "image/png", "data": png, "name": s.text[:300], "target": {"x": 1, "y": 1, "note": s.text}}
        r = api.post(f"/api/v1/sessions/attached/steps/s{i}/attachments", json=body, headers=auth)
        assert r.status_code == 200, r.text
    assert len(store.list_attachments("attached")) == len(SECRETS)
    rubric = {"verdicts": ["ok", "leak"], "note": True, "should_have": True}
    made = api.post("/api/v1/queues", json={"name": "q", "runs": ["attached"], "rubric": rubric}, headers=auth)
    qid = made.json()["id"]
    me = {"reviewer": token_name(TOKEN)}  # the token's own identity (an unnamed token: its hash)
    item = api.post(f"/api/v1/queues/{qid}/next", json=me, headers=auth).json()["item"]
    pasted = "\n".join(content(s.text) for s in SECRETS)
    review = {**me, "verdict": "leak", "note": pasted, "should_have": pasted}
    assert api.post(f"/api/v1/queues/{qid}/items/{item['id']}/review", json=review, headers=auth).status_code == 200
    assert_no_leak(store)

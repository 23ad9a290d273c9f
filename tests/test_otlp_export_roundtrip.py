"""OpenTelemetry out and back in: the demo runs, every imported sample and awkward runs exported as
OTLP/JSON GenAI spans import back unchanged; the export is plain GenAI for other tools; the CLI's
`export --format otlp-json` reads back with `import`."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import orjson
import pytest
from conftest import FIXTURES, REPO
from google.protobuf import text_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from test_format_otel import hex32
from typer.testing import CliRunner

from replay_core.cli import app
from replay_core.demo import demo_files
from replay_core.events import SessionEndEvent, SessionEvent, StepEvent
from replay_core.ingest.formats import detect, otlp_export
from replay_core.ingest.pipeline import import_bytes
from replay_core.storage.columns import SESSION_FIELDS  # every stored field of a run goes through the round trip
from replay_core.storage.store import Store

OTEL = FIXTURES / "otel"


def proto_fixture() -> bytes:
    """opentelemetry-proto's example request, compiled from its text form (as its header says to)."""
    text = (OTEL / "opentelemetry-proto_trace.protobuf-text").read_text()
    return text_format.Parse(text, ExportTraceServiceRequest()).SerializeToString()


# ---------------------------------------------------------------------------- export → import round trip


def _snapshot(store: Store, sid: str) -> tuple[dict, list[dict]]:
    session = store.get_session(sid)
    contexts = store.step_contexts(sid)
    steps = [s.to_json_dict() | {"context": contexts.get(s.event_id)} for s in store.load_steps(sid)]
    return {k: session[k] for k in SESSION_FIELDS}, steps


def _round_trip(source: Store, dest: Store) -> None:
    ids = source.session_ids()
    buffer = io.BytesIO()
    otlp_export.write(source.export_events(ids), buffer)
    data = buffer.getvalue()
    assert detect(data, "export.json").name == "otlp-json"
    report = import_bytes(dest, data, "export.json")
    assert sorted(report.sessions) == sorted(ids)
    for sid in ids:
        expected = _snapshot(source, sid)
        if expected[0]["status"] in ("running", "incomplete"):  # read back from a finished file: ended, outcome not recorded
            expected[0]["status"] = "unknown"
            expected[0]["ended_at"] = source.get_session(sid)["last_event_at"]  # its last event: the end as far as is known
        assert _snapshot(dest, sid) == expected, sid


@pytest.fixture
def source(tmp_path) -> Store:
    s = Store(f"sqlite:///{tmp_path / 'source.db'}")
    yield s
    s.close()


@pytest.mark.parametrize("demo", [p.name for p in demo_files()])
def test_round_trip_demo_runs(demo, source, store):
    import_bytes(source, (REPO / "data" / "demo" / demo).read_bytes(), demo)
    _round_trip(source, store)


def test_round_trip_imported_samples(source, store):
    for name in (
        "TINYAGENT_trace.json",
        "LANGCHAIN_trace.json",
        "GOOGLE_trace.json",
        "OPENAI_trace.json",
        "edge_failed_and_totals.otlp.json",
        "opentelemetry-proto_trace.json",
    ):
        import_bytes(source, (OTEL / name).read_bytes(), name)
    assert len(source.session_ids()) == 7
    _round_trip(source, store)


def _awkward_run() -> list:
    """Things GenAI spans cannot say by themselves, all in one run."""
    sid, t = "awkward", lambda s: datetime(2026, 3, 1, 12, 0, s, tzinfo=UTC)
    return [
        SessionEvent(session_id=sid, name="awkward", model="m1", tags=["x"], metadata={"k": [1, 2]}, started_at=t(0)),
        StepEvent(session_id=sid, event_id="in", seq=1, type="input", content="go", timestamp=t(0)),
        StepEvent(session_id=sid, event_id="call-no-think", seq=2, type="tool_call", tool_name="ls", tool_args="-la"),  # no time
        StepEvent(
            session_id=sid,
            event_id="think",
            seq=3,
            type="think",
            timestamp=t(2),
            content="",
            model="m1",
            context={"memory": "not a message list"},
            duration_ms=None,
        ),
        StepEvent(
            session_id=sid,
            event_id="c1",
            seq=4,
            type="tool_call",
            timestamp=t(3),
            tool_name="get",
            tool_call_id="dup",
            tool_args={"a": 1},
        ),
        StepEvent(
            session_id=sid,
            event_id="c2",
            seq=5,
            type="tool_call",
            timestamp=t(3),
            tool_name="get",
            tool_call_id="dup",
            tool_args='{"looks": "like json"}',
        ),
        StepEvent(
            session_id=sid,
            event_id="r2",
            seq=6,
            type="tool_result",
            timestamp=t(4),
            tool_name="get",
            tool_call_id="dup",
            content="second",
            status="error",
            error_class="Boom",
        ),
        StepEvent(
            session_id=sid,
            event_id="orphan",
            seq=9,
            type="tool_result",
            timestamp=t(5),
            tool_name="x",
            content="late",
            parent_id="think",
        ),  # seq gap 7-8
        StepEvent(
            session_id=sid,
            event_id="obs",
            seq=10,
            type="observation",
            timestamp=t(5),
            content="saw",
            retry=2,
            metadata={"page": "p"},
            parent_id="nope",
        ),
        StepEvent(
            session_id=sid,
            event_id="err",
            seq=11,
            type="error",
            timestamp=t(6),
            content="gave up",
            error_class="E",
            cost_usd=0.5,
            redacted=1,
        ),
        StepEvent(
            session_id=sid,
            event_id="fin",
            seq=12,
            type="decision",
            timestamp=t(7),
            content="done",
            tokens_in=5,
            context=[{"role": "user", "content": "hi", "name": "bob"}, {"role": "tool", "tool_call_id": "q", "content": "r"}],
        ),
        SessionEndEvent(session_id=sid, status="failed", outcome="gave up", error_class="E", ended_at=t(8)),
        SessionEvent(session_id="empty", name="nothing happened", started_at=t(0)),
        SessionEvent(session_id="live", name="still going", started_at=t(0)),
        StepEvent(
            session_id="live", event_id="s", seq=1, type="span", content="agent", agent_id="a", timestamp=t(1), duration_ms=3.0
        ),
        StepEvent(session_id="live", event_id="k", seq=2, type="think", content="hm", parent_id="s", timestamp=t(2), model="m"),
    ]


def test_round_trip_awkward_runs(source, store):
    from replay_core.ingest.pipeline import ingest

    ingest(source, _awkward_run(), source="native")
    assert len(source.session_ids()) == 3
    _round_trip(source, store)
    assert store.get_session("live")["status"] == "unknown" and store.get_session("awkward")["status"] == "failed"


def test_export_is_plain_genai_for_other_tools(source, store):
    """Without our agent_replay.* attributes the spans still read as the same run (ids and seq aside)."""
    sid, t = "plain", lambda s: datetime(2026, 3, 1, 12, 0, s, tzinfo=UTC)
    events = [
        SessionEvent(session_id=sid, name="plain", started_at=t(0)),
        StepEvent(
            session_id=sid,
            event_id="a",
            seq=1,
            type="span",
            content="invoke_agent helper",
            agent_id="helper",
            timestamp=t(0),
            duration_ms=9000.0,
        ),
        StepEvent(
            session_id=sid,
            event_id="b",
            seq=2,
            type="think",
            parent_id="a",
            agent_id="helper",
            model="gpt-4o",
            content="look",
            tokens_in=10,
            tokens_out=2,
            cost_usd=0.01,
            timestamp=t(1),
            duration_ms=1000.0,
            context=[{"role": "user", "content": "find A-17"}],
        ),
        StepEvent(
            session_id=sid,
            event_id="c",
            seq=3,
            type="tool_call",
            parent_id="a",
            agent_id="helper",
            tool_name="get_order",
            tool_args={"id": "A-17"},
            tool_call_id="call_1",
            timestamp=t(2),
        ),
        StepEvent(
            session_id=sid,
            event_id="d",
            seq=4,
            type="tool_result",
            parent_id="a",
            agent_id="helper",
            tool_name="get_order",
            tool_call_id="call_1",
            content="shipped",
            timestamp=t(3),
            status="error",
            error_class="Late",
        ),
    ]
    doc = otlp_export.to_otlp(events)
    for rs in doc["resourceSpans"]:
        rs["resource"]["attributes"] = [a for a in rs["resource"]["attributes"] if not a["key"].startswith("agent_replay.")]
        for span in rs["scopeSpans"][0]["spans"]:
            span["attributes"] = [a for a in span["attributes"] if not a["key"].startswith("agent_replay.")]
    assert "agent_replay" not in json.dumps(doc)
    import_bytes(store, orjson.dumps(doc), "plain.json")
    steps = store.load_steps(sid)
    seq_of = {s.event_id: s.seq for s in steps}
    assert [
        (
            s.type,
            seq_of.get(s.parent_id),
            s.agent_id,
            s.model,
            s.content,
            s.tool_name,
            s.tool_args,
            s.tool_call_id,
            s.tokens_in,
            s.tokens_out,
            s.cost_usd,
            s.status,
            s.error_class,
            s.timestamp,
        )
        for s in steps
    ] == [
        ("span", None, "helper", None, "invoke_agent helper", None, None, None, None, None, None, "ok", None, t(0)),
        ("think", 1, "helper", "gpt-4o", "look", None, None, None, 10, 2, 0.01, "ok", None, t(1)),
        ("tool_call", 1, "helper", None, None, "get_order", {"id": "A-17"}, "call_1", None, None, None, "ok", None, t(2)),
        ("tool_result", 1, "helper", None, "shipped", "get_order", None, "call_1", None, None, None, "error", "Late", t(3)),
    ]
    assert store.step_context(sid, steps[1].event_id) == [{"role": "user", "content": "find A-17"}]
    assert store.get_session(sid)["status"] == "succeeded"


def test_cli_export_otlp_json_and_import_it_back(tmp_path):
    runner = CliRunner()
    first, second, out = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "runs.otlp.json"
    result = runner.invoke(app, ["import", str(OTEL / "LANGCHAIN_trace.json"), "--db", str(first)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["export", "--all", "--format", "otlp-json", "-o", str(out), "--db", str(first)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["resourceSpans"][0]["scopeSpans"][0]["scope"] == {"name": "agent-replay"}
    result = runner.invoke(app, ["import", str(out), "--db", str(second), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["files"][0]["format"] == "otlp-json"
    a, b = Store(f"sqlite:///{first}"), Store(f"sqlite:///{second}")
    sid = hex32(193030768590593690100051725513629274920)
    assert _snapshot(a, sid) == _snapshot(b, sid)
    a.close(), b.close()
    bad = runner.invoke(app, ["export", "--all", "--format", "zipkin", "--db", str(first)])
    assert bad.exit_code != 0 and str(bad.exception) == "--format: unknown export format 'zipkin'; known: native, otlp-json"

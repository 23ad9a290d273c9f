"""Langfuse trace exports: the UI's `{trace, observations}` download and the public API's trace with its
observations — generations as model calls with usage and cost, tools as call and result, spans nested by
`parentObservationId`, the trace's session and user kept; what the reader must not claim.
Sources: tests/fixtures/langfuse/README.md."""

from __future__ import annotations

from collections import Counter

import orjson
import pytest
from conftest import FIXTURES
from reader_checks import claims_no_other_fixture, reimport_changes_nothing

from replay_core.ingest.formats import candidates, langfuse
from replay_core.ingest.pipeline import ImportRejected, import_bytes, import_file
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig

LF = FIXTURES / "langfuse"
UI = LF / "ui_export_agent_run.json"
API = LF / "api_trace_failed.json"


def test_a_ui_export_is_one_run_with_its_model_calls_tools_and_nesting(sqlite_store):
    report = import_file(sqlite_store, UI)
    (acc,) = report.files
    assert (acc["format"], acc["records"], acc["used"], acc["unit"]) == ("langfuse", 8, 8, "traces and observations")
    (sid,) = report.sessions
    session, steps = sqlite_store.get_session(sid), sqlite_store.load_steps(sid)
    assert sid == "langfuse-7f3c1e0a9b2d4c6e8f10a2b3c4d5e6f7" and session["name"] == "weather-agent"
    assert session["model"] == "gpt-4o-mini-2024-07-18" and session["environment"] == "production"
    assert session["agent_version"] == "1.4.2"
    assert {"session:chat-2026-03-02-0007", "user:user-481", "agents-sdk"} <= set(session["tags"])
    assert session["started_at"].isoformat().startswith("2026-03-02T09:14:05.12")
    assert Counter(s.type for s in steps) == {
        "input": 1,
        "span": 1,
        "think": 3,
        "tool_call": 2,
        "tool_result": 2,
        "observation": 1,
    }
    agent = next(s for s in steps if s.type == "span")
    assert all(s.parent_id == agent.event_id for s in steps if s.type in ("think", "tool_call", "observation"))
    calls = [s for s in steps if s.type == "think"]
    assert [(s.tokens_in, s.tokens_out) for s in calls] == [(142, 17), (175, 16), (204, 19)]
    assert [s.cost_usd for s in calls] == pytest.approx([0.0000315, 0.0000359, 0.000042])
    assert [s.metadata.get("cost_estimated_by") for s in calls] == [None, "langfuse", None]  # calculatedTotalCost: Langfuse's
    assert calls[-1].content == "It is sunny and 18°C in Paris, and the local time is 10:14."
    assert calls[0].duration_ms == pytest.approx(1130)
    tools = [(s.type, s.tool_name, s.tool_call_id) for s in steps if s.tool_name]
    assert [t[:2] for t in tools] == [
        ("tool_call", "get_weather"),
        ("tool_result", "get_weather"),
        ("tool_call", "get_time"),
        ("tool_result", "get_time"),
    ]
    assert [s.content for s in steps if s.type == "tool_result"] == ["Sunny, 18°C", "10:14"]


def test_an_api_trace_with_a_failed_tool_fails_the_run(sqlite_store):
    (sid,) = import_file(sqlite_store, API).sessions
    session, steps = sqlite_store.get_session(sid), sqlite_store.load_steps(sid)
    assert session["status"] == "failed" and "refunds are closed" in session["outcome"]
    assert {"session:support-7734", "user:customer-22"} <= set(session["tags"]) and session["agent_version"] == "graph-v3"
    (call,) = [s for s in steps if s.type == "think"]
    assert (call.model, call.tokens_in, call.tokens_out) == ("gpt-4.1-mini", 813, 21)
    assert call.cost_usd == pytest.approx(0.0003588) and call.metadata["cost_estimated_by"] == "langfuse"
    (result,) = [s for s in steps if s.type == "tool_result"]
    assert result.status == "error" and result.content.startswith("RefundServiceError")
    assert steps[0].type == "input" and steps[0].content == "Refund order A-1093"
    assert session["metadata"]["langfuse"]["scores"][0]["name"] == "user-feedback"


def test_the_api_answer_wrapped_in_data_and_a_list_of_exports_read_alike(sqlite_store):
    api = orjson.loads(API.read_bytes())
    ui = orjson.loads(UI.read_bytes())
    report = import_bytes(sqlite_store, orjson.dumps([{"data": api}, ui]), "both.json")
    assert sorted(report.sessions) == [
        "langfuse-2b19f7aa-3c9e-4102-b31f-fdc461a9991e",
        "langfuse-7f3c1e0a9b2d4c6e8f10a2b3c4d5e6f7",
    ]
    assert report.files[0]["used"] == report.files[0]["records"] == 12


@pytest.mark.parametrize("path", [UI, API], ids=lambda p: p.name)
def test_reimport_changes_nothing(sqlite_store, path):
    reimport_changes_nothing(sqlite_store, path)


def test_null_replay_reproduces_a_trace(sqlite_store):
    (sid,) = import_file(sqlite_store, UI).sessions
    result = replay(sqlite_store, sid, None, None, ReplayConfig(model="recorded"))
    assert result.outcome == "completed" and result.first_divergence is None
    assert result.steps == sqlite_store.get_session(sid)["steps"]


def test_an_unknown_observation_type_is_accounted_as_not_understood(sqlite_store):
    doc = orjson.loads(UI.read_bytes())
    doc["observations"].append({"id": "x", "type": "HOLOGRAM", "startTime": "2026-03-02T09:14:09Z"})
    (acc,) = import_bytes(sqlite_store, orjson.dumps(doc), "odd.json").files
    assert acc["records"] == 9 and acc["used"] == 8 and acc["ignored"] == {"observation type=HOLOGRAM": 1}


def test_claims_nothing_else():
    """No other fixture is taken for Langfuse; an object with `observations` alone (no Langfuse keys) is not."""
    claims_no_other_fixture(langfuse.FORMAT, "langfuse")
    lookalike = orjson.dumps({"id": "t", "observations": [{"note": "seen a bird"}]})
    assert langfuse.FORMAT not in candidates(lookalike, "birds.json")


def test_a_real_trace_list_is_refused_with_what_to_export_instead(sqlite_store):
    """polae/chatkit-dev-00's `GET /api/public/traces` download (tests/fixtures/langfuse/README.md): 129 traces of
    OpenAI Agents SDK runs whose observations are ids only — no steps in it, so refused, saying what to fetch."""
    data = (LF / "api_traces_list.json").read_bytes()
    assert [f.name for f in candidates(data, "traces.json")] == ["langfuse"]
    with pytest.raises(ImportRejected) as refused:
        import_bytes(sqlite_store, data, "traces.json")
    (bad,) = refused.value.errors
    assert "trace list (GET /api/public/traces): its 129 traces name their observations by id only" in str(bad)
    assert sqlite_store.list_sessions() == []
    paged = orjson.dumps({"data": orjson.loads(data)[:2], "meta": {"page": 1, "totalItems": 2}})
    with pytest.raises(ImportRejected, match="its 2 traces"):
        import_bytes(sqlite_store, paged, "page.json")


def test_a_page_of_full_traces_reads_like_a_list_of_them(sqlite_store):
    api = orjson.loads(API.read_bytes())
    report = import_bytes(sqlite_store, orjson.dumps({"data": [api], "meta": {"page": 1}}), "page.json")
    assert report.sessions == ["langfuse-2b19f7aa-3c9e-4102-b31f-fdc461a9991e"]

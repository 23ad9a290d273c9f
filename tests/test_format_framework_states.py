"""Run files two frameworks write themselves (tests/fixtures/pydantic_ai, tests/fixtures/openai_agents, written by
scripts/capture_histories): a Pydantic AI message history, and an OpenAI Agents run state paused on a call
awaiting approval — shown paused (running, the call blocked), never failed; what the readers must not claim."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import FIXTURES
from reader_checks import claims_no_other_fixture, reimport_changes_nothing

from replay_core.ingest.formats import openai_agents, pydantic_ai
from replay_core.ingest.pipeline import import_file
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig

PAI_OK = FIXTURES / "pydantic_ai/messages_ok.json"
PAI_RETRY = FIXTURES / "pydantic_ai/messages_retry.json"
STATE = FIXTURES / "openai_agents/run_state_pending_approval.json"


def test_a_pydantic_ai_history_is_its_model_calls_and_tools(sqlite_store):
    report = import_file(sqlite_store, PAI_OK)
    (acc,) = report.files
    assert (acc["format"], acc["records"], acc["used"], acc["unit"]) == ("pydantic_ai", 7, 7, "message parts")
    (sid,) = report.sessions
    session, steps = sqlite_store.get_session(sid), sqlite_store.load_steps(sid)
    assert session["model"] == "gpt-4o-mini-2024-07-18" and session["name"] == "What is the weather and the time in Paris?"
    assert [s.type for s in steps] == ["input", "input", "tool_call", "tool_result", "tool_call", "tool_result", "decision"]
    assert [(s.tokens_in, s.tokens_out) for s in steps if s.tokens_in] == [(142, 17), (175, 16), (204, 19)]
    assert sum(s.cost_usd for s in steps if s.cost_usd) == pytest.approx(0.00010935)
    assert all(s.metadata["cost_estimated_by"] == "pydantic-ai" for s in steps if s.cost_usd)
    assert steps[2].tool_args == {"city": "Paris"} and steps[3].content == "Sunny, 18°C"
    assert all(s.timestamp is not None for s in steps) and session["started_at"] is not None


def test_a_retried_tool_is_a_failed_result_and_null_replay_reproduces(sqlite_store):
    (sid,) = import_file(sqlite_store, PAI_RETRY).sessions
    results = [s for s in sqlite_store.load_steps(sid) if s.type == "tool_result"]
    assert [(r.tool_name, r.status) for r in results] == [("get_weather", "ok"), ("get_time", "error"), ("get_time", "ok")]
    assert results[1].error_class == "tool_retried"
    result = replay(sqlite_store, sid, None, None, ReplayConfig(model="recorded"))
    assert result.outcome == "completed" and result.first_divergence is None


def test_a_run_state_paused_for_approval_is_running_with_the_call_blocked(sqlite_store):
    report = import_file(sqlite_store, STATE)
    (acc,) = report.files
    assert (acc["format"], acc["used"], acc["records"]) == ("openai_agents", 5, 5)
    (sid,) = report.sessions
    session, steps = sqlite_store.get_session(sid), sqlite_store.load_steps(sid)
    assert session["status"] == "running" and session["agent_id"] == "Weather agent"  # paused, not failed
    assert Counter(s.type for s in steps) == {"input": 1, "tool_call": 2, "tool_result": 1, "observation": 1}
    (pending,) = [s for s in steps if s.status == "blocked"]
    assert pending.tool_name == "get_time" and pending.metadata["pending_approval"] and "awaiting approval" in pending.content
    assert [(s.tokens_in, s.tokens_out) for s in steps if s.tokens_in] == [(142, 17), (175, 16)]


@pytest.mark.parametrize("path", [PAI_OK, PAI_RETRY, STATE], ids=lambda p: p.name)
def test_reimport_changes_nothing(sqlite_store, path):
    reimport_changes_nothing(sqlite_store, path)


@pytest.mark.parametrize("fmt, own", [(pydantic_ai.FORMAT, "pydantic_ai"), (openai_agents.FORMAT, "openai_agents")])
def test_claims_nothing_else(fmt, own):
    claims_no_other_fixture(fmt, own)

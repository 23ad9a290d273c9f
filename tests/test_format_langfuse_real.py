"""Real Langfuse trace exports, written by Langfuse Cloud and committed by Langfuse itself (langfuse/langfuse
packages/shared/scripts/seeder/utils/framework-traces/; tests/fixtures/langfuse/README.md): the UI's
`{trace, observations}` download, each observation's input/output merged back by Langfuse's own script.
OpenAI Agents SDK, Pydantic AI, LangGraph and Google ADK runs: every generation a model call with Langfuse's
usage and cost, every tool its call and result under its real tool name, the nesting, the user kept."""

from __future__ import annotations

from collections import Counter

import orjson
import pytest
from conftest import FIXTURES
from reader_checks import reimport_changes_nothing

from replay_core.ingest.pipeline import import_file
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig

LF = FIXTURES / "langfuse"
AGENTS = LF / "langfuse-repo_openai-agents-2025-09-30.json"
PYDANTIC = LF / "langfuse-repo_pydantic-ai-tools-2025-12-04.json"
LANGGRAPH = LF / "langfuse-repo_langgraph-2025-08-22.json"
ADK = LF / "langfuse-repo_google-adk-2025-08-28.json"
REAL = [AGENTS, PYDANTIC, LANGGRAPH, ADK]


def _one(store, path):
    report = import_file(store, path)
    (sid,) = report.sessions
    return report.files[0], store.get_session(sid), store.load_steps(sid)


def _generations(path) -> list[dict]:
    return [o for o in orjson.loads(path.read_bytes())["observations"] if o["type"] == "GENERATION"]


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.stem)
def test_every_generation_is_a_model_call_with_langfuses_usage_and_cost(sqlite_store, path):
    acc, session, steps = _one(sqlite_store, path)
    observations = orjson.loads(path.read_bytes())["observations"]
    records = len(observations) + 1  # the trace and each observation
    assert (acc["format"], acc["records"], acc["used"], acc["bad"]) == ("langfuse", records, records, 0)
    calls = [s for s in steps if s.model]
    usage = [(g["model"], g["usageDetails"]["input"], g["usageDetails"]["output"]) for g in _generations(path)]
    assert sorted((s.model, s.tokens_in, s.tokens_out) for s in calls) == sorted(usage)
    assert sorted(s.cost_usd for s in calls) == sorted(g["costDetails"]["total"] for g in _generations(path))
    by_id = {s.event_id: s for s in steps}
    parents = {o["id"]: o.get("parentObservationId") for o in observations}
    for step in steps:  # nested as the observations are (a parent outside the export: none)
        if step.event_id in parents:
            assert step.parent_id == (parents[step.event_id] if parents[step.event_id] in by_id else None)
    assert session["started_at"].isoformat().startswith(orjson.loads(path.read_bytes())["trace"]["timestamp"][:19])


def test_an_openai_agents_run(sqlite_store):
    _, session, steps = _one(sqlite_store, AGENTS)
    assert (session["name"], session["model"]) == ("Agent workflow", "gpt-4.1-2025-04-14")
    assert Counter(s.type for s in steps) == {"span": 2, "think": 2, "tool_call": 1, "tool_result": 1}
    call, result = (s for s in steps if s.type.startswith("tool_"))
    assert (call.tool_name, call.tool_args) == ("get_weather", {"city": "Tokyo"})
    assert result.content == "The weather in Tokyo is sunny."
    assert [(s.tokens_in, s.tokens_out) for s in steps if s.type == "think"] == [(55, 15), (85, 29)]
    assert {sc["name"] for sc in session["metadata"]["langfuse"]["scores"]} == {"toxicity", "hallucination"}


def test_pydantic_ai_tools_keep_their_real_names_and_call_ids(sqlite_store):
    _, session, steps = _one(sqlite_store, PYDANTIC)
    calls = [s for s in steps if s.type == "tool_call"]
    assert sorted(c.tool_name for c in calls) == ["get_dad_joke_suggestion", "get_one_liner_suggestion", "get_pun_suggestion"]
    assert all(c.tool_call_id.startswith("call_") and c.tool_args == {"topic": "programming"} for c in calls)
    results = {s.tool_call_id: s for s in steps if s.type == "tool_result"}
    assert {c.tool_call_id for c in calls} == set(results)  # each result answers its call
    assert session["tags"] == ["example", "joke-generator"] and session["metadata"]["langfuse"]["latency"] == 7.424
    assert (session["tokens_in"], session["tokens_out"]) == (265 + 417 + 502 + 131, 73 + 53 + 14 + 69)


def test_google_adk_keeps_the_user_and_its_tool(sqlite_store):
    _, session, steps = _one(sqlite_store, ADK)
    assert (session["user_id"], session["model"]) == ("demo-user", "gemini-2.0-flash")
    (call,) = [s for s in steps if s.type == "tool_call"]
    assert (call.tool_name, call.tool_call_id) == ("say_hello", "adk-8bd8dc65-717d-4102-858b-3a1dd6b75a00")


def test_reimport_changes_nothing_and_a_null_replay_reproduces(sqlite_store):
    reimport_changes_nothing(sqlite_store, LANGGRAPH)
    for path in (AGENTS, PYDANTIC):
        (sid,) = import_file(sqlite_store, path).sessions
        result = replay(sqlite_store, sid, None, None, ReplayConfig(model="recorded"))
        assert result.outcome == "completed" and result.first_divergence is None

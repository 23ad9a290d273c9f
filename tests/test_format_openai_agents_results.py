"""A finished OpenAI Agents SDK run as apps save it, written by openai-agents 0.24.0 itself against the scripted
local model (scripts/capture_files/openai_agents_files.py; tests/fixtures/openai_agents/README.md):
`result.to_state().to_json()`, the RunResult's fields, and `result.to_input_list()` — the same run read alike
(model calls with usage, tools paired, the answer as outcome), the input list without what it does not hold;
what the readers must not claim."""

from __future__ import annotations

import orjson
import pytest
from conftest import FIXTURES
from reader_checks import claims_no_other_fixture, reimport_changes_nothing

from replay_core.ingest.formats import candidates, openai_agents
from replay_core.ingest.pipeline import import_bytes, import_file
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig

OA = FIXTURES / "openai_agents"
STATE = OA / "result_state_final.json"
RESULT = OA / "result_run_result.json"
INPUT_LIST = OA / "result_input_list.json"
ANSWER = "It is sunny and 18°C in Paris; it is 10:14."
TYPES = ["input", "tool_call", "tool_result", "tool_call", "tool_result", "decision"]


@pytest.mark.parametrize("path", [STATE, RESULT], ids=lambda p: p.name)
def test_a_finished_state_and_a_run_result_are_the_run_succeeded_with_its_answer(sqlite_store, path):
    report = import_file(sqlite_store, path)
    (acc,) = report.files
    assert (acc["format"], acc["records"], acc["used"]) == ("openai_agents", 6, 6)
    (sid,) = report.sessions
    session, steps = sqlite_store.get_session(sid), sqlite_store.load_steps(sid)
    assert (session["status"], session["outcome"]) == ("succeeded", ANSWER)
    assert session["agent_id"] == "Weather agent" and session["model"] == "gpt-4o-mini-2024-07-18"
    assert [s.type for s in steps] == TYPES
    assert [(s.tokens_in, s.tokens_out) for s in steps if s.tokens_in] == [(142, 17), (175, 16), (204, 19)]
    calls = [(s.tool_name, s.tool_args, s.tool_call_id) for s in steps if s.type == "tool_call"]
    assert calls == [("get_weather", {"city": "Paris"}, "call_weather_1"), ("get_time", {"city": "Paris"}, "call_time_1")]
    assert [(s.tool_call_id, s.content) for s in steps if s.type == "tool_result"] == [
        ("call_weather_1", "Sunny, 18°C"),
        ("call_time_1", "10:14"),
    ]


def test_an_input_list_is_the_conversation_without_usage_or_outcome(sqlite_store):
    report = import_file(sqlite_store, INPUT_LIST)
    (acc,) = report.files
    assert (acc["format"], acc["records"], acc["used"]) == ("openai_input_list", 6, 6)
    (sid,) = report.sessions
    session, steps = sqlite_store.get_session(sid), sqlite_store.load_steps(sid)
    assert [s.type for s in steps] == TYPES
    assert session["status"] == "unknown" and session["outcome"] is None  # the list says nothing of how the run ended
    assert not any(s.tokens_in or s.timestamp for s in steps)  # it holds no usage and no times
    assert [s.tool_name for s in steps if s.type == "tool_result"] == ["get_weather", "get_time"]  # named by call_id
    assert steps[-1].content == ANSWER and steps[-1].model == "gpt-4o-mini-2024-07-18"


def test_a_state_saved_between_turns_is_still_running(sqlite_store):
    doc = orjson.loads(STATE.read_bytes())
    doc["current_step"] = {"type": "next_step_run_again"}
    (sid,) = import_bytes(sqlite_store, orjson.dumps(doc), "state.json").sessions
    assert sqlite_store.get_session(sid)["status"] == "running"


def test_an_unknown_list_item_is_accounted_as_not_understood(sqlite_store):
    items = orjson.loads(INPUT_LIST.read_bytes()) + [{"type": "hologram", "id": "x"}]
    (acc,) = import_bytes(sqlite_store, orjson.dumps(items), "list.json").files
    assert acc["records"] == 7 and acc["used"] == 6 and acc["ignored"] == {"item type=hologram": 1}


@pytest.mark.parametrize("path", [STATE, RESULT, INPUT_LIST], ids=lambda p: p.name)
def test_reimport_changes_nothing(sqlite_store, path):
    reimport_changes_nothing(sqlite_store, path)


@pytest.mark.parametrize("path", [STATE, INPUT_LIST], ids=lambda p: p.name)
def test_null_replay_reproduces_the_run(sqlite_store, path):
    (sid,) = import_file(sqlite_store, path).sessions
    result = replay(sqlite_store, sid, None, None, ReplayConfig(model="recorded"))
    assert result.outcome == "completed" and result.first_divergence is None
    assert result.steps == sqlite_store.get_session(sid)["steps"]


def test_the_input_list_reader_claims_nothing_else():
    """No other fixture is taken for an input list; a list of chat messages without Responses API items is not."""
    claims_no_other_fixture(openai_agents.INPUT_LIST, "openai_agents")
    chat = orjson.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    assert openai_agents.INPUT_LIST not in candidates(chat, "chat.json")

"""AutoGen AgentChat files written by autogen-agentchat 0.7.5 itself against the scripted local model
(scripts/capture_files/autogen_files.py; tests/fixtures/autogen/README.md): TaskResults, team and agent
save_state() and a bare message list read right, a failed tool an error step, and what the reader must not claim."""

from __future__ import annotations

from collections import Counter

import orjson
from conftest import FIXTURES
from reader_checks import claims_no_other_fixture, reimport_changes_nothing

from replay_core.ingest.formats import autogen, candidates
from replay_core.ingest.pipeline import import_bytes, import_file
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig

AUTOGEN = FIXTURES / "autogen"
OK, FAILED = AUTOGEN / "task_result_ok.json", AUTOGEN / "task_result_tool_error.json"
STATE_OK, STATE_FAILED = AUTOGEN / "team_state_ok.json", AUTOGEN / "team_state_tool_error.json"
KINDS = {"input": 1, "tool_call": 2, "tool_result": 2, "decision": 1}


def _one(store, path):
    report = import_file(store, path)
    (sid,) = report.sessions
    return report.files[0], store.get_session(sid), store.load_steps(sid)


def test_a_task_result_is_a_succeeded_run_of_calls_results_and_the_answer(sqlite_store):
    acc, session, steps = _one(sqlite_store, OK)
    assert (acc["format"], acc["records"], acc["used"], acc["unit"]) == ("autogen", 6, 6, "messages")
    assert Counter(s.type for s in steps) == KINDS and [s.type for s in steps][0] == "input"
    assert (session["name"], session["agent_id"], session["status"]) == (
        "What is the weather and the time in Paris?",
        "weather_agent",
        "succeeded",
    )
    assert session["outcome"] == "It is sunny and 18°C in Paris; it is 10:14."
    assert session["metadata"]["autogen"]["stop_reason"] == "Text message received from 'weather_agent'"
    calls = [s for s in steps if s.type == "tool_call"]
    assert [(c.tool_name, c.tool_args, c.tool_call_id) for c in calls] == [
        ("get_weather", {"city": "Paris"}, "call_weather_1"),
        ("get_time", {"city": "Paris"}, "call_time_1"),
    ]
    assert [(s.tokens_in, s.tokens_out) for s in steps if s.tokens_in] == [(142, 17), (175, 16), (204, 19)]
    assert all(s.timestamp is not None for s in steps) and session["started_at"] == steps[0].timestamp
    assert session["ended_at"] == steps[-1].timestamp
    assert session["model"] is None and not any(s.model for s in steps)  # AgentChat writes no model name


def test_a_tool_that_raised_stays_an_error_step_and_the_run_still_ends_as_it_did(sqlite_store):
    _, session, steps = _one(sqlite_store, FAILED)
    results = [s for s in steps if s.type == "tool_result"]
    assert [(r.tool_name, r.status) for r in results] == [("get_weather", "ok"), ("get_time", "error")]
    assert results[1].content == "time service unreachable for Paris" and results[1].error_class == "tool_error"
    assert session["status"] == "succeeded" and session["outcome"].startswith("I could not get the time")


def test_a_team_state_reads_its_thread_and_names_the_agents_context_it_skips(sqlite_store):
    for path, failed in ((STATE_OK, 0), (STATE_FAILED, 1)):
        acc, session, steps = _one(sqlite_store, path)
        assert (acc["records"], acc["used"], acc["ignored"]) == (
            7,
            6,
            {"agent state ChatAgentContainerState (the thread again)": 1},
        )
        assert Counter(s.type for s in steps) == KINDS and sum(s.status == "error" for s in steps) == failed
        assert session["status"] == "unknown"  # a saved state says nothing of how the run ended
        assert session["metadata"]["autogen"]["team_state"]["RoundRobinGroupChatManager"] == "RoundRobinManagerState"
        assert sum(s.tokens_in or 0 for s in steps) == 142 + 175 + 204


def test_an_agents_own_state_is_read_from_its_model_context(sqlite_store):
    acc, session, steps = _one(sqlite_store, AUTOGEN / "agent_state_tool_error.json")
    assert (acc["records"], acc["used"], acc["unit"]) == (6, 6, "messages")
    assert [(s.type, s.status) for s in steps] == [
        ("input", "ok"),
        ("tool_call", "ok"),
        ("tool_result", "ok"),
        ("tool_call", "ok"),
        ("tool_result", "error"),
        ("decision", "ok"),
    ]
    assert steps[4].tool_call_id == steps[3].tool_call_id == "call_time_1" and steps[3].agent_id == "weather_agent"
    assert session["status"] == "unknown" and session["started_at"] is None  # a model context has no times
    assert not any(s.tokens_in for s in steps)


def test_a_message_list_ending_on_a_tool_summary(sqlite_store):
    _, session, steps = _one(sqlite_store, AUTOGEN / "messages_summary.json")
    assert [s.type for s in steps] == ["input", "tool_call", "tool_result", "decision"]
    assert steps[-1].content == "Sunny, 18°C" and steps[-1].metadata["message_type"] == "ToolCallSummaryMessage"
    assert session["status"] == "unknown"


def test_unknown_and_streaming_messages_are_accounted_not_dropped(sqlite_store):
    doc = orjson.loads(OK.read_bytes())
    doc["messages"].insert(
        1, {"source": "weather_agent", "models_usage": None, "content": "It", "type": "ModelClientStreamingChunkEvent"}
    )
    doc["messages"].insert(2, {"source": "weather_agent", "models_usage": None, "content": {}, "type": "SomethingNew"})
    # forced: a message of a type it cannot tell counts against the reader, and the generic chat reader,
    # which takes any object with `messages`, would then account for more of the file
    report = import_bytes(sqlite_store, orjson.dumps(doc), "partial.json", fmt="autogen")
    (acc,) = report.files
    assert (acc["records"], acc["used"]) == (8, 6)
    assert acc["ignored"] == {"type=ModelClientStreamingChunkEvent": 1, "type=SomethingNew": 1}
    del doc["messages"][2]
    assert import_bytes(sqlite_store, orjson.dumps(doc), "streamed.json").files[0]["format"] == "autogen"


def test_reimport_changes_nothing_and_a_null_replay_reproduces(sqlite_store):
    reimport_changes_nothing(sqlite_store, OK)
    (sid,) = import_file(sqlite_store, FAILED).sessions
    result = replay(sqlite_store, sid, None, None, ReplayConfig(model="recorded"))
    assert result.outcome == "completed" and result.first_divergence is None


def test_claims_nothing_else():
    claims_no_other_fixture(autogen.FORMAT, "autogen")
    chat = orjson.dumps([{"role": "user", "content": "hi", "source": "x"}])
    assert autogen.FORMAT not in candidates(chat, "chat.json")

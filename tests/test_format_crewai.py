"""CrewAI files written by crewai 1.15.30 itself against the scripted local model
(scripts/capture_files/crewai_files.py; tests/fixtures/crewai/README.md): the crew's CrewOutput JSON and its
output log (JSON and text) read right, a raised tool an error step, and what the reader must not claim."""

from __future__ import annotations

from collections import Counter

import orjson
import pytest
from conftest import FIXTURES
from reader_checks import claims_no_other_fixture, reimport_changes_nothing

from replay_core.ingest.formats import candidates, crewai
from replay_core.ingest.pipeline import ImportRejected, import_bytes, import_file
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig

CREWAI = FIXTURES / "crewai"
OUTPUT_OK, OUTPUT_FAILED = CREWAI / "crew_output_ok.json", CREWAI / "crew_output_tool_error.json"
LOG_JSON, LOG_TEXT = CREWAI / "crew_log_ok.json", CREWAI / "crew_log_tool_error.txt"


def _one(store, path):
    report = import_file(store, path)
    (sid,) = report.sessions
    return report.files[0], store.get_session(sid), store.load_steps(sid)


def test_a_crew_output_is_the_agents_messages_calls_and_results(sqlite_store):
    acc, session, steps = _one(sqlite_store, OUTPUT_OK)
    assert (acc["format"], acc["records"], acc["used"], acc["unit"]) == ("crewai", 7, 7, "task messages")
    assert [s.type for s in steps] == ["input", "input", "tool_call", "tool_result", "tool_call", "tool_result", "decision"]
    assert [s.metadata["role"] for s in steps[:2]] == ["system", "user"]
    calls = [s for s in steps if s.type == "tool_call"]
    assert [(c.tool_name, c.tool_args, c.tool_call_id) for c in calls] == [
        ("get_weather", {"city": "Paris"}, "call_weather_1"),
        ("get_time", {"city": "Paris"}, "call_time_1"),
    ]
    assert all(s.agent_id == "Weather agent" and s.status == "ok" for s in steps)
    assert (session["name"], session["agent_id"], session["status"]) == ("weather_and_time", "Weather agent", "succeeded")
    assert session["outcome"] == steps[-1].content == "It is sunny and 18°C in Paris; it is 10:14."
    # the crew's totals (the scripted model's 142+175+204 in, 17+16+19 out) are kept, on no step: no call is named
    meta = session["metadata"]
    assert (meta["tokens_in"], meta["tokens_out"], meta["crewai"]["token_usage"]["successful_requests"]) == (521, 52, 3)
    assert "totals" in meta and not any(s.tokens_in or s.tokens_out for s in steps)
    assert session["model"] is None and session["started_at"] is None  # neither is in a CrewOutput


def test_a_tool_that_raised_is_an_error_step_named_by_its_failure(sqlite_store):
    acc, session, steps = _one(sqlite_store, OUTPUT_FAILED)
    assert (acc["records"], acc["used"]) == (10, 10)
    assert Counter(s.type for s in steps) == {"input": 4, "tool_call": 2, "tool_result": 2, "decision": 2}
    results = [s for s in steps if s.type == "tool_result"]
    assert [(r.tool_name, r.status, r.error_class) for r in results] == [
        ("get_weather", "ok", None),
        ("get_time", "error", "TimeoutError"),
    ]
    assert results[1].content == "Error executing tool: time service unreachable for Paris"
    assert "unmatched_tool_failures" not in session["metadata"]["crewai"]
    assert session["status"] == "succeeded" and session["outcome"] == "Sunny."  # the crew went on to its last task


def test_a_task_without_messages_is_its_description_and_answer(sqlite_store):
    doc = orjson.loads(OUTPUT_FAILED.read_bytes())  # as releases before TaskOutput.messages wrote it
    for task in doc["tasks_output"]:
        del task["messages"], task["tool_failures"]
    report = import_bytes(sqlite_store, orjson.dumps(doc), "older.json")
    (acc,), (sid,) = report.files, report.sessions
    assert (acc["format"], acc["records"], acc["used"]) == ("crewai", 2, 2)
    steps = sqlite_store.load_steps(sid)
    assert [(s.type, s.content) for s in steps] == [
        ("input", "What is the weather and the time in Paris?"),
        ("decision", "I could not get the time.\nIt is sunny and 18°C in Paris."),
        ("input", "Say the weather in one word."),
        ("decision", "Sunny."),
    ]


def test_the_json_output_log_is_each_tasks_start_and_answer_with_times(sqlite_store):
    acc, session, steps = _one(sqlite_store, LOG_JSON)
    assert (acc["records"], acc["used"], acc["unit"]) == (2, 2, "log records")
    assert [(s.type, s.agent_id) for s in steps] == [("input", "Weather agent"), ("decision", "Weather agent")]
    assert steps[0].content == "What is the weather and the time in Paris?"
    assert steps[1].content == "It is sunny and 18°C in Paris; it is 10:14."
    assert all(s.timestamp is not None for s in steps) and session["started_at"] == steps[0].timestamp
    assert session["status"] == "unknown"  # the log does not say how the crew ended


def test_the_text_log_keeps_an_answer_that_runs_over_lines(sqlite_store):
    acc, session, steps = _one(sqlite_store, LOG_TEXT)
    assert (acc["records"], acc["used"]) == (4, 4)
    assert [s.type for s in steps] == ["input", "decision", "input", "decision"]
    assert steps[1].content == "I could not get the time.\nIt is sunny and 18°C in Paris."
    assert steps[3].content == "Sunny." and steps[2].metadata["task_name"] == "one_word"
    assert all(s.timestamp.isoformat().startswith("2026-12-06T16:") for s in steps)


def test_what_it_cannot_read_is_accounted_or_refused(sqlite_store):
    log = LOG_TEXT.read_bytes() + b'2026-12-06 16:41:15: task_name="x", task="y", agent="z"\n'  # no status
    report = import_bytes(sqlite_store, log, "cut.txt", fmt="crewai")
    (acc,) = report.files
    assert (acc["records"], acc["used"], acc["ignored"]) == (5, 4, {"unreadable line": 1})
    with pytest.raises(ImportRejected, match="^other.txt:1: expected CrewAI output log lines"):
        import_bytes(sqlite_store, b"2026-12-06 16:41:15: something else\n", "other.txt", fmt="crewai")


def test_reimport_changes_nothing_and_a_null_replay_reproduces(sqlite_store):
    reimport_changes_nothing(sqlite_store, OUTPUT_FAILED)
    reimport_changes_nothing(sqlite_store, LOG_TEXT)
    (sid,) = import_file(sqlite_store, OUTPUT_OK).sessions
    result = replay(sqlite_store, sid, None, None, ReplayConfig(model="recorded"))
    assert result.outcome == "completed" and result.first_divergence is None


def test_claims_nothing_else():
    claims_no_other_fixture(crewai.FORMAT, "crewai")
    plain = orjson.dumps([{"timestamp": "2026-01-01 00:00:00", "status": "ok", "message": "m"}])
    assert crewai.FORMAT not in candidates(plain, "log.json")
    assert crewai.FORMAT not in candidates(b"2026-01-01 00:00:00: INFO started\n", "log.txt")

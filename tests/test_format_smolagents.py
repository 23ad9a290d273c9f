"""smolagents importer: the real message-bus log and benchmark line, and a failed memory dump."""

from __future__ import annotations

from conftest import FIXTURES

from replay_core.ingest.pipeline import import_file


def test_decentralized_message_bus(store):
    report = import_file(store, FIXTURES / "smolagents/decentralized_run_023f7ac8_messages.jsonl")
    assert report.files[0]["format"] == "smolagents"
    sid = report.sessions[0]
    steps = store.load_steps(sid)
    assert len(steps) == 32
    assert [s.type for s in steps].count("decision") == 2 and steps[0].type == "input"
    assert {s.agent_id for s in steps} == {
        "system",
        "DocumentReaderAgent",
        "WebSearchAgent",
        "CodeAgent",
        "DeepResearchAgent",
        "Coordinator",
    }
    polls = [s for s in steps if "poll" in (s.metadata or {})]
    votes = [s for s in steps if "vote" in (s.metadata or {})]
    assert (len(polls), len(votes)) == (8, 14)
    first_poll = polls[0]
    assert first_poll.metadata["poll"]["poll_id"] == "446d790c-36f0-44a8-8e6d-d43a63533e34"
    assert [v.event_id for v in votes if v.parent_id == first_poll.event_id] == [
        "b67b03d9-39a0-40ae-b14d-08049d27c36c",
        "f1a7bcdd-99a9-4a0b-885e-9bff3067bc5e",
        "69699757-b5d0-48b1-9dac-ecb10114bffc",
    ]
    assert steps[25].metadata["final_answer"]["tally"]["YES"] == 3
    session = store.get_session(sid)
    assert (session["status"], session["outcome"]) == ("succeeded", "1934")
    assert session["name"] == "In what year was the beetle species Glipa alboscutellata described?"


def test_benchmark_line_with_tool_error_and_final_answer(store):
    report = import_file(store, FIXTURES / "smolagents/gpt-4o__tool-calling__math__2025-07-24.line2.jsonl")
    sid = report.sessions[0]
    steps = store.load_steps(sid)
    assert [s.type for s in steps] == [
        "input",
        "input",
        "error",
        "think",
        "tool_call",
        "tool_result",
        "think",
        "decision",
        "tool_result",
    ]
    assert steps[2].status == "error" and steps[2].content.startswith("Error executing tool 'python_interpreter'")
    assert steps[4].tool_args == {
        "code": "import math\n\ndef solve_tan_a():\n"
        "    # Since sin(A) = 2cos(A), we can set up the equation tan(A) = sin(A)/cos(A) = 2\n"
        "    return 2\n\nsolution = solve_tan_a()\nsolution"
    }
    assert steps[5].content == "Stdout:\n\nOutput: 2"
    assert (steps[7].content, steps[7].tool_name) == ("2", "final_answer")
    session = store.get_session(sid)
    assert (session["status"], session["outcome"], session["model"], session["workflow"]) == ("succeeded", "2", "gpt-4o", "MATH")
    assert (session["metadata"]["tokens_in"], session["metadata"]["tokens_out"]) == (4700, 181)
    assert session["metadata"]["true_answer"] == "2" and session["metadata"]["end_time"] == "2025-07-24 21:15:47"
    assert session["started_at"].isoformat().startswith("2025-07-24T19:15:42.053")


def test_memory_dump_of_a_failed_run(store):
    report = import_file(store, FIXTURES / "smolagents/memory_steps_failed.json")
    sid = report.sessions[0]
    steps = store.load_steps(sid)
    assert [s.type for s in steps] == [
        "input",
        "input",
        "think",
        "think",
        "tool_call",
        "tool_result",
        "think",
        "tool_call",
        "tool_result",
        "think",
        "error",
    ]
    assert (steps[8].status, steps[8].error_class) == ("error", "AgentExecutionError")
    assert sum(s.tokens_in or 0 for s in steps) == 410 + 1520 + 1701
    assert steps[3].duration_ms == 4250.0
    session = store.get_session(sid)
    assert (session["status"], session["error_class"], session["outcome"]) == (
        "failed",
        "AgentMaxStepsError",
        "Reached max steps.",
    )
    assert session["model"] == "Qwen/Qwen2.5-Coder-32B-Instruct"

"""Anthropic Messages importer: a real VCR cassette and a transcript with thinking and a failed tool."""

from __future__ import annotations

from conftest import FIXTURES

from replay_core.ingest.pipeline import import_file


def test_real_cassette_history_and_reply(store):
    report = import_file(store, FIXTURES / "anthropic/test_anthropic_tools_history_legacy.yaml")
    assert report.files[0]["format"] == "anthropic"
    sid = report.sessions[0]
    assert sid == "msg_01QJDheQSo4hSrxgtLpEJFkA"
    steps = store.load_steps(sid)
    assert [s.type for s in steps] == ["input", "think", "tool_call", "tool_result", "tool_call"]
    assert (steps[2].tool_name, steps[2].tool_args, steps[2].tool_call_id) == (
        "get_weather",
        {"location": "San Francisco, CA"},
        "call_1",
    )
    assert (steps[3].tool_name, steps[3].content) == ("get_weather", "Sunny and 65 degrees Fahrenheit")
    reply = steps[4]
    assert (reply.tool_name, reply.tool_args) == ("get_time", {"timezone": "America/Los_Angeles"})
    assert (reply.tokens_in, reply.tokens_out, reply.model) == (568, 58, "claude-3-5-haiku-20241022")
    assert reply.timestamp.isoformat() == "2025-07-28T14:33:18+00:00"
    assert reply.metadata["stop_reason"] == "tool_use"
    assert store.get_session(sid)["model"] == "claude-3-5-haiku-20241022"


def test_transcript_thinking_error_result_and_final_answer(store):
    report = import_file(store, FIXTURES / "anthropic/messages_transcript.json")
    steps = store.load_steps(report.sessions[0])
    assert [s.type for s in steps] == [
        "input",
        "think",
        "think",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "decision",
    ]
    assert steps[1].content == "I should list branches first to make sure the name is right."
    assert steps[1].metadata == {"signature": "EqQBCkgIARABGAIiQ"}
    assert steps[4].content == "  feature/old-login\n  feature/search"
    assert (steps[6].status, steps[6].tool_call_id, steps[6].tool_name) == ("error", "toolu_01B", "git")
    assert steps[7].content.startswith("I could not delete 'feature/old-login'")

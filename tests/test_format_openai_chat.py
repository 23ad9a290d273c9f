"""OpenAI chat-completions importer: real VCR cassettes, request/response logs, message lists."""

from __future__ import annotations

import orjson
from conftest import FIXTURES

from replay_core.ingest.pipeline import import_bytes, import_file


def test_cassette_with_history_and_parallel_tool_calls(store):
    report = import_file(store, FIXTURES / "openai_chat/openinference_test_tool_calls.yaml")
    assert report.files[0]["format"] == "openai_chat"
    assert report.sessions == ["chatcmpl-DD5NFnwbig885vzBzWKxq6GtDvWda"]
    steps = store.load_steps(report.sessions[0])
    assert [s.type for s in steps] == [
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
        "decision",
        "input",
        "tool_call",
        "tool_call",
    ]
    assert [s.tool_name for s in steps if s.type == "tool_result"] == ["get_weather", "get_population"]
    assert steps[0].tool_args == {"city": "New York"}
    reply = steps[6]
    assert (reply.tool_name, reply.tool_args, reply.tokens_in, reply.tokens_out) == (
        "get_weather",
        {"city": "San Francisco"},
        207,
        46,
    )
    assert reply.model == "gpt-4o-mini-2024-07-18" and reply.metadata["finish_reason"] == "tool_calls"
    session = store.get_session(report.sessions[0])
    assert session["model"] == "gpt-4o-mini-2024-07-18"
    assert [t["function"]["name"] for t in session["metadata"]["tools"]] == ["get_weather", "get_population"]


def test_gzip_cassette_with_three_recordings_gives_three_runs(store):
    report = import_file(store, FIXTURES / "openai_chat/openllmetry_test_chat_tool_calls.yaml")
    assert len(report.sessions) == 3 and report.steps == 9
    usage = []
    for sid in report.sessions:
        steps = store.load_steps(sid)
        assert [s.type for s in steps] == ["tool_call", "tool_result", "decision"]
        usage.append((steps[2].tokens_in, steps[2].tokens_out, steps[2].timestamp.isoformat()))
    assert usage == [
        (40, 12, "2024-07-01T23:05:41+00:00"),
        (40, 13, "2026-03-31T13:13:00+00:00"),
        (40, 13, "2026-03-31T13:24:20+00:00"),
    ]


def test_request_response_log_continues_runs_and_fails_on_provider_error(store):
    report = import_file(store, FIXTURES / "openai_chat/chat_log.jsonl")
    first, second = report.sessions
    assert first == "chatcmpl-log-1"
    steps = store.load_steps(first)
    assert [s.type for s in steps] == ["input", "input", "tool_call", "tool_result", "decision"]
    assert sum(s.tokens_in or 0 for s in steps) == 95 + 140
    assert steps[2].metadata["request"] == {"temperature": 0}
    failed = store.get_session(second)
    assert (failed["status"], failed["error_class"], failed["outcome"]) == (
        "failed",
        "rate_limit_error",
        "Rate limit reached for gpt-4o-mini",
    )
    assert [s.type for s in store.load_steps(second)] == ["input", "error"]


def test_plain_message_list_keeps_unknown_fields(store):
    messages = [
        {"role": "user", "content": "hi", "x_trace": "abc"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "not json"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "boom", "is_error": True},
        {"role": "assistant", "content": "done"},
    ]
    report = import_bytes(store, orjson.dumps(messages), "chat.json")
    steps = store.load_steps(report.sessions[0])
    assert [s.type for s in steps] == ["input", "tool_call", "tool_result", "decision"]
    assert steps[0].metadata == {"role": "user", "x_trace": "abc"}
    assert steps[1].tool_args == "not json"
    assert (steps[2].status, steps[2].tool_name) == ("error", "f")

"""Gemini CLI session recordings (`gemini_cli`): the JSON document and the newer JSON Lines layout.

Real file: gemini_cli/yoavf_gemini-cli-pomodoro-timer.json — yoavf/ai-sessions examples/gemini-cli-pomodoro-timer.json
  @ 85f763593463127047c253ec34fdf11b23fe8386 (MIT)
Supplement (sanitized/synthetic by its project): gemini_cli/jazzyalex_agent-sessions_jsonl_v040.jsonl — jazzyalex/agent-sessions
  Resources/Fixtures/stage0/agents/gemini/jsonl_v040.jsonl @ 4d66dfbaefec3b6aa558a43809b092b7d9e9fb7d
"""

from __future__ import annotations

from collections import Counter

import orjson
from conftest import FIXTURES

from replay_core.ingest.formats import detect
from replay_core.ingest.pipeline import import_file

REAL = FIXTURES / "gemini_cli/yoavf_gemini-cli-pomodoro-timer.json"
JSONL = FIXTURES / "gemini_cli/jazzyalex_agent-sessions_jsonl_v040.jsonl"


def test_real_recording(store):
    report = import_file(store, REAL)
    assert report.files[0]["format"] == "gemini_cli" and report.files[0]["ignored"] == {}
    assert report.sessions == ["0b23371a-ce2e-4b1c-81a0-44af5d94d9ce"]
    session, steps = store.get_session(report.sessions[0]), store.load_steps(report.sessions[0])
    doc = orjson.loads(REAL.read_bytes())
    thoughts = sum(len(m.get("thoughts") or []) for m in doc["messages"])
    assert Counter(s.type for s in steps) == {"input": 5, "tool_call": 11, "tool_result": 11, "decision": 5,
                                              "think": thoughts + 9 - 0}  # each thought, and the text of the 9 messages that call tools
    calls = [s for s in steps if s.type == "tool_call"]
    assert Counter(c.tool_name for c in calls) == {"replace": 8, "write_file": 3}
    assert calls[0].tool_args["file_path"].endswith("/index.html")
    results = {s.tool_call_id: s for s in steps if s.type == "tool_result"}
    assert set(results) == {c.tool_call_id for c in calls}
    errors = [r for r in results.values() if r.status == "error"]
    assert len(errors) == 1 and errors[0].content.startswith("A secondary check by an LLM determined that no changes")
    # tokens: once per message, input+tool in, output+thoughts out; the first message's all-zero count is "not recorded"
    models = [m for m in doc["messages"] if m["type"] == "gemini"]
    assert sum(s.tokens_in or 0 for s in steps) == sum(m["tokens"]["input"] + m["tokens"]["tool"] for m in models)
    assert sum(s.tokens_out or 0 for s in steps) == sum(m["tokens"]["output"] + m["tokens"]["thoughts"] for m in models)
    assert len([s for s in steps if s.tokens_in is not None]) == len(models) - 1
    assert (session["model"], session["status"], session["agent_id"]) == ("gemini-2.5-pro", "unknown", "gemini-cli")
    assert session["started_at"].isoformat().startswith("2025-10-21T20:04:20.819")
    assert session["ended_at"].isoformat().startswith("2025-10-21T20:08:49.642")
    assert session["name"].startswith("Build a simple Pomodoro timer")


def test_jsonl_layout_header_set_and_last_copy_wins(store, tmp_path):
    report = import_file(store, JSONL)
    session, steps = store.get_session(report.sessions[0]), store.load_steps(report.sessions[0])
    assert [s.type for s in steps] == ["input", "tool_call", "tool_result", "decision"]
    assert steps[1].tool_args == {"command": "ls -F", "description": "List files in the current directory."}
    assert session["ended_at"].isoformat().startswith("2026-04-29T21:39:45.996")
    # a message written again with more data replaces its first copy, in its place; a rewind drops what follows
    lines = JSONL.read_bytes().splitlines()
    again = orjson.loads(lines[1])
    again["content"] = [{"text": "Say hello and list every file."}]
    extra = {"id": "g-user-2", "timestamp": "2026-04-29T21:40:00Z", "type": "user", "content": "and again?"}
    path = tmp_path / "session-2.jsonl"
    header = dict(orjson.loads(lines[0]), sessionId="gemini_stage0_edited")
    path.write_bytes(b"\n".join([orjson.dumps(header), *lines[1:], orjson.dumps(again), orjson.dumps(extra), b'{"$rewindTo": "g-user-2"}']) + b"\n")
    report = import_file(store, path)
    steps = store.load_steps(report.sessions[0])
    assert [s.type for s in steps] == ["input", "tool_call", "tool_result", "decision"]
    assert steps[0].content == "Say hello and list every file."
    assert report.files[0]["ignored"] == {"superseded": 1, "rewound": 1}


def test_a_claude_code_or_codex_file_is_not_gemini():
    for path in (FIXTURES / "claude_code/yepanywhere_claude-basic_native.jsonl", FIXTURES / "codex_cli/yepanywhere_codex-basic_native.jsonl"):
        assert detect(path.read_bytes(), str(path)).name != "gemini_cli"
    assert detect(REAL.read_bytes(), str(REAL)).name == "gemini_cli"
    assert detect(JSONL.read_bytes(), str(JSONL)).name == "gemini_cli"

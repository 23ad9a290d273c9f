"""Gemini CLI session recordings (`gemini_cli`): the JSON document and the newer JSON Lines layout.

Real files (written by Gemini CLI, byte copies):
- gemini_cli/yoavf_gemini-cli-pomodoro-timer.json — yoavf/ai-sessions examples/gemini-cli-pomodoro-timer.json
  @ 85f763593463127047c253ec34fdf11b23fe8386 (MIT)
- gemini_cli/BrianV1981_aim_session-2026-03-18T01-58-b26e4930.json — BrianV1981/aim
  [AUTO_REPAIR]/archive/raw/session-2026-03-18T01-58-b26e4930.json @ 100c7a70ca2412506d06f36a66328047baf07f2f
  (a chats/session-*.json archived by that project's SessionEnd hook; gemini-3-flash-preview, `kind`, Part-list content)
- gemini_cli/BrianV1981_aim_session-2026-03-18T15-20-76d8ed24.json — same repo and commit,
  [AUTO_REPAIR]/archive/raw/session-2026-03-18T15-20-76d8ed24.json (a session holding one hook warning)
Supplement (sanitized/synthetic by its project): gemini_cli/jazzyalex_agent-sessions_jsonl_v040.jsonl — jazzyalex/agent-sessions
  Resources/Fixtures/stage0/agents/gemini/jsonl_v040.jsonl @ 4d66dfbaefec3b6aa558a43809b092b7d9e9fb7d
"""

from __future__ import annotations

from collections import Counter

import orjson
import pytest
from conftest import FIXTURES

from replay_core.ingest.accounting import NO_STEPS, account
from replay_core.ingest.formats import detect
from replay_core.ingest.formats.gemini_cli import FORMAT
from replay_core.ingest.formats.shape import shape_of
from replay_core.ingest.pipeline import FileRefused, import_file
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig

REAL = FIXTURES / "gemini_cli/yoavf_gemini-cli-pomodoro-timer.json"
JSONL = FIXTURES / "gemini_cli/jazzyalex_agent-sessions_jsonl_v040.jsonl"
AIM = FIXTURES / "gemini_cli/BrianV1981_aim_session-2026-03-18T01-58-b26e4930.json"
WARNING_ONLY = FIXTURES / "gemini_cli/BrianV1981_aim_session-2026-03-18T15-20-76d8ed24.json"


def test_real_recording(store):
    report = import_file(store, REAL)
    assert report.files[0]["format"] == "gemini_cli" and report.files[0]["ignored"] == {}
    assert (report.files[0]["records"], report.files[0]["unit"], report.files[0]["used"]) == (19, "messages", 19)
    assert report.sessions == ["0b23371a-ce2e-4b1c-81a0-44af5d94d9ce"]
    session, steps = store.get_session(report.sessions[0]), store.load_steps(report.sessions[0])
    doc = orjson.loads(REAL.read_bytes())
    thoughts = sum(len(m.get("thoughts") or []) for m in doc["messages"])
    assert Counter(s.type for s in steps) == {
        "input": 5,
        "tool_call": 11,
        "tool_result": 11,
        "decision": 5,
        "think": thoughts + 9 - 0,
    }  # each thought, and the text of the 9 messages that call tools
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


def test_real_recording_newer_cli_cancelled_call_and_cli_error(store):
    """gemini-3-flash-preview era: Part-list user content, `kind`, a /command error, info notices, a cancelled call."""
    report = import_file(store, AIM)
    (acc,) = report.files
    # accounted by message: 7 messages, the two "Request cancelled." info notices ignored by kind
    assert (acc["format"], acc["records"], acc["unit"], acc["used"]) == ("gemini_cli", 7, "messages", 5)
    assert acc["ignored"] == {"message/info": 2} and acc["bad"] == 0 and acc["steps"] == 26
    assert report.sessions == ["b26e4930-a5eb-4800-bed1-3d8b7929eddf"]
    session, steps = store.get_session(report.sessions[0]), store.load_steps(report.sessions[0])
    assert Counter(s.type for s in steps) == {"error": 1, "input": 2, "think": 7, "tool_call": 8, "tool_result": 8}
    # the CLI's own error (a slash command with nothing to export) is the first step, not the run's outcome
    assert steps[0].type == "error" and steps[0].content == "No recent API request found to export."
    assert [s.content for s in steps if s.type == "input"] == [steps[1].content] * 2  # the prompt sent twice
    assert steps[1].content.startswith("/A.I.M. initialization check: Execute /chat debug")
    calls = [s for s in steps if s.type == "tool_call"]
    assert Counter(c.tool_name for c in calls) == {"read_file": 6, "list_directory": 1, "cli_help": 1}
    assert calls[0].tool_args == {"file_path": "GEMINI.md"} and calls[0].tool_call_id == "read_file_1773799310189_0"
    # the sub-agent's progress inside cli_help's resultDisplay is not a tool call of this session
    assert "get_internal_docs" not in {c.tool_name for c in calls}
    results = {s.tool_call_id: s for s in steps if s.type == "tool_result"}
    assert set(results) == {c.tool_call_id for c in calls}
    cancelled = results["cli_help_1773799313733_1"]
    assert (cancelled.status, cancelled.error_class) == ("error", "tool cancelled")
    assert cancelled.content == "[Operation Cancelled] Operation cancelled."
    assert [r.status for r in results.values()].count("ok") == 7
    assert results["list_directory_1773799310353_5"].content.startswith("Directory listing for /home/kingb/aim/continuity:")
    # tokens once per gemini message, on its first step: input+tool in, output+thoughts out; cached kept raw
    tokened = [s for s in steps if s.tokens_in is not None]
    assert [(s.tokens_in, s.tokens_out) for s in tokened] == [(8196, 121 + 271), (11255, 83 + 163)]
    assert tokened[1].metadata["tokens"]["cached"] == 6403
    assert (session["tokens_in"], session["tokens_out"]) == (19451, 638)
    assert (session["model"], session["agent_id"]) == ("gemini-3-flash-preview", "gemini-cli")
    # the recording ends on a cancelled request: no final answer, no outcome recorded
    assert session["status"] == "unknown" and not any(s.type == "decision" for s in steps)
    assert session["started_at"].isoformat().startswith("2026-03-18T01:58:27.222")
    assert session["ended_at"].isoformat().startswith("2026-03-18T02:02:18.867")
    assert steps[3].content.startswith("Defining Initialization Steps: I'm currently breaking down")
    assert steps[3].timestamp.isoformat().startswith("2026-03-18T01:59:53.243")


def test_a_recording_with_only_a_warning_is_refused_not_an_empty_run(store):
    with pytest.raises(FileRefused) as exc:
        import_file(store, WARNING_ONLY)
    assert NO_STEPS in str(exc.value) and "0 of 1 messages used (1 ignored: message/warning 1)" in str(exc.value)
    assert store.list_sessions() == []


def test_a_message_type_the_reader_does_not_know_counts_against_it():
    doc = orjson.loads(AIM.read_bytes())
    for msg in doc["messages"]:
        msg["type"] = "compressed" if msg["type"] == "gemini" else msg["type"]
    acc = account(FORMAT, orjson.dumps(doc), "s.json", shape_of(orjson.dumps(doc)))
    assert acc.ignored["message/compressed"] == 2 and acc.unknown == 2 and acc.used == 3


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
    path.write_bytes(
        b"\n".join([orjson.dumps(header), *lines[1:], orjson.dumps(again), orjson.dumps(extra), b'{"$rewindTo": "g-user-2"}'])
        + b"\n"
    )
    report = import_file(store, path)
    steps = store.load_steps(report.sessions[0])
    assert [s.type for s in steps] == ["input", "tool_call", "tool_result", "decision"]
    assert steps[0].content == "Say hello and list every file."
    assert report.files[0]["ignored"] == {"superseded": 1, "rewound": 1}


def test_a_claude_code_or_codex_file_is_not_gemini():
    for path in (
        FIXTURES / "claude_code/yepanywhere_claude-basic_native.jsonl",
        FIXTURES / "codex_cli/yepanywhere_codex-basic_native.jsonl",
    ):
        assert detect(path.read_bytes(), str(path)).name != "gemini_cli"
    assert detect(REAL.read_bytes(), str(REAL)).name == "gemini_cli"
    assert detect(JSONL.read_bytes(), str(JSONL)).name == "gemini_cli"
    assert detect(AIM.read_bytes(), str(AIM)).name == "gemini_cli"


def test_newer_recording_replays_null(store):
    """A null replay reproduces the session (reimport is checked with the other coding agents)."""
    sid = import_file(store, AIM).sessions[0]
    result = replay(store, sid, None, None, ReplayConfig(model="recorded"))
    assert result.first_divergence is None and result.outcome == "completed"

"""Codex CLI rollouts (`codex_cli`), classic (0.47) and newer (0.154) layouts, on real files.

Real files (tests/fixtures/SOURCES.md):
- codex_cli/yoavf_codex-pomodoro-timer_rollout.jsonl — yoavf/ai-sessions examples/codex-pomodor-timer.jsonl
  @ f685c3d5d57534356a329ac2fb19e24dcee55fc2 (MIT)
- codex_cli/yepanywhere_codex-basic_native.jsonl — kzahel/yepanywhere
  packages/server/test/fixtures/captured/codex-basic-2026-09-12/native.jsonl @ 76ea6130fd9532a373f389636e996665f3a2838c
- codex_cli/sample_codex_session.jsonl — simonw/claude-code-transcripts tests/sample_codex_session.jsonl
  @ 871966d66cca5ec1ba4c4372d056d7fd7b30bb12 (Apache-2.0)
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
from conftest import FIXTURES

from replay_core.ingest.formats import detect
from replay_core.ingest.pipeline import import_file

CLASSIC = FIXTURES / "codex_cli/yoavf_codex-pomodoro-timer_rollout.jsonl"
NEWER = FIXTURES / "codex_cli/yepanywhere_codex-basic_native.jsonl"


def _last_total(path: Path) -> dict:
    totals = [
        r["payload"]["info"]["total_token_usage"]
        for r in map(orjson.loads, path.read_bytes().splitlines())
        if r["payload"].get("type") == "token_count" and r["payload"].get("info")
    ]
    return totals[-1]


def test_classic_rollout(store):
    report = import_file(store, CLASSIC)
    assert report.files[0]["format"] == "codex_cli"
    assert report.sessions == ["019a085e-04c1-7f81-a09e-9555f6a1fb40"]
    session, steps = store.get_session(report.sessions[0]), store.load_steps(report.sessions[0])
    assert Counter(s.type for s in steps) == {"think": 20, "tool_call": 18, "tool_result": 18, "input": 4, "decision": 3}
    assert report.files[0]["ignored"] == {
        "duplicate:agent_reasoning": 20,
        "duplicate:user_message": 3,
        "duplicate:agent_message": 3,
        "token_count/no-info": 1,
    }
    calls = [s for s in steps if s.type == "tool_call"]
    assert Counter(c.tool_name for c in calls) == {"apply_patch": 11, "update_plan": 4, "shell": 3}
    assert calls[0].tool_args == {"command": ["zsh", "-lc", "ls"], "workdir": "/Users/yoavfarhi/dev/pomodoro/codex"}
    assert calls[3].tool_args["input"].startswith("*** Begin Patch\n*** Add File: index.html")  # custom tool: raw input
    results = {s.tool_call_id: s for s in steps if s.type == "tool_result"}
    assert set(results) == {c.tool_call_id for c in calls}
    shell = results[calls[0].tool_call_id]
    assert (shell.content, shell.metadata["exit_code"], shell.status) == ("", 0, "ok")  # decoded from the JSON-in-a-string output
    assert all(r.status == "ok" for r in results.values())  # no exit code says otherwise; the patch failure is plain text
    # token_count is cumulative: the steps' sums equal the last total, never the sum of the repeats
    total = _last_total(CLASSIC)
    assert sum(s.tokens_in or 0 for s in steps) == total["input_tokens"]
    assert sum(s.tokens_out or 0 for s in steps) == total["output_tokens"]
    assert session["metadata"]["token_totals"]["cached_input_tokens"] == total["cached_input_tokens"]
    assert (session["model"], session["agent_version"], session["status"]) == ("gpt-5-codex", "0.47.0", "unknown")
    assert session["name"].startswith("Build a simple Pomodoro timer")
    assert session["started_at"].isoformat().startswith("2025-10-21T20:02:50.689")
    assert session["ended_at"].isoformat().startswith("2025-10-21T20:10:27.501")
    assert [s.metadata["turn"] for s in steps if s.type == "decision"] == [1, 2, 3]


def test_newer_rollout_exit_codes_from_command_items(store):
    report = import_file(store, NEWER)
    session, steps = store.get_session(report.sessions[0]), store.load_steps(report.sessions[0])
    assert Counter(s.type for s in steps) == {"input": 5, "think": 4, "tool_call": 5, "tool_result": 5, "decision": 2}
    ignored = report.files[0]["ignored"]
    assert ignored["duplicate:token_usage_record"] == 7 and ignored["world_state"] == 2
    assert sum(ignored.values()) == 18
    results = [s for s in steps if s.type == "tool_result"]
    assert [r.metadata.get("exit_code") for r in results] == [0, None, 0, 7, 0]  # the FileChange carries none
    failed = results[3]
    assert (failed.status, failed.error_class, failed.tool_name) == ("error", "exit_code 7", "exec")
    assert [s.metadata["reasoning_effort"] for s in steps if s.type == "think"] == ["low"] * 4
    total = _last_total(NEWER)
    assert sum(s.tokens_in or 0 for s in steps) == total["input_tokens"]
    assert (session["model"], session["agent_version"], session["status"]) == ("gpt-5.6-luna", "0.154.0", "unknown")
    assert [s.metadata["turn_id"] for s in steps if s.type == "decision"] == [
        "01a09509-a962-7282-95fb-4ac506ba20be",
        steps[-1].metadata["turn_id"],
    ]
    assert steps[-1].metadata["turn"] == 2


def test_a_call_without_output_is_pending_not_an_error(store, tmp_path):
    lines = CLASSIC.read_bytes().splitlines()
    cut = next(i for i, line in enumerate(lines) if b'"function_call_output"' in line)
    path = tmp_path / "rollout-live.jsonl"
    path.write_bytes(b"\n".join(lines[:cut]) + b"\n")  # written while the first call runs
    steps = store.load_steps(import_file(store, path).sessions[0])
    assert steps[-1].type == "tool_call" and steps[-1].status == "ok" and steps[-1].metadata["pending"] is True


def test_exec_command_end_sets_the_exit_code(store, tmp_path):
    lines = CLASSIC.read_bytes().splitlines()
    call_id = orjson.loads(next(line for line in lines if b'"function_call"' in line))["payload"]["call_id"]
    end = {
        "timestamp": "2025-10-21T20:04:27.013Z",
        "type": "event_msg",
        "payload": {"type": "exec_command_end", "call_id": call_id, "exit_code": 2},
    }
    path = tmp_path / "rollout-x.jsonl"
    path.write_bytes(b"\n".join([*lines, orjson.dumps(end)]) + b"\n")
    steps = store.load_steps(import_file(store, path).sessions[0])
    result = next(s for s in steps if s.type == "tool_result" and s.tool_call_id == call_id)
    assert (result.status, result.error_class) == ("error", "exit_code 2")


def test_a_session_start_alone(store):
    path = FIXTURES / "codex_cli/sample_codex_session.jsonl"
    assert detect(path.read_bytes(), str(path)).name == "codex_cli"
    report = import_file(store, path)
    session, steps = store.get_session(report.sessions[0]), store.load_steps(report.sessions[0])
    assert [s.type for s in steps] == ["input"] * 3
    assert (session["model"], session["status"]) == ("gpt-5.2-codex", "unknown")
    assert report.files[0]["ignored"] == {"duplicate:user_message": 1}

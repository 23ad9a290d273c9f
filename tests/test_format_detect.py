"""Detection by content, refusals with a position, empty runs, and the CLI over the importers."""

from __future__ import annotations

import shutil

import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from replay_core.cli import app
from replay_core.ingest.formats import UnknownFormat, detect
from replay_core.ingest.pipeline import ImportRejected, import_bytes

EXPECTED = {
    "anthropic/test_anthropic_tools_history_legacy.yaml": "anthropic",
    "anthropic/messages_transcript.json": "anthropic",
    "openai_chat/openinference_test_tool_calls.yaml": "openai_chat",
    "openai_chat/openllmetry_test_chat_tool_calls.yaml": "openai_chat",
    "openai_chat/chat_log.jsonl": "openai_chat",
    "swe_agent/klieret__swe-agent-test-repo-i1.traj": "swe_agent",
    "swe_agent/networking_1.traj": "swe_agent",
    "swe_agent/new_layout_exit_cost.traj": "swe_agent",
    "mini_swe_agent/github_issue.traj.json": "mini_swe_agent",
    "mini_swe_agent/limits_exceeded.traj.json": "mini_swe_agent",
    "smolagents/decentralized_run_023f7ac8_messages.jsonl": "smolagents",
    "smolagents/gpt-4o__tool-calling__math__2025-07-24.line2.jsonl": "smolagents",
    "smolagents/memory_steps_failed.json": "smolagents",
    "notte/notte_agent_status.json": "notte",
    "notte/notte_trajectory_failed.json": "notte",
    "langchain/langsmith_agent_run.json": "langchain",
    "langchain/langsmith_flat_runs.jsonl": "langchain",
}


@pytest.mark.parametrize("relpath", sorted(EXPECTED))
def test_detected_from_content_not_name(relpath, tmp_path):
    renamed = tmp_path / "upload.bin"
    shutil.copy(FIXTURES / relpath, renamed)
    data = renamed.read_bytes()
    assert detect(data, str(renamed)).name == EXPECTED[relpath]


def test_unknown_file_lists_known_formats():
    with pytest.raises(UnknownFormat) as exc:
        detect(b"just some text\n", "notes.txt")
    message = str(exc.value)
    assert message.startswith("notes.txt: cannot tell which format this file is in; known formats: native (")
    for name in ("swe_agent", "mini_swe_agent", "smolagents", "notte", "langchain", "anthropic", "openai_chat"):
        assert f" {name} (" in message


@pytest.mark.parametrize(
    "relpath", ["swe_agent/networking_1.traj", "notte/notte_agent_status.json", "langchain/langsmith_agent_run.json"]
)
def test_truncated_file_is_refused_with_position_and_nothing_stored(store, relpath):
    data = (FIXTURES / relpath).read_bytes()
    cut = data[: len(data) // 2]
    fmt = EXPECTED[relpath]
    with pytest.raises(ImportRejected) as exc:
        import_bytes(store, cut, "cut.json", fmt=fmt)
    where = exc.value.errors[0].where
    line = cut.count(b"\n") + 1
    assert where.startswith(f"cut.json:{line}:")
    assert "is the file truncated?" in exc.value.errors[0].reason
    assert store.session_ids() == []


def test_truncated_jsonl_line_names_the_line(store):
    data = (FIXTURES / "smolagents/decentralized_run_023f7ac8_messages.jsonl").read_bytes()
    lines = data.split(b"\n")
    lines[4] = lines[4][:40]
    with pytest.raises(ImportRejected) as exc:
        import_bytes(store, b"\n".join(lines), "bus.jsonl")
    assert [str(e) for e in exc.value.errors] == ["bus.jsonl:5: invalid JSON (unexpected end of data); is the line truncated?"]
    assert store.session_ids() == []


def test_bad_element_is_refused_by_position(store):
    data = b'[{"type": "agent_step_start", "value": {"step_number": 0}}, {"type": "teleport", "value": {}}]'
    with pytest.raises(ImportRejected) as exc:
        import_bytes(store, data, "t.json", fmt="notte")
    assert str(exc.value) == (
        "t.json:[1]: type: expected one of agent_step_start, agent_step_stop, observation, agent_completion, "
        "execution_result, screenshot, got 'teleport'"
    )
    assert store.session_ids() == []


def test_empty_runs_import_as_sessions_without_steps(store):
    swe = import_bytes(store, b'{"environment": "swe_main", "trajectory": [], "history": [], "info": {}}', "empty.traj")
    notte = import_bytes(store, b"[]", "empty_notte.json", fmt="notte")
    for report in (swe, notte):
        assert report.steps == 0 and len(report.sessions) == 1
        session = store.get_session(report.sessions[0])
        assert session["status"] == "unknown"  # a finished file that says nothing of its outcome
        assert session["started_at"] is None and session["ended_at"] is None  # no times in the file: none made up


def test_cli_import_auto_and_show(tmp_path):
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    runner = CliRunner()
    files = [
        str(FIXTURES / p)
        for p in (
            "swe_agent/klieret__swe-agent-test-repo-i1.traj",
            "notte/notte_agent_status.json",
            "langchain/langsmith_agent_run.json",
            "anthropic/messages_transcript.json",
        )
    ]
    result = runner.invoke(app, ["import", *files, "--db", db, "--format", "auto"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("imported 4 sessions, 47 steps")
    shown = runner.invoke(app, ["show", "8b2f1c6e-4a77-4c1e-9f0a-2d5f3f0e9a11", "--db", db, "--step", "9"])
    assert shown.exit_code == 0, shown.output
    assert "status succeeded" in shown.stdout
    assert "'goal': 'Open the sort menu'" in shown.stdout
    unknown = tmp_path / "notes.txt"
    unknown.write_text("hello")
    refused = runner.invoke(app, ["import", str(unknown), "--db", db])
    assert refused.exit_code == 1
    assert "not imported, no reader recognises it. It looks like plain text of 1 lines." in " ".join(refused.stderr.split())

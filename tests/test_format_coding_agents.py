"""What the three coding-agent readers (claude_code, codex_cli, gemini_cli) share: a null replay
reproduces a real session, re-importing changes nothing, bad input is refused in one line.

Files and their sources: tests/fixtures/SOURCES.md (and the docstrings of test_format_claude_code.py,
test_format_codex_cli.py, test_format_gemini_cli.py).
"""

from __future__ import annotations

import random
import re
from typing import Any

import orjson
import pytest
from cli_helpers import run_program
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_core.events import SessionStatus
from replay_core.ingest.pipeline import import_file, read_events
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig

REAL = {
    "claude_code": FIXTURES / "claude_code/yepanywhere_claude-basic_native.jsonl",
    "codex_cli": FIXTURES / "codex_cli/yepanywhere_codex-basic_native.jsonl",
    "gemini_cli": FIXTURES / "gemini_cli/yoavf_gemini-cli-pomodoro-timer.json",
}
ALL = [
    *REAL.values(),
    FIXTURES / "claude_code/daaain_sidechain_integrated.jsonl",
    FIXTURES / "codex_cli/yoavf_codex-pomodoro-timer_rollout.jsonl",
    FIXTURES / "gemini_cli/jazzyalex_agent-sessions_jsonl_v040.jsonl",
    FIXTURES / "claude_code/yoavf_claude-code-pomodoro-timer.jsonl",
    FIXTURES / "gemini_cli/BrianV1981_aim_session-2026-03-18T01-58-b26e4930.json",
]


@pytest.mark.parametrize("fmt", list(REAL))
def test_null_replay_reproduces_a_real_session(sqlite_store, fmt):
    sid = import_file(sqlite_store, REAL[fmt]).sessions[0]
    result = replay(sqlite_store, sid, None, None, ReplayConfig(model="recorded"))
    assert result.first_divergence is None, result.first_divergence
    assert result.outcome == "completed" and result.steps == sqlite_store.get_session(sid)["steps"] > 10


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_reimport_changes_nothing_and_times_are_the_sources(store, path):
    first = import_file(store, path)
    before = {sid: (store.get_session(sid), store.load_steps(sid)) for sid in first.sessions}
    second = import_file(store, path)
    assert second.sessions == first.sessions and second.duplicates == first.steps
    assert {sid: (store.get_session(sid), store.load_steps(sid)) for sid in second.sessions} == before
    for session, steps in before.values():
        assert session["status"] == SessionStatus.UNKNOWN  # never `running`: the file is finished
        assert session["started_at"] is not None and session["ended_at"] >= session["started_at"]
        assert session["ended_at"].year < 2026 or session["ended_at"].month in (3, 4, 9)  # the source's, not today's
        assert all(s.timestamp is not None for s in steps)


def test_a_session_without_times_has_none(store, tmp_path):
    doc = orjson.loads(REAL["gemini_cli"].read_bytes())
    for key in ("startTime", "lastUpdated"):
        doc.pop(key)
    for msg in doc["messages"]:
        msg.pop("timestamp", None)
        for part in msg.get("thoughts") or []:
            part.pop("timestamp", None)
        for call in msg.get("toolCalls") or []:
            call.pop("timestamp", None)
    path = tmp_path / "untimed.json"
    path.write_bytes(orjson.dumps(doc))
    session = store.get_session(import_file(store, path).sessions[0])
    assert session["started_at"] is None and session["ended_at"] is None and session["status"] == "unknown"


# ---------------------------------------------------------------------------- bad input

VALUES = [None, 0, -1, "x", [], {}, True, 1.5e300, [1, "a"], {"type": 3}]


def _confuse(value: Any, rng: random.Random, depth: int = 0) -> Any:
    """The value with one field somewhere inside replaced by a value of another type."""
    if depth > 4 or not isinstance(value, dict | list) or not value or rng.random() < 0.25:
        return rng.choice(VALUES)
    value = dict(value) if isinstance(value, dict) else list(value)
    key = rng.choice(list(value)) if isinstance(value, dict) else rng.randrange(len(value))
    value[key] = _confuse(value[key], rng, depth + 1)
    return value


def _mutate(data: bytes, how: str, seed: int) -> bytes:
    rng = random.Random(seed)
    lines = data.split(b"\n")
    if how == "truncate":
        return data[: rng.randrange(1, len(data))]
    if how == "reorder":
        rng.shuffle(lines)
        return b"\n".join(lines)
    if len([line for line in lines if line.strip()]) == 1 or data.lstrip().startswith(b"{\n"):  # one JSON document
        return orjson.dumps(_confuse(orjson.loads(data), rng))
    i = rng.choice([n for n, line in enumerate(lines) if line.strip()])
    lines[i] = orjson.dumps(_confuse(orjson.loads(lines[i]), rng))
    return b"\n".join(lines)


POSITION = re.compile(r"^bench-file\.[a-z]+:(\d+|messages(\[\d+\])?)")


@settings(max_examples=40, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fmt=st.sampled_from(list(REAL)), how=st.sampled_from(["truncate", "reorder", "confuse"]), seed=st.integers(0, 10**6))
def test_mutated_files_give_clean_errors_or_an_accounted_read(fmt, how, seed):
    original = REAL[fmt].read_bytes()
    data = _mutate(original, how, seed)
    name = f"bench-file.{REAL[fmt].suffix.lstrip('.')}"
    events, bad, used = read_events(data, name, fmt)  # never raises: every failure is a BadRecord
    assert used == fmt
    for record in bad:
        assert POSITION.match(str(record)), str(record)
        assert "\n" not in str(record) and "Traceback" not in str(record)
    for event in events:
        assert getattr(event, "status", None) != "running"


def test_a_truncated_transcript_is_refused_in_one_line_and_nothing_is_stored(tmp_path, monkeypatch):
    data = REAL["claude_code"].read_bytes()
    cut = tmp_path / "session.jsonl"
    cut.write_bytes(data[: data.index(b"\n", len(data) // 2) + 40])  # half-way through a line
    line = data[: data.index(b"\n", len(data) // 2) + 40].count(b"\n") + 1
    env = {"AGENT_REPLAY_DB_URL": f"sqlite:///{tmp_path / 'cli.db'}", "COLUMNS": "200"}

    def run(*args):  # the command as a user runs it, in this process
        return run_program(monkeypatch, args, env)

    proc = run("import", str(cut))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    first, summary = proc.stderr.strip().splitlines()  # the bad record, then what was done with the file
    assert first.startswith(f"{cut}:{line}: invalid JSON") and "nothing stored" in summary
    assert orjson.loads(run("sessions", "--json").stdout) == []
    partial = orjson.loads(run("import", str(cut), "--skip-bad", "--json").stdout)
    assert partial["steps"] > 0 and partial["errors"][0].startswith(f"{cut}:{line}:")

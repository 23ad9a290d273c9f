"""Cline's `api_conversation_history.json` (tests/fixtures/cline/README.md): Anthropic-shaped messages, read
by the anthropic reader, with Cline's own `ts`, `modelInfo.modelId` and `metrics.tokens` taken as the steps'
time, model and tokens instead of being left in metadata."""

from __future__ import annotations

from conftest import FIXTURES
from reader_checks import reimport_changes_nothing

from replay_core.ingest.pipeline import import_file

CLINE = FIXTURES / "cline/api_conversation_history.first12.json"


def test_clines_times_model_and_tokens_are_step_fields(sqlite_store):
    report = import_file(sqlite_store, CLINE)
    (acc,) = report.files
    assert acc["format"] == "anthropic" and acc["used"] == acc["records"] == 12
    (sid,) = report.sessions
    session, steps = sqlite_store.get_session(sid), sqlite_store.load_steps(sid)
    assert session["model"] == "claude_4_5_opus"
    assert session["started_at"].isoformat() == "2026-04-24T23:26:00.794000+00:00"
    assert all(s.timestamp is not None for s in steps)
    assert next(s for s in steps if s.tokens_in).tokens_in == 10049  # the first answer's metrics.tokens.prompt
    assert not any({"ts", "modelInfo", "metrics"} & set(s.metadata or {}) for s in steps)
    assert {s.model for s in steps if s.type in ("think", "decision", "tool_call")} == {"claude_4_5_opus"}


def test_reimport_changes_nothing(sqlite_store):
    reimport_changes_nothing(sqlite_store, CLINE)

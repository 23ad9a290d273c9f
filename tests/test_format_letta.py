"""Letta agent files, both schemas (real files of letta-ai/agent-file), and the generic chat reader taking
each message's own `model` and time as its steps' fields. Sources: tests/fixtures/letta/README.md."""

from __future__ import annotations

from collections import Counter

import orjson
from conftest import FIXTURES
from reader_checks import claims_no_other_fixture

from replay_core.ingest.formats import candidates, letta
from replay_core.ingest.pipeline import import_file, read_events
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig

OLD = FIXTURES / "letta/memgpt_agent_with_convo.af"
NEW = FIXTURES / "letta/loop.af"


def test_the_first_schema_is_a_run_with_model_times_and_agent_name(sqlite_store):
    report = import_file(sqlite_store, OLD)
    (acc,) = report.files
    assert (acc["format"], acc["records"], acc["used"], acc["unit"]) == ("letta", 91, 91, "messages")
    (sid,) = report.sessions
    session, steps = sqlite_store.get_session(sid), sqlite_store.load_steps(sid)
    assert (session["name"], session["agent_id"], session["model"]) == ("memgpt_agent", "memgpt_agent", "gpt-4-0613")
    assert len(steps) == 119 and all(s.timestamp is not None for s in steps)
    assert session["started_at"].isoformat().startswith("2025-04-01T03:47:27")
    assert all(s.model == "gpt-4-0613" for s in steps if s.type in ("think", "decision"))
    assert not any("created_at" in (s.metadata or {}) or "model" in (s.metadata or {}) for s in steps)
    kinds = Counter(s.type for s in steps)
    assert kinds["tool_call"] == kinds["tool_result"] == 28 and kinds["input"] == 35
    letta_meta = session["metadata"]["letta"]
    assert letta_meta["memory_blocks"] == ["persona", "human"] and "send_message" in letta_meta["tools"]
    assert "Bootup sequence" not in str(session["metadata"])  # configuration by name, never the messages again


def test_the_agents_schema_is_read_too(sqlite_store):
    (sid,) = import_file(sqlite_store, NEW).sessions
    session, steps = sqlite_store.get_session(sid), sqlite_store.load_steps(sid)
    assert (session["name"], session["model"]) == ("Loop", "claude-sonnet-4-5-20250929")
    assert [s.type for s in steps] == ["input", "tool_call", "tool_result"]
    assert steps[1].tool_name == "send_message" and steps[1].model == "claude-sonnet-4-5-20250929"
    assert steps[1].timestamp.isoformat().startswith("2026-01-22T02:06:3")


def test_reimport_changes_nothing_and_a_null_replay_reproduces(sqlite_store):
    first = import_file(sqlite_store, OLD)
    again = import_file(sqlite_store, OLD)
    assert again.steps == 0 and again.duplicates == first.steps == 119
    result = replay(sqlite_store, first.sessions[0], None, None, ReplayConfig(model="recorded"))
    assert result.outcome == "completed" and result.first_divergence is None


def test_the_generic_chat_reader_promotes_each_messages_model_and_time(sqlite_store):
    doc = orjson.loads(OLD.read_bytes())
    messages = [
        {"role": m["role"], **{k: m[k] for k in ("content", "tool_calls", "tool_call_id", "model", "created_at") if m.get(k)}}
        for m in doc["messages"]
    ]
    events, bad, fmt = read_events(orjson.dumps(messages), "chat.json")
    steps = [e for e in events if getattr(e, "kind", None) == "step"]
    assert fmt == "openai_chat" and not bad and len(steps) == 119
    assert all(s.timestamp is not None for s in steps)
    assert {s.model for s in steps if s.type in ("think", "decision")} == {"gpt-4-0613"}
    assert not any({"model", "created_at"} & set(s.metadata or {}) for s in steps)
    (session,) = [e for e in events if getattr(e, "kind", None) == "session"]
    assert session.model == "gpt-4-0613" and session.started_at.isoformat().startswith("2025-04-01T03:47:27")


def test_claims_nothing_else():
    claims_no_other_fixture(letta.FORMAT, "letta")
    plain = orjson.dumps({"messages": [{"role": "user", "content": "hi"}], "model": "m"})
    assert letta.FORMAT not in candidates(plain, "chat.json")

"""Goose sessions as goose 1.39.0 exported them itself (`goose session export --format json`; real files from
srjn45/warden, tests/fixtures/goose/README.md): messages, a tool call and its result, the model and the
session's usage; the older JSONL layout; what the reader must not claim."""

from __future__ import annotations

import orjson
import pytest
from conftest import FIXTURES
from reader_checks import claims_no_other_fixture, reimport_changes_nothing

from replay_core.ingest.formats import candidates, goose
from replay_core.ingest.pipeline import ImportRejected, import_bytes, import_file
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig

TOOL = FIXTURES / "goose/export-session.json"  # llama3.2:3b calling the developer extension's `write`
TEXT = FIXTURES / "goose/export-text.json"  # qwen2.5-coder:3b answering a call as fenced text


def _one(store, path):
    report = import_file(store, path)
    (sid,) = report.sessions
    return report.files[0], store.get_session(sid), store.load_steps(sid)


def test_an_export_is_its_messages_with_the_call_result_model_and_times(sqlite_store):
    acc, session, steps = _one(sqlite_store, TOOL)
    assert (acc["format"], acc["records"], acc["used"], acc["unit"]) == ("goose", 5, 5, "the session and each message")
    assert [s.type for s in steps] == ["input", "tool_call", "tool_result", "decision"]
    call, result = steps[1], steps[2]
    assert (call.tool_name, call.tool_args, call.tool_call_id) == (
        "write",
        {"content": "hello", "path": "/tmp/greeting.txt"},
        "call_mqu1qxwk",
    )
    assert call.metadata["_meta"] == {"goose_extension": "developer"}
    assert (result.tool_name, result.tool_call_id, result.status) == ("write", "call_mqu1qxwk", "ok")
    assert result.content == "Created /tmp/greeting.txt (1 lines)"
    assert [s.model for s in steps] == [None, "llama3.2:3b", None, "llama3.2:3b"]  # the model wrote the call and answer
    assert steps[0].timestamp.isoformat() == "2026-06-28T09:29:48+00:00"  # created 1782638988, epoch seconds
    assert (session["name"], session["model"], session["agent_id"]) == ("wt-llama", "llama3.2:3b", "goose")
    assert session["started_at"].isoformat() == "2026-06-28T09:29:48+00:00"
    assert session["ended_at"].isoformat() == "2026-06-28T09:30:04+00:00"  # the last message
    assert session["metadata"]["goose"]["updated_at"] == "2026-06-28T09:30:11Z"
    meta = session["metadata"]  # the session's accumulated usage: the run's totals, on no step
    assert (meta["tokens_in"], meta["tokens_out"]) == (5464, 157) and "totals" in meta
    assert not any(s.tokens_in or s.tokens_out for s in steps)
    assert (meta["goose"]["id"], meta["goose"]["provider_name"], meta["goose"]["goose_mode"]) == ("20260628_3", "ollama", "auto")
    assert session["status"] == "unknown"  # an export does not say how the session ended


def test_an_export_without_accumulated_usage_takes_its_usage(sqlite_store):
    acc, session, steps = _one(sqlite_store, TEXT)
    assert (acc["records"], acc["used"]) == (3, 3)
    assert [(s.type, s.model) for s in steps] == [("input", None), ("decision", "qwen2.5-coder:3b")]
    assert steps[1].content.startswith('```json\n{\n  "name": "write"')  # a call written as text stays text
    assert (session["metadata"]["tokens_in"], session["metadata"]["tokens_out"]) == (3930, 110)


def _legacy_jsonl(path) -> bytes:
    """The export's messages in the layout Goose wrote before sessions.db (crates/goose/src/session/legacy.rs
    reads it): a metadata line, then a message per line. Built here from the real export: no Goose JSONL
    session file was found in a public repository."""
    doc = orjson.loads(path.read_bytes())
    meta = {"working_dir": doc["working_dir"], "description": "greeting file", "message_count": 4, "total_tokens": 1604}
    meta |= {"input_tokens": 1472, "output_tokens": 132, "accumulated_input_tokens": 5464, "accumulated_output_tokens": 157}
    return b"\n".join(orjson.dumps(m) for m in [meta, *doc["conversation"]]) + b"\n"


def test_the_older_jsonl_reads_as_the_export_does(sqlite_store):
    report = import_bytes(sqlite_store, _legacy_jsonl(TOOL), "20250301_1.jsonl")
    (acc,), (sid,) = report.files, report.sessions
    assert (acc["format"], acc["records"], acc["used"]) == ("goose", 5, 5)
    session, steps = sqlite_store.get_session(sid), sqlite_store.load_steps(sid)
    assert [s.type for s in steps] == ["input", "tool_call", "tool_result", "decision"]
    assert session["name"] == "greeting file" and session["model"] is None  # the metadata line names no model
    assert (session["metadata"]["tokens_in"], session["metadata"]["tokens_out"]) == (5464, 157)
    assert session["started_at"].isoformat() == "2026-06-28T09:29:48+00:00"


def test_an_older_jsonl_without_its_metadata_line_is_read_too(sqlite_store):
    """legacy.rs reads a first line that is a message as a message: so does the reader."""
    lines = _legacy_jsonl(TOOL).split(b"\n", 1)[1]
    report = import_bytes(sqlite_store, lines, "20250301_2.jsonl")
    (acc,), (sid,) = report.files, report.sessions
    assert (acc["format"], acc["records"], acc["used"]) == ("goose", 4, 4)
    session = sqlite_store.get_session(sid)
    assert session["name"] == "Create greeting.txt containing the word hello"  # no name: the first input
    assert "tokens_in" not in session["metadata"]


def _request(call_id: str, name: str, args: dict) -> dict:
    return {"type": "toolRequest", "id": call_id, "toolCall": {"status": "success", "value": {"name": name, "arguments": args}}}


def _response(call_id: str, result: dict) -> dict:
    return {"type": "toolResponse", "id": call_id, "toolResult": result}


def test_an_older_tool_result_list_and_a_failed_call_are_read(sqlite_store):
    """Before MCP results, `toolResult.value` was the content list itself; an error is `status: error`."""
    lines = [
        {"working_dir": "/w", "description": "notion", "message_count": 3},
        {"role": "user", "created": 1745363226, "content": [{"type": "text", "text": "Find the models database"}]},
        {
            "role": "assistant",
            "created": 1745363236,
            "content": [
                {"type": "text", "text": "Searching."},
                _request("t1", "notion__search", {"q": "models"}),
                _request("t2", "notion__get", {}),
            ],
        },
        {
            "role": "user",
            "created": 1745363237,
            "content": [
                _response("t1", {"status": "success", "value": [{"type": "text", "text": "1 database"}]}),
                _response("t2", {"status": "error", "error": "Execution failed: no id"}),
            ],
        },
        {"mystery": 1},
    ]
    report = import_bytes(sqlite_store, b"\n".join(map(orjson.dumps, lines)), "old.jsonl")
    (acc,), (sid,) = report.files, report.sessions
    assert (acc["records"], acc["used"], acc["ignored"]) == (5, 4, {"keys mystery": 1})
    steps = sqlite_store.load_steps(sid)
    assert [s.type for s in steps] == ["input", "think", "tool_call", "tool_call", "tool_result", "tool_result"]
    ok, failed = steps[4], steps[5]
    assert (ok.tool_name, ok.content, ok.status) == ("notion__search", "1 database", "ok")
    assert (failed.tool_name, failed.content, failed.status) == ("notion__get", "Execution failed: no id", "error")


def test_reimport_changes_nothing_and_a_null_replay_reproduces(sqlite_store):
    reimport_changes_nothing(sqlite_store, TOOL)
    (sid,) = import_file(sqlite_store, TEXT).sessions
    for session_id in (sid, *import_file(sqlite_store, TOOL).sessions):
        result = replay(sqlite_store, session_id, None, None, ReplayConfig(model="recorded"))
        assert result.outcome == "completed" and result.first_divergence is None


@pytest.mark.parametrize("cut", [1200, 2000, 3000])
def test_a_truncated_export_is_refused_with_its_place(sqlite_store, cut):
    with pytest.raises(ImportRejected) as err:
        import_bytes(sqlite_store, TOOL.read_bytes()[:cut], "cut.json")
    assert "cut.json:" in str(err.value)
    assert not sqlite_store.list_sessions()


def test_claims_nothing_else():
    claims_no_other_fixture(goose.FORMAT, "goose")
    assert goose.FORMAT in candidates(TOOL.read_bytes(), TOOL.name)
    assert not goose.FORMAT.sniff(b'{"working_dir": "/w", "command": "ls"}\n{"x": 1}\n', "jobs.jsonl")
    assert not goose.FORMAT.sniff(b'[{"role": "user", "content": "hi"}]', "chat.json")

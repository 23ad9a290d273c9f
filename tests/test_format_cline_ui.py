"""Cline's `ui_messages.json` (tests/fixtures/cline/README.md: the first 18 and 61 messages of a real task,
CoreGems/Cline-Xray ui_messages.json @ 94013f8a): each API request's tokens and cost on the model step that
answers it, times and model on every step, tools and commands as calls, the completion as the outcome; what
the reader must not claim."""

from __future__ import annotations

from collections import Counter

import orjson
import pytest
from conftest import FIXTURES
from reader_checks import claims_no_other_fixture, reimport_changes_nothing

from replay_core.ingest.formats import candidates, cline_ui
from replay_core.ingest.pipeline import import_bytes, import_file
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig

FIRST18 = FIXTURES / "cline/ui_messages.first18.json"
FIRST61 = FIXTURES / "cline/ui_messages.first61.json"
MODEL = "claude-opus-4-5-20251101"


def test_a_task_up_to_its_completion_is_one_succeeded_run_with_tokens_cost_and_times(sqlite_store):
    report = import_file(sqlite_store, FIRST18)
    (acc,) = report.files
    assert (acc["format"], acc["records"], acc["used"], acc["unit"]) == ("cline_ui", 18, 11, "UI messages")
    assert acc["ignored"] == {"say=checkpoint_created": 3, "say=task_progress": 3, "ask=completion_result": 1}
    (sid,) = report.sessions
    session, steps = sqlite_store.get_session(sid), sqlite_store.load_steps(sid)
    assert session["model"] == MODEL and session["agent_id"] == "cline"
    assert session["name"].startswith("in my jiras->list UI")
    assert session["started_at"].isoformat() == "2026-02-07T16:41:10.358000+00:00"
    assert session["status"] == "succeeded" and session["outcome"].startswith('Added an "Open in Jira" button')
    assert [s.type for s in steps] == ["input", "think", "tool_call", "think", "decision", "tool_call", "think", "decision"]
    assert all(s.timestamp is not None for s in steps)
    assert {s.model for s in steps if s.type != "input"} == {MODEL}
    calls = [s for s in steps if s.tokens_in]
    # first request: tokensIn 10 + cacheWrites 5131 + cacheReads 6372; tokensOut 275; cost 0.04217975
    assert [(s.tokens_in, s.tokens_out) for s in calls] == [(11513, 275), (14613, 1203), (19167, 332)]
    assert [s.cost_usd for s in calls] == pytest.approx([0.04217975, 0.0552515, 0.044114])
    assert calls[0].metadata["usage"] == {
        "tokensIn": 10,
        "tokensOut": 275,
        "cacheWrites": 5131,
        "cacheReads": 6372,
        "cost": 0.04217975,
    }
    assert calls[0].metadata["request"].startswith("<task>\nin my jiras")
    tools = [s for s in steps if s.type == "tool_call"]
    assert [t.tool_name for t in tools] == ["readFile", "editedExistingFile"]
    assert tools[0].tool_args["path"] == "src/modules/jira-details/JiraDetailsPanel.svelte"


def test_feedback_reopens_the_task_and_a_command_pairs_with_its_output(sqlite_store):
    report = import_file(sqlite_store, FIRST61)
    (acc,) = report.files
    assert acc["records"] == 61 and acc["used"] == 61 - 21 and not acc.get("bad")
    (sid,) = report.sessions
    session, steps = sqlite_store.get_session(sid), sqlite_store.load_steps(sid)
    assert session["status"] == "unknown" and session["outcome"] is None  # the feedback after the completion reopened it
    assert Counter(s.type for s in steps) == {"input": 2, "think": 10, "decision": 8, "tool_call": 9, "tool_result": 1}
    assert [s.content for s in steps if s.type == "input"][1] == "click on new button does nothing"
    (command,) = [s for s in steps if s.tool_name == "execute_command" and s.type == "tool_call"]
    (output,) = [s for s in steps if s.type == "tool_result"]
    assert command.tool_args == {"command": "cd d:\\Users\\obuzunov\\myg\\jira-dashboard && npm install @tauri-apps/plugin-shell"}
    assert output.tool_call_id == command.tool_call_id and "added 1 package" in output.content
    assert sum(1 for s in steps if s.cost_usd) == 10  # one per api_req_started


def test_an_unanswered_or_failed_request_and_an_error_are_stated_not_guessed(sqlite_store):
    msgs = orjson.loads(FIRST18.read_bytes())[:3]  # task, checkpoint, a request nothing answered
    msgs.append(
        {
            "ts": 1770482490000,
            "type": "say",
            "say": "api_req_started",
            "text": orjson.dumps({"cancelReason": "streaming_failed", "streamingFailedMessage": "overloaded"}).decode(),
        }
    )
    msgs.append(
        {
            "ts": 1770482491000,
            "type": "say",
            "say": "error",
            "text": "Cline tried to use write_to_file without value for required parameter",
        }
    )
    msgs.append({"ts": 1770482492000, "type": "say", "say": "hologram", "text": "?"})
    report = import_bytes(sqlite_store, orjson.dumps(msgs), "ui.json")
    (acc,), (sid,) = report.files, report.sessions
    assert acc["ignored"] == {"say=checkpoint_created": 1, "say=hologram": 1}
    steps = sqlite_store.load_steps(sid)
    assert [(s.type, s.status) for s in steps] == [("input", "ok"), ("think", "ok"), ("error", "error"), ("error", "error")]
    assert steps[1].content is None and steps[1].tokens_in == 11513  # the unanswered request keeps its tokens
    assert steps[2].content == "overloaded" and steps[2].error_class == "streaming_failed"
    assert sqlite_store.get_session(sid)["status"] == "failed"


@pytest.mark.parametrize("path", [FIRST18, FIRST61], ids=lambda p: p.name)
def test_reimport_changes_nothing(sqlite_store, path):
    reimport_changes_nothing(sqlite_store, path)


def test_null_replay_reproduces_a_task(sqlite_store):
    (sid,) = import_file(sqlite_store, FIRST61).sessions
    result = replay(sqlite_store, sid, None, None, ReplayConfig(model="recorded"))
    assert result.outcome == "completed" and result.first_divergence is None
    assert result.steps == sqlite_store.get_session(sid)["steps"]


def test_claims_nothing_else():
    """No other fixture (Cline's own api_conversation_history.json included) is taken for a UI log; nor is a
    list of objects with `ts` and `type` that are not say/ask messages."""
    claims_no_other_fixture(cline_ui.FORMAT, "cline")
    history = (FIXTURES / "cline/api_conversation_history.first12.json").read_bytes()
    assert not cline_ui.FORMAT.sniff(history[:65536], "api_conversation_history.json")
    lookalike = orjson.dumps([{"ts": 1, "type": "reading", "value": 3}])
    assert cline_ui.FORMAT not in candidates(lookalike, "sensor.json")

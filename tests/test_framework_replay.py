"""Replays of every agent framework's captured run (tests/fixtures/frameworks): a null replay
(`replay --model recorded`) and a live replay through litellm against the local fake OpenAI
server, scripted to give the recorded answers, both report no divergence; and at every model
step, the context shown is what a replay from there sends (tests/test_context_equals_replay.py).
"""

from __future__ import annotations

import pytest
from framework_captures import captures, post
from openai_server import OpenAIServer, Reply
from test_context_equals_replay import check_every_model_step

from replay_core.whatif.recording import split_turns
from replay_core.whatif.replay import ReplayError, replay
from replay_core.whatif.replay_config import ReplayConfig


def model_runs(store, name: str) -> list[str]:
    """The stored runs that hold a model turn (a set-up trace without one has nothing to replay);
    every capture has one at least."""
    runs = [s["id"] for s in store.list_sessions(limit=50) if split_turns(store.load_steps(s["id"]))[1]]
    assert runs, f"{name}: no stored run holds a model turn"
    return runs


def recorded_answers(server: OpenAIServer, store, sid: str) -> list[Reply]:
    """What the model answered at each turn of the recording, as the fake server's replies: the
    turn's tool calls (with its thought's text, if any), else its text."""
    replies = []
    for turn in split_turns(store.load_steps(sid))[1]:
        text = "\n".join(s.content for s in turn.steps if s.type != "tool_call" and s.content) or None
        calls = [(s.tool_name or "", s.tool_args) for s in turn.calls]
        replies.append(server.tool_calls(*calls, content=text) if calls else server.text(text or ""))
    return replies


@pytest.fixture(scope="module")
def server():
    with OpenAIServer() as srv:
        srv.default = srv.text("A different answer.")
        yield srv


@pytest.mark.parametrize("name", captures())
def test_a_null_replay_of_every_framework_run_does_not_diverge(sqlite_store, name):
    post(sqlite_store, name)
    runs = model_runs(sqlite_store, name)
    for sid in runs:
        result = replay(sqlite_store, sid, None, None, ReplayConfig(model="recorded"))
        assert (result.outcome, result.first_divergence) == ("completed", None), (name, result.message)
        assert result.steps == sqlite_store.get_session(sid)["steps"]


@pytest.mark.parametrize("name", captures())
def test_a_live_replay_given_the_recorded_answers_does_not_diverge(sqlite_store, server, name):
    post(sqlite_store, name)
    runs = model_runs(sqlite_store, name)
    config = ReplayConfig(model="openai/fake-model", api_base=server.base_url, backoff_s=0.01, request_timeout_s=5.0)
    for sid in runs:
        server.replies.clear()
        server.script(*recorded_answers(server, sqlite_store, sid))
        result = replay(sqlite_store, sid, None, None, config)
        assert result.first_divergence is None, (name, result.first_divergence)
        assert result.outcome in ("completed", "final_answer"), (name, result.message)


@pytest.mark.parametrize("name", captures())
def test_the_context_at_every_model_step_is_what_a_replay_sends(sqlite_store, server, name):
    post(sqlite_store, name)
    runs = model_runs(sqlite_store, name)
    try:
        checked = sum(check_every_model_step(sqlite_store, sid, server) for sid in runs)
    except ReplayError as exc:
        pytest.fail(f"{name}: {exc}")
    assert checked > 0

"""One model call opened, edited and asked again (replay_core/whatif/playground.py), against the scripted
OpenAI-compatible server, on both databases."""

from __future__ import annotations

import pytest
from openai_server import OpenAIServer

from replay_core.storage.store import SessionFilter
from replay_core.understand.compare import compare
from replay_core.understand.timeline import open_timeline
from replay_core.whatif.playground import (
    TAG,
    answer_view,
    open_call,
    problems,
    run_call,
    with_system_prompt,
)
from replay_core.whatif.replay import ReplayError
from replay_core.whatif.replay_config import PROVIDER_KEYS, ReplayConfig

FLIGHT = "demo-08-flight-bos-sfo-a"


@pytest.fixture
def server():
    with OpenAIServer() as srv:
        yield srv


def live(server: OpenAIServer) -> ReplayConfig:
    return ReplayConfig(model="openai/fake-model", api_base=server.base_url, backoff_s=0.01, request_timeout_s=5.0)


def test_a_call_opens_with_the_messages_the_model_was_sent_and_its_recorded_answer(demo):
    call = open_call(demo, FLIGHT, 6)  # the search call: its turn is the thought at 5 and the call at 6
    assert (call.from_step, call.to_step, [s.seq for s in call.answer]) == (5, 6, [5, 6])
    assert [m["role"] for m in call.messages] == ["system", "user", "assistant", "tool"]
    assert call.system_prompt.startswith("You are a travel assistant.")
    assert call.context_source == "recorded at step 2"
    assert call.model == "gpt-4o"
    seen = answer_view(call.answer)
    assert seen["text"].startswith("Origin BOS") and [name for name, _ in seen["calls"]] == ["search_flights"]


@pytest.mark.parametrize(("seq", "words"), [(7, "is a tool result, not a model's output"), (99, "has no step 99")])
def test_a_step_that_is_no_model_output_cannot_be_opened(demo, seq, words):
    with pytest.raises(ReplayError, match=words):
        open_call(demo, FLIGHT, seq)


def test_edited_messages_are_asked_once_and_stored_as_a_one_turn_replay(demo, server):
    call = open_call(demo, FLIGHT, 11)  # the final answer
    server.script(server.text("Take the Alaska nonstop."), server.text("a second call would be a bug"))
    edited = with_system_prompt(call.messages, "Answer in five words.")
    edited[1] = {**edited[1], "content": "Cheapest nonstop only, please."}
    ran = run_call(demo, call, edited, live(server))
    assert len(server.requests) == 1  # once
    sent = server.requests[0]["messages"]
    assert sent[0] == {"role": "system", "content": "Answer in five words."}
    assert sent[1]["content"] == "Cheapest nonstop only, please."
    assert len(sent) == len(call.messages)
    assert answer_view(ran.answer)["text"] == "Take the Alaska nonstop."
    assert ran.result.model_calls == 1
    # a replay like any other: its source, its range, its tag; the timeline and Compare open it
    session = demo.get_session(ran.result.session)
    assert (session["replay_of"], session["replay_from"], session["replay_to"]) == (FLIGHT, 11, 11)
    assert TAG in session["tags"] and "replay" in session["tags"]
    [answer] = open_timeline(demo, ran.result.session).steps
    assert (answer.seq, answer.type) == (11, "decision")
    assert demo.step_context(ran.result.session, answer.event_id) == sent  # what was sent is kept with the answer
    assert compare(demo, FLIGHT, ran.result.session).first_divergence is not None
    assert ran.result.session in {r["id"] for r in demo.list_sessions(SessionFilter(replay_of=FLIGHT))}


def test_a_call_answered_with_other_tool_calls_is_still_asked_once(demo, server):
    call = open_call(demo, FLIGHT, 6)
    again = server.text("a second call would be a bug")
    server.script(server.tool_calls(("get_traveler_profile", {"traveler_id": "self"})), again)
    ran = run_call(demo, call, call.messages, live(server))
    assert len(server.requests) == 1
    assert [name for name, _ in answer_view(ran.answer)["calls"]] == ["get_traveler_profile"]


def test_a_provider_error_is_the_answer_named(demo, server):
    call = open_call(demo, FLIGHT, 11)
    server.script(server.error(500, "the model fell over"))
    ran = run_call(demo, call, call.messages, live(server))
    assert ran.result.outcome == "provider_error"
    assert "the model fell over" in answer_view(ran.answer)["error"]


def test_a_missing_key_is_said_before_anything_runs_with_its_fix(demo, monkeypatch):
    for name in (*PROVIDER_KEYS, "AGENT_REPLAY_API_BASE", "AGENT_REPLAY_API_KEY_ENV"):
        monkeypatch.delenv(name, raising=False)
    call = open_call(demo, FLIGHT, 11)
    before = len(demo.list_sessions(SessionFilter(replay_of=FLIGHT)))
    config = ReplayConfig(model="openai/gpt-4o-mini")
    [problem] = problems(config)
    assert "No credentials for openai" in problem and "export OPENAI_API_KEY=" in problem
    with pytest.raises(ReplayError, match="OPENAI_API_KEY"):
        run_call(demo, call, call.messages, config)
    assert len(demo.list_sessions(SessionFilter(replay_of=FLIGHT))) == before  # nothing stored


def test_the_run_s_own_answers_are_no_model_to_ask():
    assert problems(ReplayConfig(model="recorded")) == [
        "The run's own answer is the recorded one shown beside it: pick a live model to ask."
    ]

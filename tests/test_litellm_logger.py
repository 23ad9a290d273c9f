"""The litellm logger: real litellm calls (mock_response, and a scripted OpenAI-compatible server
on 127.0.0.1), sync and async, recorded into a real database; the test waits for them to land."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time

import pytest
from conftest import REPO
from openai_server import OpenAIServer

from replay_core.sdk.recorder import Recorder
from replay_core.storage.store import Store

MESSAGES = [{"role": "system", "content": "You are a support agent."}, {"role": "user", "content": "Where is order A-17?"}]


@pytest.fixture(scope="module")
def litellm():
    """litellm, imported by the tests that call it and not at collection: its import takes seconds of CPU,
    and every pytest-xdist worker collects this module."""
    import litellm

    return litellm


@pytest.fixture
def recorder(store, tmp_path, litellm):
    rec = Recorder(store.url, spool_dir=str(tmp_path / "spool"), flush_interval=0.05)
    logger = rec.litellm_logger()
    litellm.callbacks = [logger]
    yield rec
    litellm.callbacks = []
    rec.close(settle=0)


@pytest.fixture
def server():
    with OpenAIServer() as s:
        yield s


def landed(store: Store, sid: str, count: int, timeout: float = 15.0) -> list:
    """The session's steps once `count` of them are stored (hooks run later, on other threads)."""
    deadline = time.monotonic() + timeout
    while True:
        steps = store.load_steps(sid)
        if len(steps) >= count or time.monotonic() > deadline:
            return steps
        time.sleep(0.05)


def call(server: OpenAIServer, **kwargs):
    import litellm

    return litellm.completion(
        model="openai/fake", api_base=server.base_url, api_key="x", messages=MESSAGES, max_retries=0, **kwargs
    )


def acall(server: OpenAIServer, **kwargs):
    import litellm

    return litellm.acompletion(
        model="openai/fake", api_base=server.base_url, api_key="x", messages=MESSAGES, max_retries=0, **kwargs
    )


def test_mock_response_is_a_decision_with_tokens_cost_and_context(store, recorder, litellm):
    with recorder.session("mock") as run:
        litellm.completion(model="gpt-4o", messages=MESSAGES, mock_response="It ships tomorrow.")
    [step] = landed(store, run.id, 1)
    assert (step.seq, step.type, step.content, step.model, step.tokens_in, step.tokens_out) == (
        1,
        "decision",
        "It ships tomorrow.",
        "gpt-4o",
        10,
        20,
    )
    assert step.cost_usd == pytest.approx(10 * 2.5e-6 + 20 * 1e-5)  # gpt-4o's price in litellm's local map
    assert step.metadata["finish_reason"] == "stop"
    assert step.duration_ms >= 0
    assert store.step_context(run.id, step.event_id) == MESSAGES


def test_a_mocked_failure_is_an_error_step(store, recorder, litellm):
    with recorder.session("mock failure") as run:
        with pytest.raises(litellm.InternalServerError):
            litellm.completion(model="gpt-4o", messages=MESSAGES, mock_response=Exception("provider exploded"))
    [step] = landed(store, run.id, 1)
    assert (step.type, step.status, step.error_class, step.model) == ("error", "error", "InternalServerError", "gpt-4o")
    assert "provider exploded" in step.content


def test_sync_calls_over_http_record_tool_calls_once_with_the_tool_results(store, recorder, server, litellm):
    @recorder.tool
    def lookup_order(order_id: str) -> dict:
        return {"order": order_id, "status": "shipped"}

    server.script(
        server.tool_calls(("lookup_order", {"order_id": "A-17"}), content="Let me look it up."),
        server.text("Order A-17 has shipped."),
        server.error(429, "slow down", kind="rate_limit_error"),
    )
    with recorder.session("support", agent_id="support-bot") as run:
        reply = call(server, tools=[{"type": "function", "function": {"name": "lookup_order", "parameters": {}}}])
        tool_call = reply.choices[0].message.tool_calls[0]
        lookup_order(**json.loads(tool_call.function.arguments))
        call(server)
        with pytest.raises(litellm.RateLimitError):
            call(server)
    steps = landed(store, run.id, 5)
    assert [(s.seq, s.type, s.content, s.tool_name, s.tool_args, s.tool_call_id) for s in steps] == [
        (1, "think", "Let me look it up.", None, None, None),
        (2, "tool_call", None, "lookup_order", {"order_id": "A-17"}, "call_0"),
        (3, "tool_result", '{"order":"A-17","status":"shipped"}', "lookup_order", None, "call_0"),
        (4, "decision", "Order A-17 has shipped.", None, None, None),
        (5, "error", steps[4].content, None, None, None),
    ]
    think, decision, error = steps[0], steps[3], steps[4]
    assert (think.model, think.tokens_in, think.tokens_out, think.cost_usd) == ("openai/fake", 30, 10, None)  # no price: unknown
    assert think.metadata["finish_reason"] == "tool_calls"
    assert think.metadata["model_parameters"]["tools"][0]["function"]["name"] == "lookup_order"
    assert (decision.tokens_in, decision.tokens_out) == (20, 5)
    assert (error.error_class, error.status) == ("RateLimitError", "error")
    assert "slow down" in error.content
    assert store.step_context(run.id, think.event_id) == MESSAGES
    assert len(server.requests) == 3


def test_async_calls_keep_their_place_before_steps_recorded_while_the_hook_waits(store, recorder, server, litellm):
    server.script(server.tool_calls(("search", {"q": "refund policy"})), server.text("Refunds take 5 days."), server.error(503))

    async def agent(run):
        await acall(server)
        run.observation("recorded before the async hook has run")  # the hook runs when the loop gets control
        await acall(server)
        with pytest.raises(litellm.ServiceUnavailableError):
            await acall(server)
        await asyncio.sleep(0.2)

    with recorder.session("async") as run:
        asyncio.run(agent(run))
    steps = landed(store, run.id, 5)
    assert [(s.seq, s.type, s.tool_name, s.error_class) for s in steps] == [
        (1, "think", None, None),
        (2, "tool_call", "search", None),
        (3, "observation", None, None),
        (4, "decision", None, None),
        (5, "error", None, "ServiceUnavailableError"),
    ]
    assert steps[3].content == "Refunds take 5 days."


def test_sync_hooks_on_the_thread_pool_never_reorder_steps(store, recorder, server):
    rounds = 15
    server.script(*[server.text(f"answer {i}") for i in range(rounds)])
    with recorder.session("race") as run:
        for i in range(rounds):
            call(server)
            run.observation(f"after {i}")
    steps = landed(store, run.id, 2 * rounds)
    assert [s.content for s in steps] == [x for i in range(rounds) for x in (f"answer {i}", f"after {i}")]
    assert [s.seq for s in steps] == list(range(1, 2 * rounds + 1))


def test_the_session_comes_from_metadata_else_the_current_one_else_nothing_is_recorded(store, recorder, server):
    server.script(server.text("one"), server.text("two"), server.text("three"), server.text("four"))
    call(server)  # no session open anywhere: not recorded
    first = recorder.session("first")
    second = recorder.session("second")
    with first:
        call(server, metadata={"agent_replay_session": second.id})
        with first.span("step") as span:
            call(server)
    call(server, metadata={"agent_replay_session": "opened-elsewhere"})
    first.end()
    second.end()
    assert [(s.type, s.content, s.parent_id) for s in landed(store, first.id, 2)] == [
        ("span", "step", None),
        ("decision", "three", span.event_id),
    ]
    assert [(s.seq, s.content) for s in landed(store, second.id, 1)] == [(1, "two")]
    assert [(s.seq, s.content) for s in landed(store, "opened-elsewhere", 1)] == [(1, "four")]
    assert store.count_sessions() == 3


def test_a_call_started_outside_any_run_stays_out_of_one_opened_before_its_hook_runs(store, recorder, server, monkeypatch):
    """litellm runs the sync success hook later, on its thread pool: here the first call's hook is
    held until a run is open (a CI run once saw that order by chance, and the call landed in the run)."""
    from replay_core.sdk.litellm_logger import ReplayLogger

    opened, finished, real = threading.Event(), threading.Event(), ReplayLogger._finished

    def late(self, kwargs, failed):
        assert opened.wait(10)
        real(self, kwargs, failed)
        finished.set()

    monkeypatch.setattr(ReplayLogger, "_finished", late)
    server.script(server.text("outside"), server.text("inside"))
    call(server)
    with recorder.session("opened-meanwhile") as run:
        opened.set()
        assert finished.wait(10)
        finished.clear()
        call(server)
        assert finished.wait(10)
    assert recorder.flush()
    assert [(s.seq, s.content) for s in landed(store, run.id, 1)] == [(1, "inside")]
    assert store.count_sessions() == 1


def test_importing_the_recorder_does_not_import_litellm():
    code = (
        "import sys, replay_core.sdk.recorder, replay_core.sdk.spool, replay_core.sdk.fallback; print('litellm' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert out.stdout.strip() == "False"

"""The Langfuse and LangSmith SDKs pointed at the served app with their own settings, as their users do:
the travel agent of scripts/capture_sdks/sdk_agents.py runs in its own process against a scripted model,
and its run is stored whole. The app is served by uvicorn in a thread of the test's process, with its own
Store: the SDK reaches it over HTTP all the same, and a second process would add only its start (seconds
of imports) per test.

On SQLite only: what these check is the SDKs' own requests and settings, which reach the database as any
request does. What the database does with them (a trace in several OTLP batches, a LangSmith run whose
start and end come in different requests, in either order) is checked on both databases by
test_otlp_batches.py (the OpenTelemetry SDK's batch exporter), test_otlp_order_rollups.py and
test_langsmith_runs.py (the LangSmith SDK's captured requests); a wrong key is refused before any read."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from api_thread import api_in_thread
from apptest_helpers import REPO
from openai_server import OpenAIServer

from replay_core.storage.store import Store

pytestmark = pytest.mark.parametrize("store", ["sqlite"], indirect=True)

TOKEN = "sdk-token-0000"
AGENT = REPO / "scripts" / "capture_sdks" / "sdk_agents.py"
ANSWER = "In Paris it is sunny and 21 °C, and the local time is 14:05."


def _run_agent(sdk: str, model: OpenAIServer, delay_s: float = 0.0, **env: str) -> str:
    """The agent's run; each model call held `delay_s`, to spread the run over several of the SDK's batches."""
    replies = [
        model.tool_calls(("get_weather", {"city": "Paris"}), usage=(120, 11)),
        model.tool_calls(("get_time", {"city": "Paris"}), usage=(220, 12)),
        model.text(ANSWER, usage=(320, 13)),
    ]
    for reply in replies:
        reply.delay_s = delay_s
    model.script(*replies)
    done = subprocess.run(
        [sys.executable, str(AGENT), sdk],
        env={**os.environ, "OPENAI_BASE_URL": model.base_url, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def _the_run(store: Store) -> tuple[dict, list]:
    [run] = store.list_sessions()
    return run, store.load_steps(run["id"])


def test_langfuse_sdk_with_langfuse_host_here(store):
    with api_in_thread(store.url, TOKEN) as base, OpenAIServer() as model:
        answer = _run_agent(
            "langfuse",
            model,
            LANGFUSE_HOST=base,
            LANGFUSE_PUBLIC_KEY="pk-lf-agent-replay",
            LANGFUSE_SECRET_KEY=TOKEN,  # the secret key is an API token of the app
            delay_s=0.6,
            OTEL_BSP_SCHEDULE_DELAY="300",  # the Langfuse exporter's batch delay: the run comes in several batches
        )
    assert answer == ANSWER
    run, steps = _the_run(store)
    assert (run["name"], run["status"], run["outcome"]) == ("travel_assistant", "succeeded", ANSWER)
    assert (run["tokens_in"], run["tokens_out"]) == (660, 36)
    assert sorted((s.type, s.tool_name or "") for s in steps) == sorted(
        [("span", ""), ("think", ""), ("think", ""), ("think", "")]
        + [("tool_call", "get_weather"), ("tool_result", "get_weather"), ("tool_call", "get_time"), ("tool_result", "get_time")]
    )
    assert [s.tool_args for s in steps if s.type == "tool_call"] == [{"city": "Paris"}] * 2


def test_langfuse_sdk_with_a_wrong_secret_key_stores_nothing(store):
    with api_in_thread(store.url, TOKEN) as base, OpenAIServer() as model:
        _run_agent("langfuse", model, LANGFUSE_HOST=base, LANGFUSE_PUBLIC_KEY="pk-lf-x", LANGFUSE_SECRET_KEY="not-a-token")
    assert store.list_sessions() == []


def test_langsmith_sdk_with_langsmith_endpoint_here(store):
    with api_in_thread(store.url, TOKEN) as base, OpenAIServer() as model:
        answer = _run_agent(
            "langsmith",
            model,
            LANGSMITH_ENDPOINT=base,
            LANGSMITH_API_KEY=TOKEN,
            LANGSMITH_TRACING="true",
            delay_s=0.6,  # the root's start and end go in different requests
        )
    assert answer == ANSWER
    run, steps = _the_run(store)
    assert (run["name"], run["status"], run["outcome"], run["source"]) == ("travel_assistant", "succeeded", ANSWER, "langsmith")
    assert (run["tokens_in"], run["tokens_out"]) == (660, 36)
    assert [(s.type, s.tool_name) for s in steps] == [
        ("span", None),
        ("think", None),
        ("tool_call", "get_weather"),
        ("tool_result", "get_weather"),
        ("think", None),
        ("tool_call", "get_time"),
        ("tool_result", "get_time"),
        ("decision", None),
    ]

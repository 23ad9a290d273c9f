"""The two-tool travel agent of tests/fixtures/frameworks (scripts/capture_frameworks/harness.py), traced by an
SDK pointed at Agent Replay with that SDK's own settings, as its users write it:
`python sdk_agents.py langfuse|langsmith`.

Environment: OPENAI_BASE_URL (an OpenAI-compatible model server), CAPTURE_VARIANT (`ok`; `thread`: the run's
metadata names a user and a thread; or `tool-error`:
get_time raises), and the SDK's own variables: LANGFUSE_HOST / LANGFUSE_PUBLIC_KEY / LANGFUSE_SECRET_KEY, or
LANGSMITH_ENDPOINT / LANGSMITH_API_KEY / LANGSMITH_TRACING. Prints the run's final answer.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "capture_frameworks"))
import harness  # noqa: E402


def langfuse_agent() -> str:
    from langfuse import get_client, observe
    from langfuse.openai import OpenAI

    client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=harness.API_KEY)
    tools = {
        "get_weather": observe(name="get_weather", as_type="tool")(harness.weather),
        "get_time": observe(name="get_time", as_type="tool")(harness.local_time),
    }

    @observe(name="travel_assistant", as_type="agent")
    def travel_assistant(question: str) -> str:
        return harness.tool_loop(client, lambda name, arguments, call_id: tools[name](**arguments))

    try:
        return travel_assistant(harness.QUESTION)
    finally:
        get_client().shutdown()


def langsmith_agent() -> str:
    import openai
    from langsmith import traceable
    from langsmith.run_trees import get_cached_client
    from langsmith.wrappers import wrap_openai

    client = wrap_openai(openai.OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=harness.API_KEY))
    tools = {
        "get_weather": traceable(name="get_weather", run_type="tool")(harness.weather),
        "get_time": traceable(name="get_time", run_type="tool")(harness.local_time),
    }

    @traceable(name="travel_assistant", run_type="chain")
    def travel_assistant(question: str) -> str:
        return harness.tool_loop(client, lambda name, arguments, call_id: tools[name](**arguments))

    # the `thread` variant names the run's user and conversation as LangSmith's docs say: metadata at the call
    extra = {"metadata": {"user_id": "customer-22", "thread_id": "support-7734"}} if harness.VARIANT == "thread" else {}
    try:
        return travel_assistant(harness.QUESTION, langsmith_extra=extra)
    finally:
        get_cached_client().flush()


if __name__ == "__main__":
    print({"langfuse": langfuse_agent, "langsmith": langsmith_agent}[sys.argv[1]]())

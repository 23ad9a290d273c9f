"""The two-tool travel agent of tests/fixtures/frameworks, traced by an SDK pointed at Agent Replay with that
SDK's own settings, as its users write it: `python sdk_agents.py langfuse|langsmith`.

Environment: OPENAI_BASE_URL (an OpenAI-compatible model server), VARIANT (`ok`, or `tool-error`: get_time
raises), MODEL_DELAY (seconds each model call is held, to spread a run over several of the SDK's batches),
and the SDK's own variables: LANGFUSE_HOST / LANGFUSE_PUBLIC_KEY / LANGFUSE_SECRET_KEY, or
LANGSMITH_ENDPOINT / LANGSMITH_API_KEY / LANGSMITH_TRACING. Prints the run's final answer.
"""

from __future__ import annotations

import json
import os
import sys
import time

QUESTION = "What is the weather in Paris, and what time is it there? Use the tools get_weather and get_time."
INSTRUCTIONS = "You are a concise travel assistant. Use the tools, then answer in one sentence."
TOOL_SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
    for name, description in (("get_weather", "Current weather in a city."), ("get_time", "Local time in a city."))
]


def weather(city: str) -> str:
    return f"Sunny, 21 °C in {city}"


def local_time(city: str) -> str:
    if os.environ.get("VARIANT") == "tool-error":
        raise RuntimeError(f"time service unavailable for {city}")
    return f"14:05 (CET) in {city}"


def tool_loop(client, tools: dict) -> str:
    """A hand-written agent loop: a failed tool is handed back to the model as an error message."""
    messages = [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": QUESTION}]
    for _ in range(5):
        time.sleep(float(os.environ.get("MODEL_DELAY", "0")))
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOL_SCHEMAS).choices[0]
        if not reply.message.tool_calls:
            return reply.message.content
        messages.append(reply.message.model_dump(exclude_none=True))
        for call in reply.message.tool_calls:
            try:
                result = tools[call.function.name](**json.loads(call.function.arguments))
            except Exception as error:
                result = f"Error: {type(error).__name__}: {error}"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise RuntimeError("no final answer after 5 model calls")


def langfuse_agent() -> str:
    from langfuse import get_client, observe
    from langfuse.openai import OpenAI

    client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="x")
    tools = {
        "get_weather": observe(name="get_weather", as_type="tool")(weather),
        "get_time": observe(name="get_time", as_type="tool")(local_time),
    }
    agent = observe(name="travel_assistant", as_type="agent")(lambda question: tool_loop(client, tools))
    try:
        return agent(QUESTION)
    finally:
        get_client().shutdown()


def langsmith_agent() -> str:
    import openai
    from langsmith import traceable
    from langsmith.run_trees import get_cached_client
    from langsmith.wrappers import wrap_openai

    client = wrap_openai(openai.OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="x"))
    tools = {
        "get_weather": traceable(name="get_weather", run_type="tool")(weather),
        "get_time": traceable(name="get_time", run_type="tool")(local_time),
    }
    agent = traceable(name="travel_assistant", run_type="chain")(lambda question: tool_loop(client, tools))
    try:
        return agent(QUESTION)
    finally:
        get_cached_client().flush()


if __name__ == "__main__":
    print({"langfuse": langfuse_agent, "langsmith": langsmith_agent}[sys.argv[1]]())

"""Real run files of two frameworks that keep a run as JSON, written by the frameworks themselves against
the scripted local model (tests/openai_server.py) — the weather/time conversation of tests/fixtures/frameworks:

- Pydantic AI: `ModelMessagesTypeAdapter.dump_json(result.all_messages())` of a run whose tools succeed, and
  of one whose `get_time` asks the model to retry (`ModelRetry`).
- OpenAI Agents SDK: `RunState.to_json()` of a run paused on a tool call awaiting approval
  (`needs_approval=True`), as a human-in-the-loop app saves it.

Run in a virtualenv of its own (versions in tests/fixtures/<format>/README.md):
    python scripts/capture_histories/capture.py tests/fixtures
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from openai_server import OpenAIServer  # noqa: E402

MODEL = "gpt-4o-mini-2024-07-18"
QUESTION = "What is the weather and the time in Paris?"


def call(server: OpenAIServer, name: str, usage: tuple[int, int], call_id: str):
    """A reply calling `name` for Paris, with a call id of its own (the scripted server numbers calls per reply)."""
    reply = server.tool_calls((name, {"city": "Paris"}), usage=usage, model=MODEL)
    reply.body["choices"][0]["message"]["tool_calls"][0]["id"] = call_id
    return reply


def script(server: OpenAIServer, answer: str) -> None:
    server.script(
        call(server, "get_weather", (142, 17), "call_weather_1"),
        call(server, "get_time", (175, 16), "call_time_1"),
        server.text(answer, usage=(204, 19), model=MODEL),
    )


def pydantic_ai(server: OpenAIServer, out: Path) -> None:
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.messages import ModelMessagesTypeAdapter
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    def one(retry: bool) -> None:
        model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=server.base_url, api_key="not-a-key"))
        agent = Agent(model, system_prompt="You answer questions about weather and time.")
        tried = []

        @agent.tool_plain
        def get_weather(city: str) -> str:
            return "Sunny, 18°C"

        @agent.tool_plain
        def get_time(city: str) -> str:
            tried.append(city)
            if retry and len(tried) == 1:
                raise ModelRetry(f"time service busy for {city}, try again")
            return "10:14"

        if retry:
            server.script(
                call(server, "get_weather", (142, 17), "call_weather_1"),
                call(server, "get_time", (175, 16), "call_time_1"),
                call(server, "get_time", (198, 16), "call_time_2"),
                server.text("It is sunny and 18°C in Paris; it is 10:14.", usage=(221, 19), model=MODEL),
            )
        else:
            script(server, "It is sunny and 18°C in Paris; it is 10:14.")
        result = agent.run_sync(QUESTION)
        name = "retry" if retry else "ok"
        (out / "pydantic_ai" / f"messages_{name}.json").write_bytes(
            ModelMessagesTypeAdapter.dump_json(result.all_messages(), indent=2)
        )

    one(retry=False)
    one(retry=True)


def openai_agents(server: OpenAIServer, out: Path) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)

    @function_tool
    def get_weather(city: str) -> str:
        return "Sunny, 18°C"

    @function_tool(needs_approval=True)
    def get_time(city: str) -> str:
        return "10:14"

    client = AsyncOpenAI(base_url=server.base_url, api_key="not-a-key")
    agent = Agent(
        name="Weather agent",
        instructions="You answer questions about weather and time.",
        model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
        tools=[get_weather, get_time],
    )
    script(server, "It is sunny and 18°C in Paris; it is 10:14.")

    async def run() -> None:
        result = await Runner.run(agent, QUESTION)
        assert result.interruptions, "expected the run to pause for approval"
        state = result.to_state()
        (out / "openai_agents" / "run_state_pending_approval.json").write_text(json.dumps(state.to_json(), indent=2))

    asyncio.run(run())


def main(out: Path) -> None:
    for sub in ("pydantic_ai", "openai_agents"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    with OpenAIServer() as server:
        pydantic_ai(server, out)
        openai_agents(server, out)


if __name__ == "__main__":
    main(Path(sys.argv[1]))

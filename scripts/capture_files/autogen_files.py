"""Real AutoGen AgentChat files, written by autogen-agentchat itself against the scripted local model
(tests/openai_server.py), the weather/time conversation of tests/fixtures/frameworks:

- `TaskResult.model_dump(mode="json")` of a one-agent team whose two tools succeed, and of one whose
  `get_time` raises (a ToolCallExecutionEvent with `is_error: true`);
- the team's `await team.save_state()` after each run, as an app saves it to resume later, and the agent's
  own `await agent.save_state()` after the failing one;
- the bare message list of an agent's own `run()` (no team), `[m.dump() for m in result.messages]`,
  with `reflect_on_tool_use=False` (the run ends on a ToolCallSummaryMessage).

Run in a virtualenv of its own (pinned in autogen_requirements.txt; versions in tests/fixtures/autogen/README.md):
    python scripts/capture_files/autogen_files.py tests/fixtures/autogen
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
ANSWER = "It is sunny and 18°C in Paris; it is 10:14."


def call(server: OpenAIServer, name: str, usage: tuple[int, int], call_id: str):
    """A reply calling `name` for Paris, with a call id of its own."""
    reply = server.tool_calls((name, {"city": "Paris"}), usage=usage, model=MODEL)
    reply.body["choices"][0]["message"]["tool_calls"][0]["id"] = call_id
    return reply


def agent(server: OpenAIServer, fail_time: bool, reflect: bool = True):
    from autogen_agentchat.agents import AssistantAgent
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    async def get_weather(city: str) -> str:
        """The weather in a city."""
        return "Sunny, 18°C"

    async def get_time(city: str) -> str:
        """The local time in a city."""
        if fail_time:
            raise TimeoutError(f"time service unreachable for {city}")
        return "10:14"

    client = OpenAIChatCompletionClient(model=MODEL, base_url=server.base_url, api_key="not-a-key")
    return AssistantAgent(
        "weather_agent",
        model_client=client,
        tools=[get_weather, get_time],
        system_message="You answer questions about weather and time.",
        reflect_on_tool_use=reflect,
        max_tool_iterations=3 if reflect else 1,
    )


async def team_run(server: OpenAIServer, out: Path, fail_time: bool) -> None:
    from autogen_agentchat.conditions import MaxMessageTermination, TextMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat

    server.script(
        call(server, "get_weather", (142, 17), "call_weather_1"),
        call(server, "get_time", (175, 16), "call_time_1"),
        server.text(
            "I could not get the time; it is sunny and 18°C in Paris." if fail_time else ANSWER, usage=(204, 19), model=MODEL
        ),
    )
    assistant = agent(server, fail_time)
    team = RoundRobinGroupChat(
        [assistant],
        termination_condition=TextMessageTermination("weather_agent") | MaxMessageTermination(12),
    )
    result = await team.run(task=QUESTION)
    name = "tool_error" if fail_time else "ok"
    (out / f"task_result_{name}.json").write_text(json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False))
    state = await team.save_state()
    (out / f"team_state_{name}.json").write_text(json.dumps(state, indent=2, ensure_ascii=False))
    if fail_time:  # the agent's own state: its model context, no times or tokens
        agent_state = await assistant.save_state()
        (out / f"agent_state_{name}.json").write_text(json.dumps(agent_state, indent=2, ensure_ascii=False))


async def agent_messages(server: OpenAIServer, out: Path) -> None:
    server.script(call(server, "get_weather", (142, 17), "call_weather_1"))
    result = await agent(server, fail_time=False, reflect=False).run(task="What is the weather in Paris?")
    messages = [m.dump() for m in result.messages]
    (out / "messages_summary.json").write_text(json.dumps(messages, indent=2, ensure_ascii=False, default=str))


async def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with OpenAIServer() as server:
        await team_run(server, out, fail_time=False)
        await team_run(server, out, fail_time=True)
        await agent_messages(server, out)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))

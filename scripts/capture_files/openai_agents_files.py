"""What an app saves of a finished OpenAI Agents SDK run, written by the SDK itself against the scripted local
model (tests/openai_server.py): the weather/time conversation of tests/fixtures/frameworks, two tools, a final
answer. Three files, the ways the SDK's docs and apps keep a run:

- `result_input_list.json`: `result.to_input_list()` (the conversation to continue from; Responses-API items);
- `result_state_final.json`: `result.to_state().to_json()` of the finished run;
- `result_run_result.json`: the `RunResult`'s fields an app logs (`input`, `new_items`, `raw_responses`,
  `final_output`, `last_agent`), pydantic items by `model_dump()`, dataclasses field by field.

Run in a virtualenv of its own (scripts/capture_files/requirements-openai-agents.txt), tracing off:
    OPENAI_AGENTS_DISABLE_TRACING=1 python scripts/capture_files/openai_agents_files.py tests/fixtures/openai_agents
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from openai_server import OpenAIServer  # noqa: E402

MODEL = "gpt-4o-mini-2024-07-18"
QUESTION = "What is the weather and the time in Paris?"
ANSWER = "It is sunny and 18°C in Paris; it is 10:14."


def call(server: OpenAIServer, name: str, usage: tuple[int, int], call_id: str):
    reply = server.tool_calls((name, {"city": "Paris"}), usage=usage, model=MODEL)
    reply.body["choices"][0]["message"]["tool_calls"][0]["id"] = call_id
    return reply


def plain(value: Any) -> Any:
    """A value as JSON data: pydantic models dumped, dataclasses by field, agents by name."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if hasattr(value, "__dataclass_fields__"):
        if type(value).__name__ == "Agent":
            return {"name": value.name}
        return {k: plain(getattr(value, k)) for k in value.__dataclass_fields__ if not k.startswith("_")}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value if isinstance(value, str | int | float | bool | type(None)) else repr(value)


def main(out: Path) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    out.mkdir(parents=True, exist_ok=True)

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "Sunny, 18°C"

    @function_tool
    def get_time(city: str) -> str:
        """The local time in a city."""
        return "10:14"

    with OpenAIServer() as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-a-key")
        agent = Agent(
            name="Weather agent",
            instructions="You answer questions about weather and time.",
            model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
            tools=[get_weather, get_time],
        )
        server.script(
            call(server, "get_weather", (142, 17), "call_weather_1"),
            call(server, "get_time", (175, 16), "call_time_1"),
            server.text(ANSWER, usage=(204, 19), model=MODEL),
        )
        result = asyncio.run(Runner.run(agent, QUESTION))

    def write(name: str, value: Any) -> None:
        (out / name).write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    write("result_input_list.json", result.to_input_list())
    write("result_state_final.json", result.to_state().to_json())
    write(
        "result_run_result.json",
        {
            "input": result.input,
            "new_items": plain(result.new_items),
            "raw_responses": plain(result.raw_responses),
            "final_output": result.final_output,
            "last_agent": result.last_agent.name,
        },
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]))

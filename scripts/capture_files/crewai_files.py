"""Real CrewAI files, written by crewai itself against the scripted local model (tests/openai_server.py), the
weather/time conversation of tests/fixtures/frameworks: one agent with two tools, one task.

- the crew's output log (`Crew(output_log_file="….json")` and `"….txt"`): a line per task started/completed;
- `crew_output.model_dump_json()`: the CrewOutput, each TaskOutput with the agent's `messages` (tool calls
  and results included), `tool_failures`, and the crew's `token_usage`;
once with both tools succeeding, and once with `get_time` raising and a second task (its answer on two lines,
as the text log writes it: unescaped).

Run in a virtualenv of its own (pinned in crewai_requirements.txt; versions in tests/fixtures/crewai/README.md):
    python scripts/capture_files/crewai_files.py tests/fixtures/crewai
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

for key, value in {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "OTEL_SDK_DISABLED": "true",
    "OPENAI_API_KEY": "not-a-key",
}.items():
    os.environ[key] = value

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from openai_server import OpenAIServer  # noqa: E402

MODEL = "gpt-4o-mini-2024-07-18"
QUESTION = "What is the weather and the time in Paris?"


def call(server: OpenAIServer, name: str, usage: tuple[int, int], call_id: str):
    """A reply calling `name` for Paris, with a call id of its own."""
    reply = server.tool_calls((name, {"city": "Paris"}), usage=usage, model=MODEL)
    reply.body["choices"][0]["message"]["tool_calls"][0]["id"] = call_id
    return reply


def run(server: OpenAIServer, out: Path, fail_time: bool, log_ext: str) -> None:
    from crewai import LLM, Agent, Crew, Task
    from crewai.tools import tool

    @tool("get_weather")
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "Sunny, 18°C"

    @tool("get_time")
    def get_time(city: str) -> str:
        """The local time in a city."""
        if fail_time:
            raise TimeoutError(f"time service unreachable for {city}")
        return "10:14"

    answer = (
        "I could not get the time.\nIt is sunny and 18°C in Paris."
        if fail_time
        else "It is sunny and 18°C in Paris; it is 10:14."
    )
    server.script(
        call(server, "get_weather", (142, 17), "call_weather_1"),
        call(server, "get_time", (175, 16), "call_time_1"),
        server.text(answer, usage=(204, 19), model=MODEL),
    )
    if fail_time:  # a second task, given the first one's answer
        server.script(server.text("Sunny.", usage=(96, 3), model=MODEL))
    llm = LLM(model=f"openai/{MODEL}", base_url=server.base_url, api_key="not-a-key")
    agent = Agent(
        role="Weather agent",
        goal="Answer questions about weather and time",
        backstory="You answer questions about weather and time.",
        tools=[get_weather, get_time],
        llm=llm,
        max_iter=4,
        verbose=False,
    )
    tasks = [Task(name="weather_and_time", description=QUESTION, expected_output="One sentence.", agent=agent)]
    if fail_time:
        tasks.append(Task(name="one_word", description="Say the weather in one word.", expected_output="One word.", agent=agent))
    name = "tool_error" if fail_time else "ok"
    log = out / f"crew_log_{name}.{log_ext}"
    log.unlink(missing_ok=True)
    crew = Crew(agents=[agent], tasks=tasks, output_log_file=str(log), verbose=False)
    result = crew.kickoff()
    (out / f"crew_output_{name}.json").write_text(result.model_dump_json(indent=2))


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with OpenAIServer() as server:
        run(server, out, fail_time=False, log_ext="json")
        run(server, out, fail_time=True, log_ext="txt")
        for payload in server.requests:
            print("request tools:", bool(payload.get("tools")), "messages:", len(payload.get("messages", [])))


if __name__ == "__main__":
    main(Path(sys.argv[1]))

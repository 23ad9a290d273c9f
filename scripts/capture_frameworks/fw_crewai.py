"""CrewAI (one agent, one task, two tools) traced by openinference-instrumentation-crewai.

Mode `wrappers`: the instrumentor's default, wrapping Crew.kickoff, Task._execute_core and tool use (no LLM
spans). Mode `events`: `use_event_listener=True, create_llm_spans=True`, built from CrewAI's event bus,
with LLM spans.
"""

import harness


def run(mode: str):
    from crewai import LLM, Agent, Crew, Task
    from crewai.tools import tool
    from openinference.instrumentation.crewai import CrewAIInstrumentor

    provider = harness.tracer_provider("capture-crewai")
    if mode == "events":
        CrewAIInstrumentor().instrument(tracer_provider=provider, use_event_listener=True, create_llm_spans=True)
    else:
        CrewAIInstrumentor().instrument(tracer_provider=provider)

    @tool("get_weather")
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        return harness.weather(city)

    @tool("get_time")
    def get_time(city: str) -> str:
        """Local time in a city."""
        return harness.local_time(city)

    llm = LLM(model=f"openai/{harness.MODEL}", base_url=harness.BASE_URL, api_key=harness.API_KEY)
    agent = Agent(
        role="travel_assistant",
        goal="Answer travel questions with the tools",
        backstory=harness.INSTRUCTIONS,
        tools=[get_weather, get_time],
        llm=llm,
        verbose=False,
        max_iter=5,
    )
    task = Task(description=harness.QUESTION, expected_output="One sentence with the weather and the time.", agent=agent)
    return Crew(agents=[agent], tasks=[task], verbose=False).kickoff().raw


if __name__ == "__main__":
    harness.main(run)

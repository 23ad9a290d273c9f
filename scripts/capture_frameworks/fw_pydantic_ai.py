"""Pydantic AI with its built-in OpenTelemetry instrumentation; the mode picks the instrumentation format version."""

import harness


def run(mode: str):
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = harness.tracer_provider("capture-pydantic-ai")
    version = int(mode.removeprefix("v"))
    model = OpenAIChatModel(harness.MODEL, provider=OpenAIProvider(base_url=harness.BASE_URL, api_key=harness.API_KEY))
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider, version=version))
    agent = Agent(model, name="travel_assistant", instructions=harness.INSTRUCTIONS)

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        return harness.weather(city)

    @agent.tool_plain
    def get_time(city: str) -> str:
        """Local time in a city."""
        return harness.local_time(city)

    return agent.run_sync(harness.QUESTION).output


if __name__ == "__main__":
    harness.main(run)

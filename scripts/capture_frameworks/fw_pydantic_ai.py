"""Pydantic AI with its built-in OpenTelemetry instrumentation; the mode picks the instrumentation format version."""

import harness


def build_agent():
    """The travel agent with its two tools; instrumented by whatever Agent.instrument_all was given."""
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(harness.MODEL, provider=OpenAIProvider(base_url=harness.BASE_URL, api_key=harness.API_KEY))
    agent = Agent(model, name="travel_assistant", instructions=harness.INSTRUCTIONS)

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        return harness.weather(city)

    @agent.tool_plain
    def get_time(city: str) -> str:
        """Local time in a city."""
        return harness.local_time(city)

    return agent


def run(mode: str):
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings

    provider = harness.tracer_provider("capture-pydantic-ai")
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider, version=int(mode.removeprefix("v"))))
    return build_agent().run_sync(harness.QUESTION).output


if __name__ == "__main__":
    harness.main(run)

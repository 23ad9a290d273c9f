"""smolagents' ToolCallingAgent on its OpenAI-compatible model, traced by openinference-instrumentation-smolagents."""

import harness


def run(mode: str):
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import OpenAIModel, ToolCallingAgent, tool

    provider = harness.tracer_provider("capture-smolagents")
    SmolagentsInstrumentor().instrument(tracer_provider=provider)

    @tool
    def get_weather(city: str) -> str:
        """Current weather in a city.

        Args:
            city: the city's name
        """
        return harness.weather(city)

    @tool
    def get_time(city: str) -> str:
        """Local time in a city.

        Args:
            city: the city's name
        """
        return harness.local_time(city)

    model = OpenAIModel(model_id=harness.MODEL, api_base=harness.BASE_URL, api_key=harness.API_KEY)
    agent = ToolCallingAgent(
        tools=[get_weather, get_time],
        model=model,
        name="travel_assistant",
        instructions=harness.INSTRUCTIONS,
        max_steps=6,
        verbosity_level=0,
    )
    return agent.run(harness.QUESTION)


if __name__ == "__main__":
    harness.main(run)

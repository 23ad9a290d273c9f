"""OpenAI Agents SDK traced by openinference-instrumentation-openai-agents (its processor replaces the SDK's
default one, which would post to OpenAI's backend). The model speaks chat completions, not the Responses API."""

import harness


def run(mode: str):
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
    from openai import AsyncOpenAI
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    provider = harness.tracer_provider("capture-openai-agents")
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider, exclusive_processor=True)
    model = OpenAIChatCompletionsModel(
        model=harness.MODEL, openai_client=AsyncOpenAI(base_url=harness.BASE_URL, api_key=harness.API_KEY)
    )

    @function_tool
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        return harness.weather(city)

    @function_tool
    def get_time(city: str) -> str:
        """Local time in a city."""
        return harness.local_time(city)

    agent = Agent(name="travel_assistant", instructions=harness.INSTRUCTIONS, model=model, tools=[get_weather, get_time])
    return Runner.run_sync(agent, harness.QUESTION).final_output


if __name__ == "__main__":
    harness.main(run)

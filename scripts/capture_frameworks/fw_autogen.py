"""AutoGen AgentChat's AssistantAgent. Mode `own`: only the GenAI spans autogen-core makes itself (agent and
tools, no model calls); mode `openllmetry`: the same plus OpenLLMetry's opentelemetry-instrumentation-openai
for the model calls."""

import asyncio

import harness


def get_weather(city: str) -> str:
    """Current weather in a city."""
    return harness.weather(city)


def get_time(city: str) -> str:
    """Local time in a city."""
    return harness.local_time(city)


async def _ask():
    from autogen_agentchat.agents import AssistantAgent
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    model_client = OpenAIChatCompletionClient(model=harness.MODEL, base_url=harness.BASE_URL, api_key=harness.API_KEY)
    agent = AssistantAgent(
        "travel_assistant",
        model_client=model_client,
        tools=[get_weather, get_time],
        system_message=harness.INSTRUCTIONS,
        max_tool_iterations=5,
    )
    result = await agent.run(task=harness.QUESTION)
    await model_client.close()
    return result.messages[-1].to_text()


def run(mode: str):
    provider = harness.tracer_provider("capture-autogen")
    if mode == "openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
    return asyncio.run(_ask())


if __name__ == "__main__":
    harness.main(run)

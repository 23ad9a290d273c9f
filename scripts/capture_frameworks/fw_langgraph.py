"""LangGraph's prebuilt ReAct agent on langchain-openai, traced by openinference-instrumentation-langchain."""

import harness


def run(mode: str):
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent
    from openinference.instrumentation.langchain import LangChainInstrumentor

    provider = harness.tracer_provider("capture-langgraph")
    LangChainInstrumentor().instrument(tracer_provider=provider)

    @tool
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        return harness.weather(city)

    @tool
    def get_time(city: str) -> str:
        """Local time in a city."""
        return harness.local_time(city)

    model = ChatOpenAI(model=harness.MODEL, base_url=harness.BASE_URL, api_key=harness.API_KEY)
    agent = create_react_agent(model, [get_weather, get_time], prompt=harness.INSTRUCTIONS, name="travel_assistant")
    state = agent.invoke({"messages": [("user", harness.QUESTION)]})
    return state["messages"][-1].content


if __name__ == "__main__":
    harness.main(run)

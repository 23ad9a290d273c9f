"""The Langfuse SDK as its users trace a hand-written agent: @observe on the agent and its tools, and the
langfuse.openai drop-in client for model calls. Its own exporter posts gzipped OTLP protobuf to
{LANGFUSE_HOST}/api/public/otel/v1/traces with Basic auth (placeholder keys, dropped from the fixtures)."""

import os

import harness


def run(mode: str):
    os.environ.update(
        LANGFUSE_HOST=os.environ["CAPTURE_COLLECTOR_URL"],
        LANGFUSE_PUBLIC_KEY="pk-lf-capture",
        LANGFUSE_SECRET_KEY="sk-lf-capture",
    )
    from langfuse import get_client, observe
    from langfuse.openai import OpenAI

    harness.keep_for_shutdown(get_client())
    client = OpenAI(base_url=harness.BASE_URL, api_key=harness.API_KEY)

    @observe(name="get_weather", as_type="tool")
    def get_weather(city: str) -> str:
        return harness.weather(city)

    @observe(name="get_time", as_type="tool")
    def get_time(city: str) -> str:
        return harness.local_time(city)

    tools = {"get_weather": get_weather, "get_time": get_time}

    @observe(name="travel_assistant", as_type="agent")
    def travel_assistant(question: str) -> str:
        return harness.tool_loop(client, lambda name, arguments, call_id: tools[name](**arguments))

    return travel_assistant(harness.QUESTION)


if __name__ == "__main__":
    harness.main(run)

"""The Langfuse SDK as its users trace a hand-written agent: @observe on the agent and its tools, and the
langfuse.openai drop-in client for model calls. Its own exporter posts gzipped OTLP protobuf to
{LANGFUSE_HOST}/api/public/otel/v1/traces with Basic auth (placeholder keys, dropped from the fixtures)."""

import json
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
    schemas = [
        {"type": "function", "function": {"name": name, "description": f"{name} for a city",
                                          "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                         "required": ["city"]}}}
        for name in tools
    ]

    @observe(name="travel_assistant", as_type="agent")
    def travel_assistant(question: str) -> str:
        messages = [{"role": "system", "content": harness.INSTRUCTIONS}, {"role": "user", "content": question}]
        for _ in range(5):
            reply = client.chat.completions.create(model=harness.MODEL, messages=messages, tools=schemas).choices[0]
            if not reply.message.tool_calls:
                return reply.message.content
            messages.append(reply.message.model_dump(exclude_none=True))
            for call in reply.message.tool_calls:
                try:
                    result = tools[call.function.name](**json.loads(call.function.arguments))
                except Exception as error:  # a hand-written loop hands the failure back to the model
                    result = f"Error: {type(error).__name__}: {error}"
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        raise RuntimeError("no final answer after 5 model calls")

    return travel_assistant(harness.QUESTION)


if __name__ == "__main__":
    harness.main(run)

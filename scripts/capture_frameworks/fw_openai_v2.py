"""Plain OpenTelemetry GenAI: the official opentelemetry-instrumentation-openai-v2 on the OpenAI client, and the
app's own `invoke_agent` / `execute_tool` spans named and attributed per the GenAI semantic conventions.

Mode `default`: nothing opted in, so the v1.30 conventions and no message content (this version records
none on that path, whatever OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT says). The other modes opt into
OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental: `events` puts content in GenAI log events
(event_only, sent to /v1/logs), `latest` on the spans (span_only).
"""

import json
import os

import harness

AGENT_NAME = "travel_assistant"


def run(mode: str):
    if mode != "default":
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "span_only" if mode == "latest" else "event_only"
    from openai import OpenAI
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.trace import Status, StatusCode

    provider = harness.tracer_provider("capture-openai-v2")
    logs = harness.logger_provider("capture-openai-v2")
    OpenAIInstrumentor().instrument(tracer_provider=provider, logger_provider=logs)
    tracer = provider.get_tracer("capture.travel_assistant")
    tools = {"get_weather": harness.weather, "get_time": harness.local_time}

    def run_tool(name, arguments, call_id):
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
        }
        if mode == "latest":
            attributes["gen_ai.tool.call.arguments"] = json.dumps(arguments)
        with tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes) as span:
            try:
                result = tools[name](**arguments)
            except Exception as error:
                span.set_attribute("error.type", type(error).__qualname__)
                span.set_status(Status(StatusCode.ERROR, str(error)))
                raise
            if mode == "latest":
                span.set_attribute("gen_ai.tool.call.result", result)
            return result

    agent_attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": AGENT_NAME,
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": harness.MODEL,
    }
    with tracer.start_as_current_span(f"invoke_agent {AGENT_NAME}", attributes=agent_attributes):
        return harness.tool_loop(OpenAI(base_url=harness.BASE_URL, api_key=harness.API_KEY), run_tool)


if __name__ == "__main__":
    harness.main(run)

"""What every framework's capture module shares inside its own virtualenv: the two tools, the variant,
a tracer provider with the standard OTLP/HTTP exporter, and the outcome written for the manifest.

A module calls `main(run)`, where `run(mode)` builds the framework's agent with the two tools, asks it
the fixed question and returns its final answer; `main` records the answer or the error and shuts the
tracer provider down so the exporter sends what it still holds.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

QUESTION = "What is the weather in Paris, and what time is it there? Use the tools get_weather and get_time."
INSTRUCTIONS = "You are a concise travel assistant. Use the tools, then answer in one sentence."
MODEL = os.environ.get("CAPTURE_MODEL", "gpt-4o-mini")
VARIANT = os.environ.get("CAPTURE_VARIANT", "ok")
MODE = os.environ.get("CAPTURE_MODE", "default")
BASE_URL = os.environ.get("OPENAI_BASE_URL", "")
API_KEY = os.environ.get("OPENAI_API_KEY", "x")

_providers: list = []
_tool_calls: list[dict] = []


def weather(city: str) -> str:
    """Body of get_weather: always succeeds."""
    _tool_calls.append({"tool": "get_weather", "args": {"city": city}, "at": time.time()})
    return f"Sunny, 21 °C in {city}"


def local_time(city: str) -> str:
    """Body of get_time: raises in the tool-error variant, so the capture shows how a failed tool is reported."""
    _tool_calls.append({"tool": "get_time", "args": {"city": city}, "at": time.time()})
    if VARIANT == "tool-error":
        raise RuntimeError(f"time service unavailable for {city}")
    return f"14:05 (CET) in {city}"


TOOL_SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
    for name, description in (("get_weather", "Current weather in a city."), ("get_time", "Local time in a city."))
]


def tool_loop(client, run_tool) -> str:
    """A hand-written agent loop over an OpenAI client, for SDKs that trace app code rather than a framework.

    `run_tool(name, arguments, call_id)` runs one tool; a tool that raises is handed back to the model as
    an error message, as such loops usually do.
    """
    messages = [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": QUESTION}]
    for _ in range(5):
        reply = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOL_SCHEMAS).choices[0]
        if not reply.message.tool_calls:
            return reply.message.content
        messages.append(reply.message.model_dump(exclude_none=True))
        for call in reply.message.tool_calls:
            try:
                result = run_tool(call.function.name, json.loads(call.function.arguments), call.id)
            except Exception as error:
                result = f"Error: {type(error).__name__}: {error}"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise RuntimeError("no final answer after 5 model calls")


def tracer_provider(service_name: str, set_global: bool = True):
    """SDK provider with BatchSpanProcessor + OTLP/HTTP protobuf exporter, configured from OTEL_* env only."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    if set_global:
        trace.set_tracer_provider(provider)
    keep_for_shutdown(provider)
    return provider


def logger_provider(service_name: str):
    """SDK logger provider with the OTLP/HTTP protobuf log exporter, for instrumentations that emit GenAI events."""
    from opentelemetry._logs import set_logger_provider
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    provider = LoggerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    set_logger_provider(provider)
    keep_for_shutdown(provider)
    return provider


def keep_for_shutdown(provider) -> None:
    """Anything with shutdown() (tracer, logger or meter provider, an SDK client) to flush at the end."""
    _providers.append(provider)


def main(run) -> None:
    started = time.time()
    outcome: dict = {"mode": MODE, "variant": VARIANT}
    try:
        answer = run(MODE)
        outcome.update(status="completed", final_output=None if answer is None else str(answer))
    except BaseException as error:  # the run's failure is part of what is captured
        outcome.update(
            status="raised",
            error=f"{type(error).__name__}: {error}",
            traceback_tail=traceback.format_exc().strip().splitlines()[-3:],
        )
    finally:
        outcome["run_seconds"] = round(time.time() - started, 3)
        outcome["tool_calls"] = [
            {"tool": c["tool"], "args": c["args"], "after_seconds": round(c["at"] - started, 3)} for c in _tool_calls
        ]
        for provider in reversed(_providers):
            try:
                provider.shutdown()
            except Exception as error:  # a failed flush is recorded, not fatal
                outcome.setdefault("shutdown_errors", []).append(repr(error))
        with open(os.environ["CAPTURE_RESULT_PATH"], "w") as result_file:
            json.dump(outcome, result_file, indent=1)
    print(json.dumps(outcome)[:2000], file=sys.stderr)

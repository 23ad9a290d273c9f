"""Real Phoenix span exports for the `phoenix` reader's tests: a local Phoenix server receives the
OpenInference spans of a small tool-calling agent (the OpenAI client, instrumented by
openinference-instrumentation-openai, against the scripted local model of tests/openai_server.py),
then its spans are exported the two ways users export them: `Client().spans.get_spans_dataframe()`
written as JSON records and JSON Lines, and the REST API's `GET /v1/projects/{project}/spans` answer.

Run in a virtualenv of its own (versions in tests/fixtures/phoenix/README.md):
    python scripts/capture_phoenix/capture.py tests/fixtures/phoenix
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from openai_server import OpenAIServer  # noqa: E402

PORT = 6106
PROJECT = "weather-agent"
TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    for n in ("get_weather", "get_time")
]


def wait_for(url: str, seconds: float = 120) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(1)
    raise SystemExit(f"Phoenix did not answer at {url}")


def agent(base_url: str, fail_time: bool) -> None:
    """The run: the model asks for the weather, then the time, then answers; a tool failure is handed back to it."""
    from openai import OpenAI
    from opentelemetry import trace

    tracer = trace.get_tracer("capture")
    client = OpenAI(base_url=base_url, api_key="not-a-key")
    messages: list[dict] = [{"role": "user", "content": "What is the weather and the time in Paris?"}]
    with tracer.start_as_current_span(
        "agent run", attributes={"openinference.span.kind": "AGENT", "input.value": messages[0]["content"]}
    ) as root:
        for _ in range(3):
            reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
            msg = reply.choices[0].message
            messages.append(msg.model_dump(exclude_none=True))
            if not msg.tool_calls:
                root.set_attribute("output.value", msg.content or "")
                return
            for call in msg.tool_calls:
                args = json.loads(call.function.arguments)
                attributes = {
                    "openinference.span.kind": "TOOL",
                    "tool.name": call.function.name,
                    "tool.parameters": call.function.arguments,
                    "input.value": call.function.arguments,
                }
                with tracer.start_as_current_span(call.function.name, attributes=attributes) as span:
                    if call.function.name == "get_time" and fail_time:
                        error = RuntimeError(f"time service unavailable for {args['city']}")
                        span.record_exception(error)
                        span.set_status(trace.Status(trace.StatusCode.ERROR, str(error)))
                        result = f"Error: {error}"
                    else:
                        result = "Sunny, 18°C" if call.function.name == "get_weather" else "10:14"
                        span.set_attribute("output.value", result)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    work = tempfile.mkdtemp(prefix="phoenix-")
    env = {**os.environ, "PHOENIX_WORKING_DIR": work, "PHOENIX_PORT": str(PORT), "PHOENIX_GRPC_PORT": str(PORT + 1)}
    server = subprocess.Popen(
        [sys.executable, "-m", "phoenix.server.main", "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for(f"http://127.0.0.1:{PORT}/healthz")
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from phoenix.otel import register

        provider = register(project_name=PROJECT, endpoint=f"http://127.0.0.1:{PORT}/v1/traces", batch=False, verbose=False)
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        with OpenAIServer() as model:
            for fail in (False, True):
                model.script(
                    model.tool_calls(("get_weather", {"city": "Paris"}), usage=(142, 17), model="gpt-4o-mini-2024-07-18"),
                    model.tool_calls(("get_time", {"city": "Paris"}), usage=(175, 16), model="gpt-4o-mini-2024-07-18"),
                    model.text(
                        "It is sunny and 18°C in Paris" + (", but I could not get the time." if fail else "; it is 10:14."),
                        usage=(204, 19),
                        model="gpt-4o-mini-2024-07-18",
                    ),
                )
                agent(model.base_url, fail)
        provider.force_flush()
        time.sleep(2)
        from phoenix.client import Client

        client = Client(base_url=f"http://127.0.0.1:{PORT}")
        frame = client.spans.get_spans_dataframe(project_identifier=PROJECT)
        frame.to_json(out / "spans_dataframe.json", orient="records", date_format="iso")
        frame.to_json(out / "spans_dataframe.jsonl", orient="records", lines=True, date_format="iso")
        with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/v1/projects/{PROJECT}/spans?limit=100") as answer:
            (out / "rest_spans.json").write_bytes(answer.read())
        import phoenix

        print("phoenix", phoenix.__version__)
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main(Path(sys.argv[1]))

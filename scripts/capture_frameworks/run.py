"""Capture what real agent frameworks export over OTLP, into tests/fixtures/frameworks/.

    python scripts/capture_frameworks/run.py <framework> [--mode M] [--variant V]
    python scripts/capture_frameworks/run.py --list

Stdlib only: this process serves the scripted model and the OTLP collector on 127.0.0.1, then runs the
framework's module in the framework's own virtualenv (/tmp/capture-venvs/<group>, made from
requirements-<group>.txt; see tests/fixtures/frameworks/README.md) once per mode and variant.
Variants: `ok` (two tools, then an answer), `tool-error` (get_time raises), `slow` (each model call
takes SLOW_MODEL_SECONDS and the batch delay is SLOW_BATCH_DELAY_MS, so spans arrive in several requests).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from servers import Collector, ScriptedModel, serve_collector, serve_model

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "frameworks"
VENVS = Path(os.environ.get("CAPTURE_VENVS", "/tmp/capture-venvs"))
VARIANTS = ("ok", "tool-error", "slow")
SLOW_MODEL_SECONDS = 0.7
SLOW_BATCH_DELAY_MS = 500
OTLP_EXPORTER = "opentelemetry-exporter-otlp-proto-http OTLPSpanExporter behind the SDK BatchSpanProcessor"

# Everything that would phone home is off; nothing here is a credential.
QUIET_ENV = {
    "OPENAI_API_KEY": "x",
    "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
    "OTEL_METRICS_EXPORTER": "none",
    "OTEL_LOGS_EXPORTER": "none",
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "OTEL_SDK_DISABLED": "false",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_TELEMETRY": "False",
    "ANONYMIZED_TELEMETRY": "false",
    "DO_NOT_TRACK": "1",
    "HF_HUB_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "PYTHONUNBUFFERED": "1",
}


@dataclass(frozen=True)
class Framework:
    group: str  # virtualenv /tmp/capture-venvs/<group>, requirements-<group>.txt
    module: str
    modes: tuple[str, ...]
    instrumentation: str
    exporter: str = OTLP_EXPORTER


FRAMEWORKS = {
    "pydantic-ai": Framework(
        "pydantic-ai",
        "fw_pydantic_ai.py",
        ("v5", "v4", "v2", "v6"),
        "pydantic-ai-slim built-in: Agent.instrument_all(InstrumentationSettings(tracer_provider=..., version=N)); "
        "v5 is the default format, v4 the previous (the same bytes for this run), v2 the oldest still accepted "
        "(span names agent run / running tool), v6 the next (tool results in the tool role)",
    ),
    "openai-agents": Framework(
        "openai-agents",
        "fw_openai_agents.py",
        ("openinference",),
        "openinference-instrumentation-openai-agents OpenAIAgentsInstrumentor (exclusive processor); OpenAIChatCompletionsModel",
    ),
    "langgraph": Framework(
        "langgraph",
        "fw_langgraph.py",
        ("openinference",),
        "openinference-instrumentation-langchain LangChainInstrumentor; langgraph.prebuilt.create_react_agent "
        "with langchain-openai ChatOpenAI",
    ),
    "smolagents": Framework(
        "smolagents",
        "fw_smolagents.py",
        ("openinference",),
        "openinference-instrumentation-smolagents SmolagentsInstrumentor; ToolCallingAgent with OpenAIModel",
    ),
    "autogen": Framework(
        "autogen",
        "fw_autogen.py",
        ("own", "openllmetry"),
        "own: autogen-core's GenAI spans through the global tracer provider (AssistantAgent with "
        "OpenAIChatCompletionClient); openllmetry: the same plus opentelemetry-instrumentation-openai "
        "OpenAIInstrumentor",
    ),
    "langfuse": Framework(
        "langfuse",
        "fw_langfuse.py",
        ("sdk",),
        "Langfuse SDK: @observe(as_type='agent'/'tool') on a hand-written tool loop, langfuse.openai.OpenAI for the model calls",
        exporter="the Langfuse SDK's own OTLP/HTTP protobuf exporter (gzip, Basic auth) "
        "behind its BatchSpanProcessor, posting to {LANGFUSE_HOST}/api/public/otel/v1/traces",
    ),
    "openai-v2": Framework(
        "openai-v2",
        "fw_openai_v2.py",
        ("default", "events", "latest"),
        "opentelemetry-instrumentation-openai-v2 on the OpenAI client plus the app's own invoke_agent/execute_tool "
        "GenAI spans around a hand-written tool loop; default: v1.30 conventions, no content; events: "
        "gen_ai_latest_experimental, content as log events (/v1/logs); latest: the same, content on spans",
        exporter=OTLP_EXPORTER + "; log events through OTLPLogExporter behind BatchLogRecordProcessor",
    ),
    "crewai": Framework(
        "crewai",
        "fw_crewai.py",
        ("wrappers", "events"),
        "openinference-instrumentation-crewai CrewAIInstrumentor; wrappers: its default (no LLM spans); "
        "events: use_event_listener=True, create_llm_spans=True",
    ),
    "logfire": Framework(
        "logfire",
        "fw_logfire.py",
        ("pydantic-ai", "openai"),
        "Logfire SDK (send_to_logfire=False) exporting to OTEL_EXPORTER_OTLP_ENDPOINT; pydantic-ai: "
        "logfire.instrument_pydantic_ai(); openai: logfire.instrument_openai() with logfire spans around a "
        "hand-written tool loop",
        exporter="Logfire's own BatchSpanProcessor(OTLPSpanExporter()) added for OTEL_EXPORTER_OTLP_ENDPOINT",
    ),
}


def installed_packages(python: Path) -> list[str]:
    """`pip freeze` of the virtualenv, read through importlib.metadata (uv-made venvs have no pip)."""
    code = (
        "import importlib.metadata as m; print('\\n'.join(sorted({f\"{d.metadata['Name']}=={d.version}\" "
        "for d in m.distributions()}, key=str.lower)))"
    )
    return subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.split()


def stored_body(body: bytes, content_type: str, content_encoding: str) -> tuple[bytes, str, str]:
    """What goes on disk for one request body, its file suffix, and how it relates to what arrived.

    A protobuf body is always stored gzipped, so no raw protobuf lies among the text fixtures (the suite
    checks that none of them looks like protobuf): a body that arrived gzipped is kept byte for byte,
    any other is gzipped here and gunzips to exactly what arrived.
    """
    if content_encoding == "gzip":
        return body, (".json.gz" if "json" in content_type else ".pb.gz"), "as received (gzip)"
    if "json" in content_type:
        return body, ".json", "as received"
    return gzip.compress(body, mtime=0), ".pb.gz", "gzipped here; gunzips to the body as received"


def capture(name: str, framework: Framework, mode: str, variant: str, python: Path, packages: list[str]) -> Path:
    slow = variant == "slow"
    model = ScriptedModel(delay_seconds=SLOW_MODEL_SECONDS if slow else 0.0)
    collector = Collector()
    model_server, collector_server = serve_model(model), serve_collector(collector)
    model_url = f"http://127.0.0.1:{model_server.server_port}/v1"
    collector_url = f"http://127.0.0.1:{collector_server.server_port}"
    directory = FIXTURES / f"{name}-{mode}-{variant}"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    result_path = directory / "outcome.tmp.json"
    env = dict(os.environ, **QUIET_ENV)
    env.update(
        OPENAI_BASE_URL=model_url,
        OPENAI_API_BASE=model_url,
        OTEL_EXPORTER_OTLP_ENDPOINT=collector_url,
        CAPTURE_COLLECTOR_URL=collector_url,
        CAPTURE_MODE=mode,
        CAPTURE_VARIANT=variant,
        CAPTURE_RESULT_PATH=str(result_path),
    )
    if slow:
        env["OTEL_BSP_SCHEDULE_DELAY"] = env["OTEL_BLRP_SCHEDULE_DELAY"] = str(SLOW_BATCH_DELAY_MS)
    else:
        env.pop("OTEL_BSP_SCHEDULE_DELAY", None)
        env.pop("OTEL_BLRP_SCHEDULE_DELAY", None)
    started = time.time()
    child = subprocess.run(
        [str(python), str(HERE / framework.module)],
        env=env,
        cwd=str(HERE),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    time.sleep(1.0)  # an exporter thread may still be posting after the process said goodbye
    requests = collector.take()
    model_server.shutdown()
    collector_server.shutdown()
    if result_path.exists():
        outcome = json.loads(result_path.read_text())
        result_path.unlink()
    else:
        outcome = {"status": "process failed", "returncode": child.returncode, "stderr_tail": child.stderr[-3000:]}
    batches = []
    for number, request in enumerate(requests, start=1):
        headers = request["headers"]
        content_type = headers.get("content-type", "")
        content_encoding = headers.get("content-encoding", "")
        data, suffix, stored = stored_body(request["body"], content_type, content_encoding)
        file_name = f"{number:03d}{suffix}"
        (directory / file_name).write_bytes(data)
        batches.append(
            {
                "file": file_name,
                "stored": stored,
                "arrival": request["arrival"],
                "after_seconds": round(request["at"] - started, 3),
                "method": request["method"],
                "path": request["path"],
                "content_type": content_type,
                "content_encoding": content_encoding or None,
                "bytes": len(request["body"]),
                "headers": headers,
                "is_otlp_protobuf": "protobuf" in content_type,
            }
        )
    manifest = {
        "framework": name,
        "mode": mode,
        "variant": variant,
        "instrumentation": framework.instrumentation,
        "exporter": framework.exporter,
        "json_files": "NNN.json is a conversion of the same protobuf bytes (protobuf JSON mapping with OTLP/JSON "
        "hex ids and integer enums), written by otlp_json.py; no exporter sent it",
        "run": {
            "script": f"python scripts/capture_frameworks/run.py {name} --mode {mode} --variant {variant}",
            "conversation": "user asks weather and time in Paris; scripted model calls get_weather(city=Paris), "
            "then get_time(city=Paris), then answers" + ("; get_time raises RuntimeError" if variant == "tool-error" else ""),
            "model_delay_seconds": model.delay_seconds,
            "OTEL_BSP_SCHEDULE_DELAY_ms": SLOW_BATCH_DELAY_MS if slow else "unset (SDK default 5000)",
            "OTEL_BLRP_SCHEDULE_DELAY_ms": SLOW_BATCH_DELAY_MS if slow else "unset (SDK default 1000)",
            "model_calls": model.calls,
            "process_returncode": child.returncode,
        },
        "outcome": outcome,
        "python": subprocess.run(
            [str(python), "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True
        ).stdout.strip(),
        "packages": packages,
        "batches": batches,
    }
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    subprocess.run([str(python), str(HERE / "otlp_json.py"), "finish", str(directory)], check=True)
    if child.returncode:
        print(child.stderr[-3000:], file=sys.stderr)
    return directory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("framework", nargs="?", choices=sorted(FRAMEWORKS))
    parser.add_argument("--mode", action="append", help="default: all the framework's modes")
    parser.add_argument("--variant", action="append", choices=VARIANTS, help="default: all")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if args.list or not args.framework:
        for name, framework in FRAMEWORKS.items():
            print(f"{name}: modes {', '.join(framework.modes)}; venv {VENVS / framework.group}")
        return
    framework = FRAMEWORKS[args.framework]
    python = VENVS / framework.group / "bin" / "python"
    if not python.exists():
        sys.exit(
            f"no virtualenv at {python.parent.parent}; make it with:\n"
            f"  python3.11 -m venv {VENVS / framework.group} && {python.parent}/pip install "
            f"-r {HERE / f'requirements-{framework.group}.txt'}"
        )
    packages = installed_packages(python)
    for mode in args.mode or framework.modes:
        for variant in args.variant or VARIANTS:
            directory = capture(args.framework, framework, mode, variant, python, packages)
            subprocess.run([str(python), str(HERE / "otlp_json.py"), "show", str(directory)])


if __name__ == "__main__":
    main()

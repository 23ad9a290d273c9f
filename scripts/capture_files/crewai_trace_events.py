"""CrewAI's execution trace, as crewai itself exports it: with tracing on, crewai 1.15 asks CrewAI AMP for a
grant (`POST /crewai_plus/api/v1/tracing/grants`, answered with a collector URL and a token) and sends its
spans there as OTLP/HTTP protobuf (`ExportTraceServiceRequest`). `CREWAI_PLUS_URL` names a local server here
that answers the grant with itself as the collector and keeps each body as it came.

The crews are those of crewai_files.py (one agent, two tools, the scripted local model), once with both tools
succeeding and once with `get_time` raising. Writes per crew `crew_trace_<name>.otlp.pb`: the OTLP request
bodies in the order they came, concatenated (protobuf merges repeated fields, so the bytes are one
ExportTraceServiceRequest); prints each request's method, path and size.

crewai exports a trace only where it could have asked a person (a terminal), so run it under `script`, in
crewai_files.py's virtualenv (crewai_requirements.txt); HOME and the working directory are temporary ones (no
CrewAI credentials or settings are read, nothing is left behind):
    script -qec "python scripts/capture_files/crewai_trace_events.py tests/fixtures/crewai" /dev/null
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import uuid
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import crewai_files  # noqa: E402  (sets the telemetry-off environment)


def serve_collector() -> tuple[ThreadingHTTPServer, list[dict]]:
    """Answers CrewAI AMP's grant with itself as the collector, then the OTLP posts; keeps every body."""
    kept: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _answer(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            kept.append({"method": self.command, "path": self.path, "type": self.headers.get("content-type"), "body": body})
            data = b""
            if self.path.endswith("/tracing/grants"):
                asked = json.loads(body)
                grant = {"tier": "ephemeral", "execution_uuid": asked["execution_uuid"], "token": uuid.uuid4().hex}
                grant["collector_url"] = f"http://127.0.0.1:{self.server.server_port}/v1/traces"
                grant["expires_at"] = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
                data = json.dumps(grant).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json" if data else "application/x-protobuf")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_POST = do_PATCH = do_PUT = _answer

        def do_GET(self):
            self._answer()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, kept


def main(out: Path) -> None:
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    collector, kept = serve_collector()
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as scratch:
        # crewai keeps a key, its task outputs and the run's `.crewai/last_run.json` under HOME and the working
        # directory: both temporary
        os.environ.update(HOME=home, CREWAI_PLUS_URL=f"http://127.0.0.1:{collector.server_port}", CREWAI_TRACING_ENABLED="true")
        os.chdir(scratch)
        with crewai_files.OpenAIServer() as server:
            for fail_time in (False, True):
                del kept[:]
                crewai_files.run(server, Path(scratch), fail_time=fail_time, log_ext="json")
                name = "tool_error" if fail_time else "ok"
                spans = [k for k in kept if k["path"] == "/v1/traces"]
                print(name, [(k["method"], k["path"], len(k["body"])) for k in kept])
                (out / f"crew_trace_{name}.otlp.pb").write_bytes(b"".join(k["body"] for k in spans))


if __name__ == "__main__":
    main(Path(sys.argv[1]))

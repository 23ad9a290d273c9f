"""Capture what the real LangSmith SDK sends when LANGSMITH_ENDPOINT names a server: its /info probe, then
its run batches, byte for byte, into tests/fixtures/langsmith/<endpoint>-<variant>/.

`python scripts/capture_sdks/capture_langsmith.py` (standard library only; the SDK runs in the Python given
by --python, default this one, which needs the `langsmith` and `openai` pinned in requirements-dev.txt).
The collector answers /info as the SDK's server would: `batch` says `use_multipart_endpoint: false` (the
SDK then posts JSON `{"post": [...], "patch": [...]}` to /runs/batch), `multipart` says true (it posts
multipart/form-data to /runs/multipart). The scripted model holds each call `--delay` seconds, so the root run's
start (its `post` half) is sent before its end (its `patch` half). The model is the scripted one of
scripts/capture_frameworks/servers.py; the API key is a placeholder and is not kept.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "scripts" / "capture_frameworks"))
from servers import SECRET_HEADERS, ScriptedModel, serve_model  # noqa: E402

OUT = REPO / "tests" / "fixtures" / "langsmith"


def serve_collector(multipart: bool) -> tuple[ThreadingHTTPServer, list[dict]]:
    kept: list[dict] = []
    config = {"size_limit": 100, "size_limit_bytes": 20_971_520, "scale_up_nthreads_limit": 16, "scale_up_qsize_trigger": 1000}
    config |= {"scale_down_nempty_trigger": 4, "use_multipart_endpoint": multipart}  # the SDK reads every key
    info = {"version": "capture", "batch_ingest_config": config, "instance_flags": {}}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _keep(self, body: bytes) -> None:
            headers = {k.lower(): ("<dropped>" if k.lower() in SECRET_HEADERS else v) for k, v in self.headers.items()}
            kept.append({"method": self.command, "path": self.path, "headers": headers, "body": body, "at": time.time()})

        def _answer(self, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._keep(b"")
            self._answer(info if self.path.startswith("/info") else {})

        def do_POST(self):
            self._keep(self.rfile.read(int(self.headers.get("content-length") or 0)))
            self._answer({})

        do_PATCH = do_POST

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, kept


def capture(python: str, endpoint: str, variant: str, delay: float) -> Path:
    model = serve_model(ScriptedModel(delay_seconds=delay))
    collector, kept = serve_collector(endpoint == "multipart")
    env = dict(
        os.environ,
        OPENAI_BASE_URL=f"http://127.0.0.1:{model.server_port}/v1",
        CAPTURE_VARIANT=variant,
        LANGSMITH_ENDPOINT=f"http://127.0.0.1:{collector.server_port}",
        LANGSMITH_API_KEY="capture-placeholder",
        LANGSMITH_TRACING="true",
    )
    argv = [python, str(HERE / "sdk_agents.py"), "langsmith"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    collector.shutdown()
    model.shutdown()
    folder = OUT / f"{endpoint}-{variant}"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    versions = subprocess.run([python, "-m", "pip", "freeze"], capture_output=True, text=True).stdout.split()
    requests = []
    for n, item in enumerate(kept, 1):
        kind = item["headers"].get("content-type", "")
        name = f"{n:03d}.{'json' if 'json' in kind else 'multipart' if 'multipart' in kind else 'empty'}"
        if item["body"]:
            (folder / name).write_bytes(item["body"])
        requests.append({k: v for k, v in item.items() if k not in ("body", "at")} | {"file": name if item["body"] else None})
    manifest = {
        "sdk": "langsmith",
        "endpoint": endpoint,
        "variant": variant,
        "model_delay_seconds": delay,
        "script": f"python scripts/capture_sdks/capture_langsmith.py --endpoint {endpoint} --variant {variant}",
        "answer": done.stdout.strip(),
        "returncode": done.returncode,
        "stderr_tail": done.stderr.strip().splitlines()[-5:],
        "python": sys.version.split()[0],
        "packages": [p for p in versions if p.split("==")[0].lower() in ("langsmith", "openai", "httpx", "requests", "orjson")],
        "requests": requests,
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--endpoint", choices=("batch", "multipart"), action="append")
    parser.add_argument("--variant", choices=("ok", "tool-error", "thread"), action="append")
    parser.add_argument("--delay", type=float, default=1.2)
    args = parser.parse_args()
    for endpoint in args.endpoint or ("batch", "multipart"):
        for variant in args.variant or ("ok", "tool-error"):
            print(capture(args.python, endpoint, variant, args.delay))


if __name__ == "__main__":
    main()

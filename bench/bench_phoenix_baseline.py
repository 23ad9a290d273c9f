"""Phoenix's own OTLP ingest on this machine, on the workload of `bench_otlp_order.py batched`, beside ours.

The OTLP ingest goal is a ratio to Phoenix (≥ 30 × its 161 spans/s, a figure measured on another
machine); this bench measures Phoenix here, in the same session as our own figure.

Each round runs `bench_otlp_order.batched` (200 traces × 100 spans in 80 OTLP/JSON requests, received
in this process into SQLite: our figure, printed by that bench as `otlp_batched_…`), keeping the very
bodies it received; then starts `phoenix serve` (SQLite in a fresh PHOENIX_WORKING_DIR under a temp
dir, 127.0.0.1 on free ports, telemetry and every request of its own to the internet off), waits for
/healthz, and posts the same 80 bodies, converted to OTLP/protobuf beforehand (Phoenix's /v1/traces
takes protobuf only), one after the other on one keep-alive connection as an exporter does, retrying
a 503 (Phoenix's span queue full) as an exporter would. Phoenix stores spans asynchronously, so the
clock runs from the first post until its GraphQL API (`projects { recordCount }`) counts all 20,000
spans: polled every 0.1 s near the end, up to 2 s apart while far from it (each poll is a query
Phoenix answers while it ingests). If the count stops growing for 120 s, what it stored is printed
(a drop). After the server stops, its SQLite file's `spans` rows are counted too.

Printed per round (JSON lines): Phoenix's spans/s with its version, requests retried, seconds to the
last post's answer, the server's CPU seconds over the window and spans per CPU-second; then
`otlp_batched_ours_vs_phoenix`: our spans/s beside Phoenix's, ratio ours ÷ Phoenix's (the goal ≥ 30),
and the same in spans per CPU-second (ours: process_time around our receives). After the last round,
the medians. Our figure has no HTTP in it (the receiver called in this process), Phoenix's has.

Run (Phoenix in its own virtualenv, never the app's; see phoenix_baseline/requirements.txt):
    python3 -m venv bench/phoenix_baseline/.venv
    bench/phoenix_baseline/.venv/bin/pip install -r bench/phoenix_baseline/requirements.txt
    python bench/bench_phoenix_baseline.py [ROUNDS]      # ROUNDS defaults to 1
PHOENIX_VENV points at another virtualenv holding Phoenix. Without one the bench prints a `skipped`
line and exits 0 (so `make bench` needs no Phoenix); the test suite never needs Phoenix.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_otlp_order as order  # noqa: E402
from common import report  # noqa: E402

from replay_core.cli.serve import free_port  # noqa: E402

VENV = Path(os.environ.get("PHOENIX_VENV", HERE / "phoenix_baseline" / ".venv"))
SPANS = order.TRACES * 100
POLL_S, POLL_MAX_S = 0.1, 2.0
STALL_S = 120.0
COUNT = b'{"query": "{ projects { edges { node { recordCount } } } }"}'
# Phoenix's switches for a local, offline server (phoenix/config.py): no telemetry pixels, no request to
# the internet of its own (fonts, the WASM sandbox download), no assistant, no MCP mount, quiet migrations.
OFFLINE = {
    "PHOENIX_TELEMETRY_ENABLED": "false",
    "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
    "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
    "PHOENIX_ENABLE_MCP_SERVER": "false",
    "PHOENIX_ENABLE_PROMETHEUS": "false",
    "PHOENIX_LOG_MIGRATIONS": "false",
}


def protobuf(body: bytes) -> bytes:
    """An OTLP/JSON body as OTLP/protobuf: ids are hex in OTLP/JSON, base64 in protobuf's JSON mapping."""
    doc = orjson.loads(body)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in s:
                        s[key] = base64.b64encode(bytes.fromhex(s[key])).decode()
    return ParseDict(doc, ExportTraceServiceRequest()).SerializeToString()


def ours() -> tuple[list[bytes], float, float]:
    """`bench_otlp_order.batched` as it runs alone; returns the bodies it received, its spans/s and our spans per
    CPU-second (process_time around its receives)."""
    got: dict = {}
    received, reported = order._received, order.report

    def keep(store, bodies, clock=time.perf_counter):
        got["bodies"] = bodies
        start = time.process_time()
        took = received(store, bodies, clock)
        got["cpu_s"] = time.process_time() - start
        return took

    def figure(bench, value, *args, **kwargs):
        got["rate"] = value
        reported(bench, value, *args, **kwargs)

    order._received, order.report = keep, figure
    try:
        order.batched()
    finally:
        order._received, order.report = received, reported
    return got["bodies"], got["rate"], SPANS / got["cpu_s"]


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime


class Phoenix:
    """`phoenix serve` from VENV on SQLite in `workdir`, on 127.0.0.1."""

    def __init__(self, workdir: str) -> None:
        self.workdir, self.port = workdir, free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
        env |= OFFLINE | {
            "PHOENIX_WORKING_DIR": workdir,
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.port),
            "PHOENIX_GRPC_PORT": str(free_port()),
        }
        self.log = open(Path(workdir) / "serve.log", "wb")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            [str(VENV / "bin" / "phoenix"), "serve"], env=env, cwd=workdir, stdout=self.log, stderr=subprocess.STDOUT
        )
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def call(self, method: str, path: str, body: bytes | None = None, kind: str = "") -> tuple[int, bytes]:
        self.conn.request(method, path, body, {"Content-Type": kind} if kind else {})
        answer = self.conn.getresponse()
        return answer.status, answer.read()

    def ready(self, within_s: float = 300) -> str:
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"phoenix serve exited {self.proc.returncode}: {self.tail()}")
            try:
                if self.call("GET", "/healthz")[0] == 200:
                    return self.call("GET", "/arize_phoenix_version")[1].decode().strip()
            except OSError:
                self.conn.close()
            time.sleep(0.5)
        raise RuntimeError(f"phoenix serve not ready in {within_s} s: {self.tail()}")

    def stored(self) -> int:
        status, answer = self.call("POST", "/graphql", COUNT, "application/json")
        if status != 200:
            raise RuntimeError(f"graphql {status}: {answer[:300]!r}")
        return sum(e["node"]["recordCount"] for e in orjson.loads(answer)["data"]["projects"]["edges"])

    def tail(self) -> str:
        self.log.flush()
        return (Path(self.workdir) / "serve.log").read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        self.conn.close()
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def phoenix(bodies: list[bytes]) -> dict:
    """The bodies posted to a fresh Phoenix; spans/s from the first post until it counts them all."""
    pb = [protobuf(b) for b in bodies]
    with tempfile.TemporaryDirectory(prefix="phoenix-bench-") as tmp:
        server = Phoenix(tmp)
        try:
            version = server.ready()
            retried = 0
            cpu0, start = _cpu_s(server.proc.pid), time.perf_counter()
            for b in pb:
                while True:
                    status, answer = server.call("POST", "/v1/traces", b, "application/x-protobuf")
                    if status == 200:
                        break
                    if status != 503:
                        raise RuntimeError(f"POST /v1/traces {status}: {answer[:300]!r}")
                    retried += 1
                    time.sleep(0.1)
            posted_s = time.perf_counter() - start
            count, last, grew = 0, -1, time.perf_counter()
            while True:
                count = server.stored()
                now = time.perf_counter()
                if count >= SPANS:
                    break
                if count != last:
                    last, grew = count, now
                elif now - grew > STALL_S:
                    break
                rate = count / (now - start)  # a poll costs Phoenix a query: few while far from done
                time.sleep(min(POLL_MAX_S, max(POLL_S, (SPANS - count) / rate / 4 if rate else POLL_S)))
            took, cpu = now - start, _cpu_s(server.proc.pid) - cpu0
        finally:
            server.stop()
        with sqlite3.connect(Path(tmp) / "phoenix.db") as db:
            rows = db.execute("SELECT count(*) FROM spans").fetchone()[0]
    return {
        "version": version,
        "spans_per_s": count / took,
        "stored": count,
        "rows_in_its_sqlite": rows,
        "complete": count == SPANS,
        "seconds": round(took, 2),
        "posted_s": round(posted_s, 2),
        "requests_retried_503": retried,
        "server_cpu_s": round(cpu, 2),
        "spans_per_cpu_s": count / cpu if cpu else None,
    }


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    if not (VENV / "bin" / "phoenix").exists():
        print(json.dumps({"bench": "phoenix_baseline", "skipped": f"no Phoenix in {VENV} (PHOENIX_VENV)"}), flush=True)
        return
    pairs = []
    for _ in range(rounds):
        bodies, ours_rate, ours_cpu_rate = ours()
        phx = phoenix(bodies)
        rate = phx.pop("spans_per_s")
        report(f"phoenix_otlp_batched_{order.TRACES}x100_spans_{len(bodies)}_requests", rate, "spans/s", "-", None, **phx)
        report("otlp_batched_ours_vs_phoenix", ours_rate, "spans/s", ">= 30x phoenix", rate)
        if phx["spans_per_cpu_s"]:
            report("otlp_batched_ours_vs_phoenix_cpu", ours_cpu_rate, "spans/cpu-s", "-", phx["spans_per_cpu_s"], cpu=True)
        pairs.append((ours_rate, rate))
    if rounds > 1:
        report(
            f"otlp_batched_ours_vs_phoenix_median_of_{rounds}",
            statistics.median(o for o, _ in pairs),
            "spans/s",
            ">= 30x phoenix",
            statistics.median(p for _, p in pairs),
            median_ratio=round(statistics.median(o / p for o, p in pairs), 2),
        )


if __name__ == "__main__":
    main()

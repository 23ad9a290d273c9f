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

Between the two, the same protobuf bodies go to our own API served alone under uvicorn in a process of
its own (SQLite in a temp dir, as the tests' served_api), posted the same way: it answers a body once
stored, so its clock stops at the last answer; then its runs are checked as `batched` checks them.

Printed per round (JSON lines): Phoenix's spans/s with its version, requests retried, seconds to the
last post's answer, the server's CPU seconds over the window and spans per CPU-second; then each of
ours beside Phoenix's, ratio ours ÷ Phoenix's (the goal ≥ 30): `otlp_batched_ours_vs_phoenix` (the
receiver in this process: no HTTP, Phoenix's figure has HTTP) and `…_served_vs_phoenix` (over HTTP, like
Phoenix), each also in spans per CPU-second (`…_cpu`: process_time around our receives; the servers'
CPU from /proc). After the last round, the median of each ratio.

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
import secrets
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
from common import SERVE_API, report  # noqa: E402

from replay_core.cli.serve import free_port  # noqa: E402
from replay_core.storage.store import Store  # noqa: E402

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


class Served:
    """A server started from `argv` in `workdir` (its output in serve.log there), answering on 127.0.0.1:port."""

    def __init__(self, argv: list[str], env: dict[str, str], workdir: str, port: int, headers: dict[str, str]) -> None:
        self.workdir, self.headers, self.name = workdir, headers, Path(argv[0]).name
        self.log = open(Path(workdir) / "serve.log", "wb")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(argv, env=env, cwd=workdir, stdout=self.log, stderr=subprocess.STDOUT)
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def call(self, method: str, path: str, body: bytes | None = None, kind: str = "") -> tuple[int, bytes]:
        self.conn.request(method, path, body, self.headers | ({"Content-Type": kind} if kind else {}))
        answer = self.conn.getresponse()
        return answer.status, answer.read()

    def ready(self, within_s: float = 300) -> None:
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited {self.proc.returncode}: {self.tail()}")
            try:
                if self.call("GET", "/healthz")[0] == 200:
                    return
            except OSError:
                self.conn.close()
            time.sleep(0.5)
        raise RuntimeError(f"{self.name} not ready in {within_s} s: {self.tail()}")

    def post(self, bodies: list[bytes]) -> int:
        """The bodies posted one after the other as an exporter does, a 503 (queue full) retried; the retries."""
        retried = 0
        for b in bodies:
            while True:
                status, answer = self.call("POST", "/v1/traces", b, "application/x-protobuf")
                if status == 200:
                    break
                if status != 503:
                    raise RuntimeError(f"POST /v1/traces {status}: {answer[:300]!r}")
                retried += 1
                time.sleep(0.1)
        return retried

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime

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


def phoenix_served(workdir: str) -> Served:
    """`phoenix serve` from VENV on SQLite in `workdir`, offline."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
    env |= OFFLINE | {
        "PHOENIX_WORKING_DIR": workdir,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
    }
    return Served([str(VENV / "bin" / "phoenix"), "serve"], env, workdir, port, {})


def phoenix_stored(server: Served) -> int:
    status, answer = server.call("POST", "/graphql", COUNT, "application/json")
    if status != 200:
        raise RuntimeError(f"graphql {status}: {answer[:300]!r}")
    return sum(e["node"]["recordCount"] for e in orjson.loads(answer)["data"]["projects"]["edges"])


def phoenix(pb: list[bytes]) -> dict:
    """The protobuf bodies posted to a fresh Phoenix; spans/s from the first post until it counts them all."""
    with tempfile.TemporaryDirectory(prefix="phoenix-bench-") as tmp:
        server = phoenix_served(tmp)
        try:
            server.ready()
            version = server.call("GET", "/arize_phoenix_version")[1].decode().strip()
            cpu0, start = server.cpu_s(), time.perf_counter()
            retried = server.post(pb)
            posted_s = time.perf_counter() - start
            count, last, grew, polls = 0, -1, time.perf_counter(), 0
            while True:
                count, polls = phoenix_stored(server), polls + 1
                now = time.perf_counter()
                if count >= SPANS:
                    break
                if count != last:
                    last, grew = count, now
                elif now - grew > STALL_S:
                    break
                rate = count / (now - start)  # a poll costs Phoenix a query: few while far from done
                time.sleep(min(POLL_MAX_S, max(POLL_S, (SPANS - count) / rate / 4 if rate else POLL_S)))
            took, cpu = now - start, server.cpu_s() - cpu0
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
        "count_polls": polls,
        "server_cpu_s": round(cpu, 2),
        "spans_per_cpu_s": count / cpu if cpu else None,
    }


# The API alone under uvicorn in a process of its own, as the tests' served_api runs it.
def ours_served(pb: list[bytes]) -> tuple[float, float]:
    """The same protobuf bodies posted to our API served on SQLite: it answers once a body is stored, so the
    clock stops at the last answer. Spans/s and spans per server CPU-second."""
    token = secrets.token_urlsafe(16)  # a throwaway, for this server only
    with tempfile.TemporaryDirectory(prefix="ours-bench-") as tmp:
        url, port = f"sqlite:///{tmp}/served.db", free_port()
        argv = [sys.executable, "-c", SERVE_API, url, str(port), token]
        server = Served(argv, dict(os.environ), tmp, port, {"Authorization": f"Bearer {token}"})
        try:
            server.ready()
            cpu0, start = server.cpu_s(), time.perf_counter()
            server.post(pb)
            took, cpu = time.perf_counter() - start, server.cpu_s() - cpu0
        finally:
            server.stop()
        store = Store(url)
        assert len(store.list_sessions(limit=100)) == order.SESSIONS
        assert sum(len(store.load_steps(f"conv-{s}")) for s in range(order.SESSIONS)) == order.TRACES * (1 + order.ROUNDS * 4)
        store.close()
    return SPANS / took, SPANS / cpu


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    if not (VENV / "bin" / "phoenix").exists():
        print(json.dumps({"bench": "phoenix_baseline", "skipped": f"no Phoenix in {VENV} (PHOENIX_VENV)"}), flush=True)
        return
    got: dict[str, list[float]] = {}
    for _ in range(rounds):
        bodies, ours_rate, ours_cpu_rate = ours()
        pb = [protobuf(b) for b in bodies]
        served_rate, served_cpu_rate = ours_served(pb)
        phx = phoenix(pb)
        rate, cpu_rate = phx.pop("spans_per_s"), phx["spans_per_cpu_s"] or 0.0
        report(f"phoenix_otlp_batched_{order.TRACES}x100_spans_{len(bodies)}_requests", rate, "spans/s", "-", None, **phx)
        figures = {
            "otlp_batched_ours_vs_phoenix": (ours_rate, rate, "spans/s"),
            "otlp_batched_ours_vs_phoenix_cpu": (ours_cpu_rate, cpu_rate, "spans/cpu-s"),
            "otlp_batched_ours_served_vs_phoenix": (served_rate, rate, "spans/s"),
            "otlp_batched_ours_served_vs_phoenix_cpu": (served_cpu_rate, cpu_rate, "spans/cpu-s"),
        }
        for name, (value, baseline, unit) in figures.items():
            report(name, value, unit, ">= 30x phoenix", baseline, cpu=unit.endswith("cpu-s"))
            got.setdefault(name, []).append(value / baseline if baseline else 0.0)
    if rounds > 1:
        print(json.dumps({f"median_ratio_of_{rounds}": {k: round(statistics.median(v), 2) for k, v in got.items()}}), flush=True)


if __name__ == "__main__":
    main()

"""HTTP ingest through the served app (`streamlit run streamlit_app.py`): 8 writers at once, each
an agent of its own (a process: client CPU is counted, `client_cpu_s`), sending its runs' steps in
batches of 500, on SQLite and on PostgreSQL (a throwaway database). Baseline: the same batches
ingested in process (redaction and Store write, no HTTP, no validation), one after another.
`one_writer` is the same served app fed by one client, for context. On PostgreSQL the served app
writes in two lanes at once (storage.worker.WRITE_LANES), the baseline in one. `server_cpu_us_per_step`: the
served app's CPU time (user + system, from /proc; its worker processes included, `workers_cpu_s`)
over the 8 writers' ingest, per step."""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import orjson
from sqlalchemy.engine import make_url

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from common import generated_objects, postgres_databases, report, timed  # noqa: E402

from replay_core.events import parse_event  # noqa: E402
from replay_core.ingest.pipeline import ingest  # noqa: E402
from replay_core.storage.store import Store  # noqa: E402
from replay_core.storage.worker import WRITE_LANES  # noqa: E402

WRITERS, RUNS_PER_WRITER, PER_SESSION, BATCH = 8, 2, 5_000, 500
SESSIONS = WRITERS * RUNS_PER_WRITER
STEPS = SESSIONS * PER_SESSION
TOKEN = "bench-token"


def requests(prefix: str) -> list[list[tuple[str, bytes]]]:
    """Per run, (path, body) in the order an agent sends them: open, steps in batches of 500, end."""
    runs: dict[str, list[tuple[str, bytes]]] = {}
    pending: list[dict] = []
    for obj in generated_objects(SESSIONS, PER_SESSION):
        sid = obj["session_id"] = f"{prefix}{obj['session_id']}"
        out = runs.setdefault(sid, [])
        if obj["kind"] == "session":
            out.append(("/api/v1/sessions", orjson.dumps(obj)))
        elif obj["kind"] == "step":
            pending.append(obj)
            if len(pending) == BATCH:
                out.append((f"/api/v1/sessions/{sid}/steps", orjson.dumps(pending)))
                pending = []
        else:
            out.append((f"/api/v1/sessions/{sid}/end", orjson.dumps(obj)))
    return list(runs.values())


def _writer(base: str, bodies: list[tuple[str, bytes]], ready, start, results) -> None:
    """One agent: its own connection, its runs' requests in order; reports steps stored, CPU spent, when it finished."""
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    with httpx.Client(base_url=base, headers=headers, timeout=120) as http:
        http.get("/healthz").raise_for_status()  # connected before the clock starts
        ready.release()
        start.wait()
        cpu, stored = time.process_time(), 0
        for path, body in bodies:
            res = http.post(path, content=body)
            res.raise_for_status()
            stored += res.json()["steps"]
        results.put((stored, time.process_time() - cpu, time.perf_counter()))


def over_http(base: str, runs: list[list[tuple[str, bytes]]], writers: int) -> tuple[float, float]:
    """Steps/s with `writers` client processes sharing the runs out, and the clients' CPU seconds."""
    ctx = mp.get_context("fork")
    ready, start, results = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
    shares = [[req for run in runs[w::writers] for req in run] for w in range(writers)]
    procs = [ctx.Process(target=_writer, args=(base, share, ready, start, results)) for share in shares]
    for p in procs:
        p.start()
    for _ in procs:
        ready.acquire()
    began = time.perf_counter()  # CLOCK_MONOTONIC: the same clock in every process
    start.set()
    done = [results.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    stored = sum(d[0] for d in done)
    assert stored == STEPS, stored
    return STEPS / (max(d[2] for d in done) - began), sum(d[1] for d in done)


def _children(of: int | None = None) -> list[int]:
    found = []
    for task in Path(f"/proc/{of or os.getpid()}/task").iterdir():
        found += [int(pid) for pid in (task / "children").read_text().split()]
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (Linux /proc), its children reaped so far included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def workers_cpu_seconds(server: int) -> float:
    """CPU of the served app's running child processes (its write and OTLP workers, storage.worker)."""
    return sum(cpu_seconds(pid) for pid in _children(server))


def in_process(url: str) -> float:
    """The baseline: the same batches redacted and stored by a Store in this process, one after another."""
    store = Store(url)
    events = [parse_event(o) for o in generated_objects(SESSIONS, PER_SESSION)]

    def run():
        return sum(ingest(store, events[i : i + BATCH]).steps for i in range(0, len(events), BATCH))

    stored, seconds = timed(run)
    assert stored == STEPS, stored
    store.close()
    return STEPS / seconds


def warmed(base: str, server: int, lanes: int) -> None:
    """A running server's state, not timed: its first write starts the write workers (storage.worker,
    one per lane), and writes from several threads at once, once they run, wait out their warm-up."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    step = [{"type": "think", "content": "warm"}]
    with httpx.Client(base_url=base, headers=headers, timeout=120) as http:
        http.post("/api/v1/sessions/warm-up/steps", json=step).raise_for_status()
        deadline = time.monotonic() + 60
        while len(_children(server)) < 1 + lanes:  # the OTLP worker and the write workers
            if time.monotonic() > deadline:
                raise RuntimeError("the served app started no write worker")
            time.sleep(0.05)
        with ThreadPoolExecutor(WRITERS) as pool:
            for _ in range(3):
                list(
                    pool.map(
                        lambda n: http.post(f"/api/v1/sessions/warm-up-{n}/steps", json=step).raise_for_status(), range(WRITERS)
                    )
                )


def measure(label: str, goal: str, baseline_url: str, served_url: str) -> None:
    from apptest_helpers import served_app

    base_rate = in_process(baseline_url)
    Store(served_url).close()  # migrated before the server starts
    before = set(_children())
    with served_app(served_url, AGENT_REPLAY_API_TOKENS=TOKEN) as base:
        (server,) = set(_children()) - before  # the `streamlit run` process
        warmed(base, server, WRITE_LANES[make_url(served_url).get_backend_name()])
        runs = requests("w8-")
        cpu, workers = cpu_seconds(server), workers_cpu_seconds(server)
        value, client_cpu = over_http(base, runs, WRITERS)
        server_cpu, workers_cpu = cpu_seconds(server) - cpu, workers_cpu_seconds(server) - workers
        one, _ = over_http(base, requests("w1-"), 1)
    report(
        f"http_ingest_{WRITERS}_writers_batches_of_{BATCH}_{label}",
        value,
        "steps/s",
        goal,
        base_rate,
        steps=STEPS,
        client_cpu_s=round(client_cpu, 3),
        client_cpu_us_per_step=round(client_cpu / STEPS * 1e6, 2),
        server_cpu_s=round(server_cpu, 3),
        workers_cpu_s=round(workers_cpu, 3),
        server_cpu_us_per_step=round((server_cpu + workers_cpu) / STEPS * 1e6, 2),
        one_writer=round(one, 1),
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        measure("sqlite", ">= 30000", f"sqlite:///{tmp}/direct.db", f"sqlite:///{tmp}/served.db")
    with postgres_databases(2, "http_ingest_8_writers") as urls:
        if urls:
            measure("postgres", ">= 20000", *urls)


if __name__ == "__main__":
    main()

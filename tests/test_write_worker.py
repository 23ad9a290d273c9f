"""The HTTP routes' writes stored by the write worker process (storage/worker.py `OffloadedWrites`):
every answer as the server's own thread would give it (counts, duplicates, 409 and 422 with their
field, 503 when the database cannot take it), nothing written in the server's process while the
worker can write, and a dead or lost worker survived without losing or doubling a step.
On SQLite and PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
import pytest
from test_otlp_batches import AUTH
from test_otlp_worker import answers_503_and_degraded, store_with_its_folder_gone
from test_recorder import Served, api

from replay_core.events import parse_event
from replay_core.storage import worker as store_worker
from replay_core.storage.store import Store, WriteBatch


@pytest.fixture
def in_the_worker(monkeypatch):
    """The server's own Store.write_batches fails the test: every write must be the worker's."""

    def not_here(*args, **kwargs):
        raise AssertionError("written in the server's process, not in the write worker")

    monkeypatch.setattr(Store, "write_batches", not_here)
    store_worker.WRITES[0].start()  # else the first writes are the thread's, while the worker starts


def _steps(sid: str, first: int, n: int) -> list[dict]:
    return [
        {
            "seq": s,
            "event_id": f"{sid}-{s}",
            "type": "tool_call" if s % 2 else "tool_result",
            "tool_name": "search",
            "content": f"step {s} of {sid}",
        }
        for s in range(first, first + n)
    ]


def test_the_routes_write_in_the_worker_and_answer_as_the_thread(store, in_the_worker):
    with Served(api(store)) as base, httpx.Client(base_url=base, headers=AUTH, timeout=60) as http:
        assert http.post("/api/v1/sessions", json={"session_id": "w-run", "agent_id": "a1"}).status_code == 200
        first = http.post("/api/v1/sessions/w-run/steps", json=_steps("w-run", 1, 40))
        assert first.status_code == 200, first.text
        assert (first.json()["steps"], first.json()["duplicates"]) == (40, 0)
        again = http.post("/api/v1/sessions/w-run/steps", json=_steps("w-run", 31, 20)).json()
        assert (again["steps"], again["duplicates"]) == (10, 10)
        assert http.post("/api/v1/sessions/w-run/end", json={"status": "succeeded"}).status_code == 200
        conflict = http.post("/api/v1/sessions/w-run/end", json={"status": "failed"})
        assert conflict.status_code == 409, conflict.text
        assert conflict.json()["errors"][0]["loc"] == "status"
        unknown = http.post("/api/v1/sessions", json={"session_id": "w-replay", "replay_of": "no-such-run"})
        assert unknown.status_code == 422, unknown.text
        assert unknown.json()["errors"][0]["loc"] == "replay_of"
    assert store_worker.WRITES[0].current is not None and store_worker.WRITES[0].current.process.poll() is None
    assert [s.seq for s in store.load_steps("w-run")] == list(range(1, 51))
    assert store.get_session("w-run")["status"] == "succeeded"
    assert store.get_session("w-replay") is None


def _started_within(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not store_worker.WRITES[0].started():
        assert time.monotonic() < deadline, "no write worker started"
        time.sleep(0.05)


def test_the_write_worker_starts_at_the_first_write_not_with_the_server(store):
    """Spawned with the server, its imports took CPU from the server's first page (0.70 -> 0.90 s on 2
    cores): the first write starts it, and is written in the thread meanwhile."""
    store_worker.WRITES[0].stop()
    with Served(api(store)) as base, httpx.Client(base_url=base, headers=AUTH, timeout=60) as http:
        assert http.get("/healthz").status_code == 200
        assert not store_worker.WRITES[0].started()
        assert http.post("/api/v1/sessions/s-run/steps", json=_steps("s-run", 1, 3)).json()["steps"] == 3
        _started_within(30)
        assert http.post("/api/v1/sessions/s-run/steps", json=_steps("s-run", 4, 3)).json()["steps"] == 3
    assert [s.seq for s in store.load_steps("s-run")] == list(range(1, 7))


def test_a_killed_write_worker_is_replaced(store):
    with Served(api(store)) as base, httpx.Client(base_url=base, headers=AUTH, timeout=60) as http:
        assert http.post("/api/v1/sessions/k-run/steps", json=_steps("k-run", 1, 5)).status_code == 200
        with store_worker.WRITES[0].lock:
            dead = store_worker.WRITES[0]._process().process
        dead.kill()
        dead.wait()
        res = http.post("/api/v1/sessions/k-run/steps", json=_steps("k-run", 6, 5))
        assert res.status_code == 200 and res.json()["steps"] == 5, res.text  # in the thread, a new worker starting
        _started_within(30)
        assert store_worker.WRITES[0].current.process.pid != dead.pid
        res = http.post("/api/v1/sessions/k-run/steps", json=_steps("k-run", 11, 5))
        assert res.status_code == 200 and res.json()["steps"] == 5, res.text  # in the new one
    assert len(store.load_steps("k-run")) == 15


def test_a_write_worker_lost_mid_write_leaves_the_write_to_the_thread(store, monkeypatch):
    """The answer never comes back: the thread writes the batch, and what the worker may have committed
    first is an exact duplicate, skipped: nothing lost, nothing twice."""

    def lost(pipe):
        raise EOFError("the other side closed the pipe")

    store_worker.WRITES[0].start()
    monkeypatch.setattr(store_worker, "_read", lost)
    with Served(api(store)) as base, httpx.Client(base_url=base, headers=AUTH, timeout=60) as http:
        res = http.post("/api/v1/sessions/l-run/steps", json=_steps("l-run", 1, 8))
        assert res.status_code == 200, res.text
        assert res.json()["steps"] + res.json()["duplicates"] == 8
    assert store_worker.WRITES[0].current is None
    assert [s.seq for s in store.load_steps("l-run")] == list(range(1, 9))


def test_a_database_only_this_process_sees_is_written_in_the_thread(monkeypatch, tmp_path):
    """An in-memory database, and one on an engine the caller made (its connection settings, such as
    PostgreSQL's read-only option, would not reach the worker), stay in the thread."""

    def no_worker(*args, **kwargs):
        raise AssertionError("a database only this process sees sent to the worker")

    monkeypatch.setattr(store_worker.WRITES[0], "run", no_worker)
    from replay_core.storage.store import make_engine

    url = f"sqlite:///{tmp_path / 'own.db'}"
    own = Store(url, engine=make_engine(url))
    shared = Store(url)
    assert store_worker.shared_url(own) is None and store_worker.shared_url(shared) == url
    own.close()
    shared.close()
    memory = Store("sqlite://")
    try:
        assert store_worker.shared_url(memory) is None
        batch = WriteBatch()
        for obj in _steps("m-run", 1, 3):
            batch.add(parse_event({**obj, "kind": "step", "session_id": "m-run"}))
        counts: list = []
        assert store_worker.OffloadedWrites(memory).write_batches([batch], counts=counts, default_source="api").steps == 3
        assert counts == [(3, 0)] and len(memory.load_steps("m-run")) == 3
    finally:
        memory.close()


def test_a_database_the_write_worker_cannot_write_answers_503(tmp_path):
    """The database's own error comes back whole from the worker (SQLite's "unable to open database
    file", its directory gone): 503 with Retry-After, and /healthz says degraded."""
    store_worker.WRITES[0].start()
    answers_503_and_degraded(store_with_its_folder_gone(tmp_path), "/api/v1/sessions/g-run/steps", json=_steps("g-run", 1, 3))


def test_a_workers_start_imports_only_what_its_jobs_need():
    """A served app starts the passes' worker, then a write and an OTLP worker as it is used: each start is
    its imports. The warm-ups import, they do not migrate a throwaway database (alembic: a fifth of a start);
    the passes' worker leaves the webhook's HTTP client, the runs' comparison and the schedules' loop to the
    pass that needs them."""
    probe = (
        "import sys\n"
        "from replay_core.storage.worker import warm_writes\n"
        "from replay_core.ingest.otlp_worker import warm\n"
        "import replay_core.monitors.check\n"
        "warm_writes(); warm()\n"
        "heavy = ('alembic', 'httpx', 'replay_core.whatif.results', 'replay_core.monitors.loop')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == "[]", proc.stdout + proc.stderr

"""Big OTLP bodies received in the worker process (ingest/otlp_worker.py): the same runs stored as
in the server's thread, the same refusals, the server's redaction settings, a dead worker survived.
On SQLite and PostgreSQL; WORKER_FROM is lowered so that small bodies take the worker's path."""

from __future__ import annotations

import time

import httpx
import orjson
import pytest
from test_otlp_batches import AUTH, CHAT, ROOT, TOOL, _body, _picture, _span, chain_body
from test_recorder import Served, api

from replay_core.ingest import otlp_receiver, otlp_worker
from replay_core.ingest.formats import otel
from replay_core.storage import worker as store_worker
from replay_core.storage.store import Store, WriteRefused

ROOT_START = int(ROOT["startTimeUnixNano"])


@pytest.fixture
def via_worker(monkeypatch):
    """Every body goes to the worker; the server's own receive fails the test if it is called."""
    monkeypatch.setattr(otlp_worker, "WORKER_FROM", 0)

    def not_here(*args, **kwargs):
        raise AssertionError("received in the server's process, not in the worker")

    monkeypatch.setattr(otlp_worker, "receive_here", not_here)


def _in_thread(tmp_path, name: str, bodies: list[bytes]) -> list[tuple]:
    reference = Store(f"sqlite:///{tmp_path / name}")
    for body in bodies:
        otlp_receiver.receive(reference, body, "application/json")
    try:
        return _picture(reference)
    finally:
        reference.close()


def test_batches_joined_in_the_worker_store_what_the_thread_stores(store, via_worker, tmp_path):
    """A late root carrying session.id, a tool span answering a model call of an earlier batch, a retried
    batch (exact dedupe) and a 3,000-deep chain: all through the worker process."""
    bodies = [_body([TOOL]), _body([CHAT]), _body([ROOT]), _body([ROOT, CHAT, TOOL]), chain_body(3_000)]
    for body in bodies:
        report = otlp_worker.receive(store, body, "application/json")
    assert report.steps == 3_000
    assert _picture(store) == _in_thread(tmp_path, "ref.db", bodies)
    assert sorted(s.seq for s in store.load_steps("conv-hand")) == [1, 2, 3, 4]
    assert store.get_session("conv-hand")["status"] == "succeeded"


def test_the_worker_refuses_what_the_thread_refuses(store, via_worker):
    no_ids = _body([{"name": "x", "startTimeUnixNano": "1764000000000000000"}])
    for body, error in ((b"{not json", otel.OtlpError), (no_ids, otel.OtlpError)):
        with pytest.raises(error) as far:
            otlp_worker.receive(store, body, "application/json")
        with pytest.raises(error) as near:
            otlp_receiver.receive(store, body, "application/json")
        assert str(far.value) == str(near.value) and str(far.value)
    unknown = orjson.loads(_body([ROOT]))
    unknown["resourceSpans"][0]["resource"]["attributes"] = [
        {"key": "agent_replay.session", "value": {"stringValue": '{"replay_of": "no-such-run"}'}}
    ]
    with pytest.raises(WriteRefused) as refused:
        otlp_worker.receive(store, orjson.dumps(unknown), "application/json")
    assert refused.value.field == "replay_of" and refused.value.status == 422
    assert store.list_sessions() == []


def test_a_bad_body_answers_400_naming_the_span_when_the_worker_reads_it(store, via_worker):
    bad = _body([CHAT, {"traceId": "zz", "spanId": "a000000000000009", "name": "broken"}])
    with Served(api(store)) as base, httpx.Client(base_url=base, headers=AUTH, timeout=60) as http:
        res = http.post("/v1/traces", content=bad, headers={"Content-Type": "application/json"})
        assert res.status_code == 400, res.text
        assert "spans[1]" in res.json()["detail"]
        ok = http.post("/v1/traces", content=_body([ROOT, CHAT, TOOL]), headers={"Content-Type": "application/json"})
        assert ok.status_code == 200, ok.text
    assert len(store.load_steps("conv-hand")) == 4


def test_the_worker_redacts_with_the_servers_current_settings(store, via_worker, monkeypatch):
    otlp_worker.WORKER.start()  # running before the setting changes: the setting must still reach it
    monkeypatch.setenv("AGENT_REPLAY_REDACT_KEYS", "zebra_code")
    secret_span = _span(
        "a000000000000005",
        "plan",
        "a000000000000001",
        ROOT_START + 10,
        ROOT_START + 20,
        zebra_code="opensesame-91",
        note="sk-proj-" + "A1b2C3d4" * 6,
    )
    otlp_worker.receive(store, _body([ROOT, secret_span]), "application/json")
    stored = orjson.dumps([s.model_dump(mode="json") for s in store.load_steps("conv-hand")])
    assert b"opensesame-91" not in stored and b"A1b2C3d4A1b2C3d4" not in stored
    assert b"zebra_code" in stored  # the key kept, its value masked


def test_the_worker_starts_at_the_first_otlp_request_not_with_the_server(store):
    """Started with the API, its imports took CPU from the server's first page, and an app that never
    receives OTLP needs none: a first small body starts it (received in the thread meanwhile), so it is
    ready for the big bodies that follow."""
    otlp_worker.WORKER.stop()
    with Served(api(store)) as base, httpx.Client(base_url=base, headers=AUTH, timeout=60) as http:
        assert http.get("/healthz").status_code == 200
        assert not otlp_worker.WORKER.started()
        res = http.post("/v1/traces", content=_body([ROOT, CHAT, TOOL]), headers={"Content-Type": "application/json"})
        assert res.status_code == 200, res.text
        deadline = time.monotonic() + 30
        while not otlp_worker.WORKER.started():
            assert time.monotonic() < deadline, "no OTLP worker started"
            time.sleep(0.05)
    assert len(store.load_steps("conv-hand")) == 4


def test_a_killed_worker_is_replaced(store, monkeypatch):
    monkeypatch.setattr(otlp_worker, "WORKER_FROM", 0)
    otlp_worker.receive(store, _body([CHAT]), "application/json")
    with otlp_worker.WORKER.lock:
        worker = otlp_worker.WORKER._process().process
    worker.kill()
    worker.wait()
    otlp_worker.receive(store, _body([ROOT, TOOL]), "application/json")
    assert otlp_worker.WORKER.current is not None and otlp_worker.WORKER.current.process.pid != worker.pid
    assert len(store.load_steps("conv-hand")) == 4


def test_a_worker_lost_mid_body_leaves_the_body_to_the_thread(store, monkeypatch):
    """The answer never comes back (the worker died, or its pipe broke): the thread receives the body, and
    what the worker may have stored of it first is an exact duplicate, skipped."""
    monkeypatch.setattr(otlp_worker, "WORKER_FROM", 0)

    def lost(pipe):
        raise EOFError("the other side closed the pipe")

    monkeypatch.setattr(store_worker, "_read", lost)
    report = otlp_worker.receive(store, _body([ROOT, CHAT, TOOL]), "application/json")
    assert report.steps + report.duplicates == 4
    assert otlp_worker.WORKER.current is None
    assert len(store.load_steps("conv-hand")) == 4


def test_a_database_only_this_process_sees_stays_in_the_thread(monkeypatch):
    monkeypatch.setattr(otlp_worker, "WORKER_FROM", 0)
    memory = Store("sqlite://")
    try:
        assert store_worker.shared_url(memory) is None
        otlp_worker.receive(memory, _body([ROOT, CHAT, TOOL]), "application/json")
        assert len(memory.load_steps("conv-hand")) == 4
    finally:
        memory.close()


def test_a_database_the_worker_cannot_write_answers_503(tmp_path, monkeypatch):
    """The database's own error comes back whole (here SQLite's "unable to open database file", its
    directory gone), so the route answers as in the thread: 503 with Retry-After, /healthz degraded."""
    from sqlalchemy import exc as sa_exc

    monkeypatch.setattr(otlp_worker, "WORKER_FROM", 0)
    store = store_with_its_folder_gone(tmp_path)
    with pytest.raises(sa_exc.OperationalError, match="unable to open database file"):
        otlp_worker.receive(store, _body([ROOT, CHAT, TOOL]), "application/json")
    answers_503_and_degraded(store, "/v1/traces", content=_body([ROOT, CHAT, TOOL]), headers={"Content-Type": "application/json"})


def store_with_its_folder_gone(tmp_path) -> Store:
    """A SQLite Store whose database file and folder were removed after it opened: no process can write it."""
    folder = tmp_path / "gone"
    folder.mkdir()
    store = Store(f"sqlite:///{folder / 'replay.db'}")
    for name in folder.iterdir():
        name.unlink()
    folder.rmdir()
    return store


def answers_503_and_degraded(store: Store, path: str, **request) -> None:
    """POST `path` on a served API over `store`: 503 with Retry-After, then /healthz degraded; closes `store`."""
    try:
        with Served(api(store)) as base, httpx.Client(base_url=base, headers=AUTH, timeout=60) as http:
            res = http.post(path, **request)
            assert res.status_code == 503 and "Retry-After" in res.headers, res.text
            assert http.get("/healthz").json()["status"] == "degraded"
    finally:
        store.close()


def test_a_forked_server_starts_its_own_worker(sqlite_store, monkeypatch):
    """A process manager that forks after loading the app: the child must not write into its parent's worker."""
    import os

    monkeypatch.setattr(otlp_worker, "WORKER_FROM", 0)
    otlp_worker.WORKER.start()
    parent_worker = otlp_worker.WORKER.current.process.pid
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: receive one body, say which worker did it, leave without running atexit
        code = 1
        try:
            otlp_worker.receive(sqlite_store, _body([ROOT, CHAT, TOOL]), "application/json")
            os.write(write_end, str(otlp_worker.WORKER.current.process.pid).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    child_worker = int(os.read(read_end, 64) or b"0")
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    assert status == 0 and child_worker not in (0, parent_worker)
    assert otlp_worker.WORKER.current.process.pid == parent_worker and otlp_worker.WORKER.current.process.poll() is None
    assert len(sqlite_store.load_steps("conv-hand")) == 4

"""The database busy or gone for a moment answers no 503: PostgreSQL's connections dropped under the
server (a restart, or an admin ending them) are replaced before use, and on SQLite a write queues
behind another process's instead of failing."""

from __future__ import annotations

import threading

import psycopg
from conftest import PG_ADMIN_URL
from sqlalchemy import func, insert, select
from starlette.testclient import TestClient

from replay_core.events import StepEvent
from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.storage.store import Store
from replay_core.storage.tables import sessions, watch_offsets
from replay_core.vocabulary import now_utc


def test_the_first_healthz_after_the_connections_died_is_a_200(pg_store):
    with TestClient(create_app(pg_store, access=Access(api_tokens=("t" * 20,)))) as client:
        assert client.get("/healthz").status_code == 200  # a pooled connection, now held for later requests
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            ended = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (pg_store.engine.url.database,),
            ).fetchone()[0]
        assert ended >= 1
        answer = client.get("/healthz")
        assert answer.status_code == 200 and answer.json()["status"] == "ok", answer.text


def test_a_write_that_reads_first_waits_for_another_writer_instead_of_failing(tmp_path):
    """SQLite: a deferred transaction that read before another connection committed cannot take the write
    lock after it ("database is locked" at once, no busy wait): the 503 of four big OTLP bodies sent
    beside another writer. Under the Store's write lock every transaction begins IMMEDIATE and queues."""
    url = f"sqlite:///{tmp_path / 'w.db'}"
    mine, other = Store(url), Store(url, migrate=False)
    try:
        read, wrote, failed = threading.Event(), threading.Event(), []

        def other_writer() -> None:
            read.wait(5)
            try:
                other.write([StepEvent(session_id="other", type="think", content="meanwhile")])
            except Exception as exc:  # noqa: BLE001 — reported by the assertion below
                failed.append(exc)
            wrote.set()

        thread = threading.Thread(target=other_writer)
        thread.start()
        with mine._write_lock, mine.engine.begin() as conn:  # as every writing section of the Store does
            conn.execute(select(func.count()).select_from(sessions)).scalar()
            read.set()
            wrote.wait(0.5)  # the other writer commits here when our read took no lock
            conn.execute(insert(watch_offsets).values(path="mine", offset=1, updated_at=now_utc()))
        thread.join(10)
        assert failed == [] and mine.watch_offset("mine") is not None and mine.get_session("other") is not None
    finally:
        mine.close()
        other.close()

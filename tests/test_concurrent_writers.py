"""Writers in several processes on one database, SQLite and PostgreSQL:
two served apps (uvicorn, each its own process and Store) with four writer threads each post
steps without seq into one session; eight SDK processes open a fresh SQLite file at once.
Every step lands once, with its own seq, and no request gets a 5xx."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from datetime import UTC, datetime

import httpx
import pytest
from apptest_helpers import served_api
from sqlalchemy import func, select, text

from replay_core.storage.store import Store

TOKEN = "writers-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

APPS, WRITERS, STEPS, PER_REQUEST = 2, 4, 500, 25


def test_two_served_apps_with_four_writers_each_share_one_session(store):
    with ExitStack() as stack:
        bases = [stack.enter_context(served_api(store.url, TOKEN)) for _ in range(APPS)]

        def writer(app: int, thread: int) -> list[int]:
            statuses = []
            with httpx.Client(base_url=bases[app], headers=AUTH, timeout=60) as http:
                for start in range(0, STEPS, PER_REQUEST):
                    body = [
                        {"type": "think", "event_id": f"a{app}-w{thread}-{n}", "content": f"{app}/{thread}/{n}"}
                        for n in range(start, start + PER_REQUEST)
                    ]
                    statuses.append(http.post("/api/v1/sessions/shared/steps", json=body).status_code)
            return statuses

        with ThreadPoolExecutor(APPS * WRITERS) as pool:
            futures = [pool.submit(writer, a, t) for a in range(APPS) for t in range(WRITERS)]
            statuses = [s for f in futures for s in f.result()]
    assert set(statuses) == {200}
    with store.engine.connect() as conn:
        count, distinct_events, distinct_seqs, low, high = conn.execute(
            text(
                "SELECT count(*), count(DISTINCT event_id), count(DISTINCT seq), min(seq), max(seq) FROM steps"
                " WHERE session_id = 'shared'"
            )
        ).one()
    total = APPS * WRITERS * STEPS
    assert (count, distinct_events, distinct_seqs, low, high) == (total, total, total, 1, total)
    assert store.count_sessions() == 1


SDK_RUN = textwrap.dedent("""
    import sys
    from replay_core.sdk.recorder import Recorder
    rec = Recorder(sys.argv[1], spool_dir=sys.argv[3])
    with rec.session(f"process {sys.argv[2]}", session_id=f"p{sys.argv[2]}") as run:
        for n in range(200):
            run.think(f"step {n}")
    assert rec.close(), "undelivered"
""")


def test_eight_sdk_processes_open_a_fresh_sqlite_file_at_once(tmp_path):
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    procs = [
        subprocess.Popen([sys.executable, "-c", SDK_RUN, url, str(i), str(tmp_path / f"spool{i}")], stderr=subprocess.PIPE)
        for i in range(8)
    ]
    failures = [p.stderr.read().decode(errors="replace") for p in procs if p.wait(120) != 0]
    assert failures == []
    store = Store(url)
    with store.engine.connect() as conn:
        rows = conn.execute(
            text("SELECT session_id, count(*), count(DISTINCT seq), max(seq) FROM steps GROUP BY session_id")
        ).all()
    assert sorted(rows) == [(f"p{i}", 200, 200, 200) for i in range(8)]
    assert all(not any(p.iterdir()) for p in tmp_path.glob("spool*") if p.is_dir())  # nothing spooled: no write failed
    store.close()


@pytest.mark.postgres
def test_eight_processes_migrate_a_fresh_postgres_database_at_once(pg_database):
    import psycopg

    admin = psycopg.connect(pg_database.rsplit("/", 1)[0] + "/postgres", autocommit=True)
    name = f"{pg_database.rsplit('/', 1)[1]}_fresh"
    admin.execute(f'CREATE DATABASE "{name}"')
    url = pg_database.rsplit("/", 1)[0] + "/" + name
    try:
        script = "import sys\nfrom replay_core.storage.store import Store\nStore(sys.argv[1]).close()\n"
        procs = [subprocess.Popen([sys.executable, "-c", script, url], stderr=subprocess.PIPE) for _ in range(8)]
        failures = [p.stderr.read().decode(errors="replace") for p in procs if p.wait(120) != 0]
        assert failures == []
        store = Store(url, migrate=False)
        assert store.count_sessions() == 0
        store.close()
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def test_a_session_created_by_two_writers_at_once_is_one_run(store):
    from replay_core.events import SessionEvent, StepEvent

    def write(i: int):
        other = Store(store.url, migrate=False)
        try:
            return other.write(
                [SessionEvent(session_id="race", name="n"), StepEvent(session_id="race", type="think", event_id=f"e{i}")]
            )
        finally:
            other.close()

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(write, range(8)))
    assert sum(r.steps for r in results) == 8
    assert sorted(s.seq for s in store.load_steps("race")) == list(range(1, 9))


def test_moving_a_provisional_run_while_another_writer_adds_to_its_target(store):
    """OTLP moves a provisional run's steps to the real session while another process writes
    steps without seq into that session: both in write transactions, no seq shared or lost."""
    from replay_core.events import SessionEvent, StepEvent

    moves, batches, per = 6, 20, 10
    store.write(
        [SessionEvent(session_id=f"prov-{m}", name="provisional") for m in range(moves)]
        + [
            StepEvent(session_id=f"prov-{m}", type="think", event_id=f"p{m}-{n}", seq=n + 1)
            for m in range(moves)
            for n in range(per)
        ]
    )

    def mover() -> int:
        other = Store(store.url, migrate=False)
        try:
            return sum(other.move_session_steps(f"prov-{m}", "real") for m in range(moves))
        finally:
            other.close()

    def writer() -> int:
        other = Store(store.url, migrate=False)
        try:
            return sum(
                other.write([StepEvent(session_id="real", type="think", event_id=f"w{b}-{n}") for n in range(per)]).steps
                for b in range(batches)
            )
        finally:
            other.close()

    with ThreadPoolExecutor(2) as pool:
        moved, written = pool.submit(mover), pool.submit(writer)
        assert (moved.result(), written.result()) == (moves * per, batches * per)
    seqs = [s.seq for s in store.load_steps("real")]
    assert sorted(seqs) == list(range(1, (moves + batches) * per + 1))
    assert [store.get_session(f"prov-{m}") for m in range(moves)] == [None] * moves


def test_runs_of_one_day_written_at_once_by_four_writers_all_land_and_their_cells_stay_exact(store):
    """Four writers (a Store each, as four processes or replicas would have) store new runs of the same
    day, model and agent at once, so every write recomputes the same daily cell: on PostgreSQL each
    deleted and inserted that cell, and all but one writer failed on its key; with some runs deleted
    meanwhile (a refresh of its own). Every write lands, and the cells equal a rebuild."""
    from test_rollups_daily import _daily_tables

    from replay_core.events import SessionEvent, StepEvent

    writers, runs = 4, 15
    started = datetime(2026, 12, 1, 10, tzinfo=UTC)

    def writer(w: int) -> int:
        other = Store(store.url, migrate=False)
        try:
            for r in range(runs):
                sid = f"w{w}-r{r}"
                other.write(
                    [
                        SessionEvent(session_id=sid, model="m", agent_id="a", started_at=started),
                        *(StepEvent(session_id=sid, type="think", event_id=f"{sid}-{n}", seq=n, content="x") for n in (1, 2)),
                    ]
                )
                if r % 5 == 4:
                    other.delete_sessions([f"w{w}-r{r - 1}"])
            return runs
        finally:
            other.close()

    with ThreadPoolExecutor(writers) as pool:
        assert sum(pool.map(writer, range(writers))) == writers * runs  # no writer raised
    kept = _daily_tables(store)
    assert sum(row[7] for row in kept[1]) == writers * (runs - 3) == store.count_sessions()
    store.rebuild_rollups()
    assert kept == _daily_tables(store)


def test_one_new_image_attached_by_two_writers_at_once_is_stored_once(store):
    """Two processes attach the same new screenshot (an identical blank page, say) to their own runs at
    once: both had asked `has_blob` before either stored it. The second's insert of the bytes used to fail
    on the hash's key (the request answered 422, its steps stored without the image); now both land."""
    import threading

    from test_media import page

    from replay_core.events import StepEvent
    from replay_core.media.images import check
    from replay_core.storage.tables import attachments, media_blobs

    rounds = 8
    images = [check(page(f"blank page {n}")) for n in range(rounds)]
    store.write(
        [
            StepEvent(session_id=f"img-{w}", type="observation", event_id=f"o{n}", seq=n + 1)
            for w in range(2)
            for n in range(rounds)
        ]
    )

    def writer(w: int, ready: threading.Barrier, errors: list) -> None:
        other = Store(store.url, migrate=False)
        try:
            for n, image in enumerate(images):
                blob = None if other.has_blob(image.sha256) else image.blob()
                ready.wait()
                try:
                    other.add_media(f"img-{w}", f"o{n}", blob, sha256=image.sha256, mime_type=image.mime_type)
                except Exception as exc:  # noqa: BLE001 — collected and asserted on below
                    errors.append(exc)
        finally:
            other.close()

    errors: list = []
    ready = threading.Barrier(2)
    threads = [threading.Thread(target=writer, args=(w, ready, errors)) for w in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    with store.engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(media_blobs)) == rounds
        assert conn.scalar(select(func.count()).select_from(attachments)) == 2 * rounds

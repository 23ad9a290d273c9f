"""Export → import is lossless, on every demo run (and on SQLite and PostgreSQL)."""

import io

import pytest

from replay_core.demo import demo_files, read_demo
from replay_core.ingest.formats import native
from replay_core.ingest.pipeline import import_bytes, ingest
from replay_core.storage.store import Store

DEMO = demo_files()


def test_demo_runs_exist():
    assert len(DEMO) >= 10


def _dump(store: Store, ids: list[str]) -> bytes:
    buf = io.BytesIO()
    native.write(store.export_events(ids), buf)
    return buf.getvalue()


def _state(store: Store, sid: str):
    session = store.get_session(sid)
    session.pop("created_at")
    session.pop("last_event_at")
    steps = [s.to_json_dict() for s in store.load_steps(sid)]
    return session, steps, store.step_contexts(sid)


@pytest.mark.parametrize("path", DEMO, ids=[p.stem for p in DEMO])
def test_export_import_round_trip(path, sqlite_store, tmp_path):
    report = import_bytes(sqlite_store, path.read_bytes(), str(path))
    (sid,) = report.sessions
    exported = _dump(sqlite_store, [sid])
    other = Store(f"sqlite:///{tmp_path / 'other.db'}")
    again = import_bytes(other, exported, "exported.jsonl")
    assert again.sessions == [sid] and again.steps == report.steps and again.errors == []
    assert _state(other, sid) == _state(sqlite_store, sid)
    # and a second export is byte-identical to the first
    assert _dump(other, [sid]) == exported


@pytest.mark.postgres
def test_round_trip_through_postgres(pg_store, sqlite_store):
    ingest(pg_store, read_demo(), source="demo")
    ids = pg_store.session_ids()
    assert len(ids) == len(DEMO)
    exported = _dump(pg_store, ids)
    import_bytes(sqlite_store, exported, "from-pg.jsonl")
    for sid in ids:
        assert _state(sqlite_store, sid) == _state(pg_store, sid)


def test_reimport_is_idempotent(sqlite_store):
    data = DEMO[0].read_bytes()
    first = import_bytes(sqlite_store, data, "a.jsonl")
    second = import_bytes(sqlite_store, data, "a.jsonl")
    assert second.steps == 0 and second.duplicates == first.steps

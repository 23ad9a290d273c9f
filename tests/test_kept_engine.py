"""The test databases' kept engine (tests/conftest.py `_kept_store`): one engine for a process's tests on one
database, the database emptied for each, a test's own listeners never reaching the next test."""

from __future__ import annotations

import shutil

import pytest
from conftest import _copy_sqlite, _kept_store
from sqlalchemy import event

from replay_core.events import SessionEvent


@pytest.fixture
def database(tmp_path, sqlite_template) -> tuple[str, object]:
    """A file of this test's own under `_kept_store` (not the worker's, which the other tests hold), and what
    empties it."""
    path = tmp_path / "kept.db"
    shutil.copyfile(sqlite_template, path)
    return f"sqlite:///{path}", lambda store: _copy_sqlite(sqlite_template, store)


def test_the_next_test_gets_the_same_engine_and_an_empty_database(database):
    url, empty = database
    with _kept_store(url, empty) as store:
        store.write([SessionEvent(session_id="left-behind")])
        engine = store.engine
    with _kept_store(url, empty) as store:
        assert store.engine is engine
        assert store.count_sessions() == 0


def test_listeners_a_test_adds_leave_the_next_test_a_new_engine(database):
    url, empty = database
    statements: list[str] = []
    with _kept_store(url, empty) as store:
        event.listen(store.engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
        engine = store.engine
    with _kept_store(url, empty) as store:
        assert store.engine is not engine
        before = len(statements)
        store.count_sessions()
        assert len(statements) == before  # the old engine's listener hears nothing of the new one


def test_a_database_held_twice_in_one_test_fails_with_a_sentence(database):
    url, empty = database
    with _kept_store(url, empty):
        with pytest.raises(pytest.fail.Exception, match="two fixtures of this test want the test database"):
            with _kept_store(url, empty):
                pass

"""Fixtures: real databases, made fresh per test.

`store` runs each test twice: on a SQLite file and on the local PostgreSQL server.
With CI=true an unreachable PostgreSQL fails the run instead of skipping it.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from sqlalchemy import text

from replay_core.storage.store import Store, metadata

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
PG_ADMIN_URL = os.environ.get("AGENT_REPLAY_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def _pg_url(dbname: str) -> str:
    return PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + dbname


@pytest.fixture(scope="session")
def pg_database():
    """A throwaway PostgreSQL database for this test run, dropped at the end."""
    import psycopg

    name = f"agent_replay_test_{uuid.uuid4().hex[:10]}"
    try:
        admin = psycopg.connect(PG_ADMIN_URL.replace("postgresql://", "postgresql://", 1), autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL is required on CI and is unreachable at {PG_ADMIN_URL}: {exc}")
        pytest.skip(f"PostgreSQL unreachable at {PG_ADMIN_URL}")
    admin.execute(f'CREATE DATABASE "{name}"')
    url = _pg_url(name)
    Store(url).close()  # migrate once
    yield url
    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.close()


def _empty(store: Store) -> None:
    with store.engine.begin() as conn:
        names = ", ".join(t.name for t in reversed(metadata.sorted_tables))
        conn.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))


@pytest.fixture
def sqlite_store(tmp_path) -> Store:
    store = Store(f"sqlite:///{tmp_path / 'replay.db'}")
    yield store
    store.close()


@pytest.fixture
def pg_store(pg_database) -> Store:
    store = Store(pg_database, migrate=False)
    _empty(store)
    yield store
    store.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request) -> Store:
    """The same test on SQLite and on PostgreSQL."""
    return request.getfixturevalue("sqlite_store" if request.param == "sqlite" else "pg_store")

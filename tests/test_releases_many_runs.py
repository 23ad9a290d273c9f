"""A prompt version of more runs than SQLite binds parameters in one statement (32,766 in its default
build) is compared all the same: its runs are read by id a bounded number at a time."""

from __future__ import annotations

import sqlite3
from datetime import timedelta

from monitor_workload import NOW
from sqlalchemy import event, insert

from replay_core.monitors import releases
from replay_core.storage.tables import sessions

RUNS = 33_500


def _bulk_runs(store, prompt_version: str, n: int, *, failing_every: int, day: int) -> None:
    """`n` ended runs of a prompt version written as rows at once (no steps: the figures read run rows)."""
    start = NOW - timedelta(days=day)
    rows = [
        {
            "id": f"{prompt_version}-{i}",
            "workflow": "checkout",
            "status": "failed" if i % failing_every == 0 else "succeeded",
            "started_at": start + timedelta(seconds=i),
            "ended_at": start + timedelta(seconds=i + 30),
            "metadata": {"prompt_version": prompt_version},
            "created_at": start,
        }
        for i in range(n)
    ]
    with store.engine.begin() as conn:
        conn.execute(insert(sessions), rows)


def test_a_prompt_version_of_more_runs_than_sqlite_binds_at_once_is_compared(sqlite_store):
    store = sqlite_store

    @event.listens_for(store.engine, "connect")
    def default_limit(dbapi_connection, _record):  # as SQLite's default build: this Python's allows more
        dbapi_connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 32_766)

    store.engine.dispose()
    _bulk_runs(store, "p1", 200, failing_every=10, day=3)
    _bulk_runs(store, "p2", RUNS, failing_every=3, day=1)
    assert len(store.runs_with("prompt_version", "p2")) == RUNS > 32_766
    result = releases.compare(store, "p1", "p2", dimension="prompt_version")
    failure = {m.metric: m for m in result.scopes[releases.OVERALL]}["failure_rate"]
    assert (failure.a.runs, failure.b.runs) == (200, RUNS)
    assert failure.b.value == round(len(range(0, RUNS, 3)) / RUNS, 4) and failure.verdict == releases.WORSE

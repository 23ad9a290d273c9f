"""The analytics bench's generated database: its rollups, computed as the steps are generated,
are the ones `agent-replay db rebuild-rollups` computes from the stored steps, and its steps table
has the indexes and constraints the migrations make (but the full-text one on PostgreSQL)."""

from __future__ import annotations

import sys

import pytest
from conftest import REPO
from sqlalchemy import inspect, select

from replay_core.storage import search
from replay_core.storage.tables import daily_cells, daily_errors, daily_members, daily_tools, run_breakdown, run_rollups, steps

sys.path.insert(0, str(REPO / "bench"))
import bench_analytics  # noqa: E402

TABLES = (run_rollups, run_breakdown, daily_members, daily_cells, daily_tools, daily_errors)


def _contents(store) -> dict[str, list]:
    with store.engine.connect() as conn:
        return {t.name: sorted(map(tuple, conn.execute(select(t))), key=repr) for t in TABLES}


def _schema(store) -> list:
    """The steps table's indexes and constraints (the PostgreSQL load drops them and builds them again)."""
    found = inspect(store.engine)
    indexes = [
        {**i, "dialect_options": {k: str(v) for k, v in i.get("dialect_options", {}).items()}}  # a partial index's WHERE as text
        for i in found.get_indexes("steps")
        if i["name"] != bench_analytics.SEARCH_INDEX_LEFT_OUT
    ]  # left out on purpose
    return [
        sorted(map(repr, items)) for items in (indexes, found.get_unique_constraints("steps"), found.get_foreign_keys("steps"))
    ]


@pytest.fixture
def bench_store(store):
    """The store, its full-text index on PostgreSQL put back afterwards for the tests that share the database."""
    yield store
    if store.dialect == "postgresql":
        with store.engine.begin() as conn:
            conn.exec_driver_sql(search.PG_DROP)
            conn.exec_driver_sql(search.PG_INDEX)


def test_generated_rollups_are_the_rebuilt_ones(bench_store):
    store = bench_store
    url = store.engine.url.render_as_string(hide_password=False)
    schema = _schema(store)
    bench_analytics.build_database(url, 300, 15_000)
    assert _schema(store) == schema
    generated = _contents(store)
    assert len(generated["run_rollups"]) == 300 and len(generated["daily_members"]) == 300
    with store.engine.connect() as conn:
        assert conn.scalar(select(steps.c.id).order_by(steps.c.id.desc()).limit(1)) == 15_000
    assert store.rebuild_rollups() == 300
    assert _contents(store) == generated

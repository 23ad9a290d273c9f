"""The analytics bench's generated database: its rollups, computed as the steps are generated,
are the ones `agent-replay db rebuild-rollups` computes from the stored steps."""

from __future__ import annotations

import sys

from sqlalchemy import inspect, select

from conftest import REPO
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
    return [sorted(map(repr, get("steps"))) for get in (found.get_indexes, found.get_unique_constraints, found.get_foreign_keys)]


def test_generated_rollups_are_the_rebuilt_ones(store):
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

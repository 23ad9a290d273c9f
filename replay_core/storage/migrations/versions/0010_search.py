"""search: full-text index over steps (FTS5 / GIN on a tsvector), and job_runs

The index is built here for the steps already stored (see storage/search.py for what it
indexes and why). job_runs records when the retention sweep last ran, so replicas sharing a
database run it once per period.

Revision ID: 0010_search
Revises: 0008_queues
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

from replay_core.storage import search
from replay_core.storage.tables import UTCDateTime

revision = "0010_search"
down_revision = "0009_rollups"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_runs",
        sa.Column("name", sa.String(length=50), nullable=False),
        sa.Column("last_run_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_job_runs")),
    )
    if op.get_bind().dialect.name == "sqlite":
        for statement in (*search.SQLITE_INDEX, search.SQLITE_FILL):
            op.execute(statement)
    else:
        op.execute(search.PG_INDEX)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for statement in search.SQLITE_DROP:
            op.execute(statement)
    else:
        op.execute(search.PG_DROP)
    op.drop_table("job_runs")

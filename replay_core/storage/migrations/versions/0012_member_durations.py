"""member durations: each run's step durations copied onto its daily_members row

The dashboard's step latency percentiles read every run's step durations of a period; joined
from daily_members to run_rollups, that read was most of the dashboard's server time at 10M
steps on PostgreSQL. The per-day rollups are rebuilt (storage/daily.py, `contribution` copies
the durations from the run's rollup, as every write does from then on); on PostgreSQL emptied
first by TRUNCATE, so the rebuilt tables are not left twice their size with dead rows. A
database whose 0011 made daily_members with the column already has nothing to do.

Revision ID: 0012_member_durations
Revises: 0011_daily
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

from replay_core.storage import daily
from replay_core.storage.bulk import bulk_insert

revision = "0012_member_durations"
down_revision = "0011_daily"
branch_labels = None
depends_on = None

TABLES = "daily_members, daily_cells, daily_tools, daily_errors"


def upgrade() -> None:
    bind = op.get_bind()
    if "durations_us" in {c["name"] for c in sa.inspect(bind).get_columns("daily_members")}:
        return
    op.add_column("daily_members", sa.Column("durations_us", sa.Text()))
    if bind.dialect.name == "postgresql":
        op.execute(f"TRUNCATE {TABLES}")
    daily.rebuild(bind, bulk_insert)


def downgrade() -> None:
    with op.batch_alter_table("daily_members") as batch:
        batch.drop_column("durations_us")

"""daily: per-day rollups for analytics (daily_members, daily_cells, daily_tools, daily_errors)

Created as tables.py defines them at this revision and filled from the sessions and per-run
rollups (storage/daily.py, the same pass as `agent-replay db rebuild-rollups`); from then on
every write keeps them exact.

Revision ID: 0011_daily
Revises: 0010_search
Create Date: 2026-12-01
"""

from alembic import op

from replay_core.storage import daily
from replay_core.storage.bulk import bulk_insert
from replay_core.storage.tables import daily_cells, daily_errors, daily_members, daily_tools

revision = "0011_daily"
down_revision = "0010_search"
branch_labels = None
depends_on = None

TABLES = (daily_members, daily_cells, daily_tools, daily_errors)


def upgrade() -> None:
    bind = op.get_bind()
    for table in TABLES:
        table.create(bind)
    daily.rebuild(bind, bulk_insert)


def downgrade() -> None:
    bind = op.get_bind()
    for table in reversed(TABLES):
        table.drop(bind)

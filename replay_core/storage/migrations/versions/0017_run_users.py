"""sessions.user_id and sessions.thread_id: who a run served and the conversation it belongs to

Both are indexed with started_at: the runs page filters on one user or thread and lists newest
first, and a thread's view reads its runs in order.

Revision ID: 0017_run_users
Revises: 0016_monitors
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0017_run_users"
down_revision = "0016_monitors"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("sessions", sa.Column("user_id", sa.String(length=200)))
    op.add_column("sessions", sa.Column("thread_id", sa.String(length=200)))
    op.create_index("ix_sessions_user_id_started_at", "sessions", ["user_id", "started_at"])
    op.create_index("ix_sessions_thread_id_started_at", "sessions", ["thread_id", "started_at"])


def downgrade() -> None:
    op.drop_index("ix_sessions_thread_id_started_at", table_name="sessions")
    op.drop_index("ix_sessions_user_id_started_at", table_name="sessions")
    # plain ALTER TABLE … DROP COLUMN (SQLite 3.35+): a batch copy of sessions would cascade to its steps
    op.drop_column("sessions", "thread_id")
    op.drop_column("sessions", "user_id")

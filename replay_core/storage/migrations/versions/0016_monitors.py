"""monitors and monitor_alerts: rules judged on a schedule over the runs' rollups, and their alerts

Revision ID: 0016_monitors
Revises: 0015_watch_leases
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

from replay_core.storage.tables import JSONType, UTCDateTime

revision = "0016_monitors"
down_revision = "0015_watch_leases"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "monitors",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("rule", JSONType, nullable=False),
        sa.Column("webhook_url", sa.Text()),
        sa.Column("webhook_secret_env", sa.String(length=200)),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("muted_until", UTCDateTime()),
        sa.Column("last_checked_at", UTCDateTime()),
        sa.Column("last_result", JSONType),
        sa.PrimaryKeyConstraint("id", name="pk_monitors"),
        sa.UniqueConstraint("name", name="uq_monitors_name"),
    )
    op.create_table(
        "monitor_alerts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("monitor_id", sa.Integer(), nullable=False),
        sa.Column("opened_at", UTCDateTime(), nullable=False),
        sa.Column("resolved_at", UTCDateTime()),
        sa.Column("figure", JSONType, nullable=False),
        sa.Column("acked_by", sa.String(length=200)),
        sa.Column("acked_at", UTCDateTime()),
        sa.Column("delivered", JSONType),
        sa.ForeignKeyConstraint(
            ["monitor_id"], ["monitors.id"], name="fk_monitor_alerts_monitor_id_monitors", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_monitor_alerts"),
    )
    op.create_index("ix_monitor_alerts_monitor_id_resolved_at", "monitor_alerts", ["monitor_id", "resolved_at"])


def downgrade() -> None:
    op.drop_index("ix_monitor_alerts_monitor_id_resolved_at", table_name="monitor_alerts")
    op.drop_table("monitor_alerts")
    op.drop_table("monitors")

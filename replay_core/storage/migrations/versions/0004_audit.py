"""audit_log: who did what, when and from where

Revision ID: 0004_audit
Revises: 0006_experiments
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

from replay_core.storage.tables import JSONType, UTCDateTime

revision = "0004_audit"
down_revision = "0006_experiments"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("who", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("origin", sa.String(length=200), nullable=False),
        sa.Column("action", sa.String(length=50), nullable=False),
        sa.Column("outcome", sa.String(length=20), nullable=False),
        sa.Column("target", sa.Text(), nullable=True),
        sa.Column("detail", JSONType, nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_log")),
    )
    op.create_index("ix_audit_log_at", "audit_log", ["at"])
    op.create_index("ix_audit_log_action_origin_at", "audit_log", ["action", "origin", "at"])


def downgrade() -> None:
    op.drop_index("ix_audit_log_action_origin_at", table_name="audit_log")
    op.drop_index("ix_audit_log_at", table_name="audit_log")
    op.drop_table("audit_log")

"""otlp_traces, otlp_open_calls: OTLP batches of one trace joined into one run

Revision ID: 0003_otlp
Revises: 0002
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

from replay_core.storage.tables import JSONType, UTCDateTime

revision = "0003_otlp"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "otlp_traces",
        sa.Column("trace_id", sa.String(32), nullable=False),
        sa.Column("session_id", sa.String(200), nullable=False),
        sa.Column("settled", sa.Boolean(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("trace_id", name="pk_otlp_traces"),
    )
    op.create_index("ix_otlp_traces_session_id", "otlp_traces", ["session_id"])
    op.create_index("ix_otlp_traces_updated_at", "otlp_traces", ["updated_at"])
    op.create_table(
        "otlp_open_calls",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("trace_id", sa.String(32), nullable=False),
        sa.Column("side", sa.String(10), nullable=False),
        sa.Column("event_id", sa.String(200), nullable=False),
        sa.Column("name", sa.Text()),
        sa.Column("call_id", sa.Text()),
        sa.Column("arguments", JSONType),
        sa.Column("t_ns", sa.BigInteger()),
        sa.PrimaryKeyConstraint("id", name="pk_otlp_open_calls"),
    )
    op.create_index("ix_otlp_open_calls_trace_id", "otlp_open_calls", ["trace_id"])


def downgrade() -> None:
    op.drop_index("ix_otlp_open_calls_trace_id", table_name="otlp_open_calls")
    op.drop_table("otlp_open_calls")
    op.drop_index("ix_otlp_traces_updated_at", table_name="otlp_traces")
    op.drop_index("ix_otlp_traces_session_id", table_name="otlp_traces")
    op.drop_table("otlp_traces")

"""rollups: per-run totals (run_rollups) and per run, tool and error class (run_breakdown)

Created and filled from the stored steps (storage/rollups.py, the same pass as
`agent-replay db rebuild-rollups`); from then on every write keeps them exact.

Revision ID: 0009_rollups
Revises: 0004_audit
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

from replay_core.storage import rollups
from replay_core.storage.bulk import bulk_insert
from replay_core.storage.tables import UTCDateTime

revision = "0009_rollups"
down_revision = "0008_queues"
branch_labels = None
depends_on = None

COUNTS = (
    "cost_unknown_steps",
    "retried_steps",
    "errored_steps",
    "blocked_steps",
    "approvals",
    "fallback_blocks",
    "fallback_agent",
    "tool_calls",
    "tool_failures",
    "cycles",
    "loops",
    "redundant_calls",
)


def upgrade() -> None:
    fk = sa.ForeignKey("sessions.id", ondelete="CASCADE")
    op.create_table(
        "run_rollups",
        sa.Column("session_id", sa.String(200), fk, nullable=False),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("max_seq", sa.Integer()),
        sa.Column("tokens_in", sa.BigInteger()),
        sa.Column("tokens_out", sa.BigInteger()),
        sa.Column("cost_usd", sa.Float()),
        *(sa.Column(name, sa.Integer(), nullable=False) for name in COUNTS[:3]),
        sa.Column("first_error_at", UTCDateTime()),
        *(sa.Column(name, sa.Integer(), nullable=False) for name in COUNTS[3:]),
        sa.Column("durations_us", sa.Text()),
        sa.PrimaryKeyConstraint("session_id", name=op.f("pk_run_rollups")),
    )
    op.create_table(
        "run_breakdown",
        sa.Column("session_id", sa.String(200), sa.ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("tool_name", sa.String(200)),
        sa.Column("error_class", sa.String(200)),
        sa.Column("tool_calls", sa.Integer(), nullable=False),
        sa.Column("errored", sa.Integer(), nullable=False),
    )
    op.create_index("ix_run_breakdown_session_id", "run_breakdown", ["session_id"])
    rollups.rebuild(op.get_bind(), bulk_insert)


def downgrade() -> None:
    op.drop_index("ix_run_breakdown_session_id", table_name="run_breakdown")
    op.drop_table("run_breakdown")
    op.drop_table("run_rollups")

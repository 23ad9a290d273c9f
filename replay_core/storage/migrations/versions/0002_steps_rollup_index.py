"""steps: a covering index for analytics' per-run passes

It replaces ix_steps_session_id_seq (same leading columns, so every query that used it
still can) with one that also holds the columns analytics sums per run: a pass over a
million steps then reads the index instead of rows full of content.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

ROLLUP_COLUMNS = [
    "session_id",
    "seq",
    "type",
    "status",
    "retry",
    "duration_ms",
    "tokens_in",
    "tokens_out",
    "cost_usd",
    "timestamp",
    "tool_name",
    "error_class",
]


def upgrade() -> None:
    op.create_index("ix_steps_rollup", "steps", ROLLUP_COLUMNS)
    op.drop_index("ix_steps_session_id_seq", table_name="steps")


def downgrade() -> None:
    op.create_index("ix_steps_session_id_seq", "steps", ["session_id", "seq"])
    op.drop_index("ix_steps_rollup", table_name="steps")

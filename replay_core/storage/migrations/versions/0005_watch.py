"""watch_offsets: how far `agent-replay watch` has read each file it follows

Revision ID: 0005_watch
Revises: 0007_media
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_watch"
down_revision = "0007_media"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "watch_offsets",
        sa.Column("path", sa.String(1000), nullable=False),
        sa.Column("inode", sa.BigInteger()),
        sa.Column("offset", sa.BigInteger(), nullable=False),
        sa.Column("format", sa.String(100)),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("path", name="pk_watch_offsets"),
    )


def downgrade() -> None:
    op.drop_table("watch_offsets")

"""review queues and share links

Revision ID: 0008_queues
Revises: 0004_audit
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

from replay_core.storage.tables import JSONType, UTCDateTime

revision = "0008_queues"
down_revision = "0004_audit"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "review_queues",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("made_from", JSONType),
        sa.Column("rubric", JSONType, nullable=False),
        sa.Column("reviews_per_item", sa.Integer(), nullable=False),
        sa.Column("assignees", JSONType),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_review_queues")),
    )
    op.create_table(
        "queue_items",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("queue_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.String(200), nullable=False),
        sa.Column("reviews", sa.Integer(), nullable=False),
        sa.Column("held_by", sa.String(200)),
        sa.Column("held_until", UTCDateTime()),
        sa.ForeignKeyConstraint(
            ["queue_id"], ["review_queues.id"], name=op.f("fk_queue_items_queue_id_review_queues"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_queue_items")),
        sa.UniqueConstraint("queue_id", "session_id", name=op.f("uq_queue_items_queue_id_session_id")),
    )
    op.create_index("ix_queue_items_queue_id_position", "queue_items", ["queue_id", "position"])
    op.create_table(
        "queue_reviews",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("queue_id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("reviewer", sa.String(200), nullable=False),
        sa.Column("verdict", sa.String(200)),
        sa.Column("criteria", JSONType),
        sa.Column("note", sa.Text()),
        sa.Column("should_have", sa.Text()),
        sa.Column("skipped", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["queue_id"], ["review_queues.id"], name=op.f("fk_queue_reviews_queue_id_review_queues"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["item_id"], ["queue_items.id"], name=op.f("fk_queue_reviews_item_id_queue_items"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_queue_reviews")),
        sa.UniqueConstraint("item_id", "reviewer", name=op.f("uq_queue_reviews_item_id_reviewer")),
    )
    op.create_index("ix_queue_reviews_queue_id", "queue_reviews", ["queue_id"])
    op.create_table(
        "share_links",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("target", JSONType, nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("revoked_at", UTCDateTime()),
        sa.Column("revoked_by", sa.String(200)),
        sa.Column("opened", sa.Integer(), nullable=False),
        sa.Column("last_opened_at", UTCDateTime()),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_share_links")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_share_links_token_hash")),
    )


def downgrade() -> None:
    op.drop_table("share_links")
    op.drop_index("ix_queue_reviews_queue_id", table_name="queue_reviews")
    op.drop_table("queue_reviews")
    op.drop_index("ix_queue_items_queue_id_position", table_name="queue_items")
    op.drop_table("queue_items")
    op.drop_table("review_queues")

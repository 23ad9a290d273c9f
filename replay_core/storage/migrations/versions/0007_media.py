"""media: image bytes deduplicated by content hash, with a thumbnail made once

Attachments made from now on point at a `media_blobs` row by sha256 and carry the
action's target (click point or box); their own `data` column is kept for rows
written before, so nothing already stored moves.

Revision ID: 0007_media
Revises: 0003_otlp
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

from replay_core.storage.tables import JSONType, UTCDateTime

revision = "0007_media"
down_revision = "0003_otlp"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "media_blobs",
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("mime_type", sa.String(100), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("width", sa.Integer()),
        sa.Column("height", sa.Integer()),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("thumbnail", sa.LargeBinary()),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("sha256", name="pk_media_blobs"),
    )
    with op.batch_alter_table("attachments") as batch:
        batch.alter_column("data", existing_type=sa.LargeBinary(), nullable=True)
        batch.add_column(sa.Column("sha256", sa.String(64)))
        batch.add_column(sa.Column("target", JSONType))
        batch.create_foreign_key("fk_attachments_sha256_media_blobs", "media_blobs", ["sha256"], ["sha256"])


def downgrade() -> None:
    with op.batch_alter_table("attachments") as batch:
        batch.drop_constraint("fk_attachments_sha256_media_blobs", type_="foreignkey")
        batch.drop_column("target")
        batch.drop_column("sha256")
    op.drop_table("media_blobs")

"""watch fingerprints: what the start of each followed file and the bytes before its offset hashed to

A file rotated by copy-truncate keeps its inode, and once its new content outgrows the old offset its
size says nothing either: the fingerprint of what was read tells that the file is another one.

Revision ID: trust_b_watch_fingerprint
Revises: 0013_call_keys
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "trust_b_watch_fingerprint"
down_revision = "0013_call_keys"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("watch_offsets", sa.Column("fingerprint", sa.String(64)))


def downgrade() -> None:
    with op.batch_alter_table("watch_offsets") as batch:
        batch.drop_column("fingerprint")

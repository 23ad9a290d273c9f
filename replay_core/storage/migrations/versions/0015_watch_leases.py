"""watch fingerprints and experiment claim leases

watch_offsets.fingerprint: what the start of each followed file and the bytes before its offset hashed
to. A file rotated by copy-truncate keeps its inode, and once its new content outgrows the old offset
its size says nothing either: the fingerprint tells that the file is another one.

experiment_runs.lease_until: a claimed case × variant belongs to its runner until then (the runner
renews it while the replay runs); another process takes it only once the lease lapsed (its runner
died), so run and resume at once never pay for one case twice.

Revision ID: 0015_watch_leases
Revises: 0014_step_places
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0015_watch_leases"
down_revision = "0014_step_places"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("watch_offsets", sa.Column("fingerprint", sa.String(64)))
    op.add_column("experiment_runs", sa.Column("lease_until", sa.DateTime()))


def downgrade() -> None:
    with op.batch_alter_table("experiment_runs") as batch:
        batch.drop_column("lease_until")
    with op.batch_alter_table("watch_offsets") as batch:
        batch.drop_column("fingerprint")

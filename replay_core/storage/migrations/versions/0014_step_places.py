"""step places: each OTLP step's place in its run's order, kept with it

A run exported over OTLP arrives in batches, children before their parents; a late batch's steps
are put among the stored ones by the place each step's span gives it (ingest.formats.otel.ordering
.place), so steps.place holds it (NULL for steps from any other source, which are numbered as they
come). Steps stored before this revision keep NULL: their runs' order stays as it was.

Revision ID: 0014_step_places
Revises: 0013_call_keys
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0014_step_places"
down_revision = "0013_call_keys"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("steps", sa.Column("place", sa.Text()))


def downgrade() -> None:
    with op.batch_alter_table("steps") as batch:
        batch.drop_column("place")

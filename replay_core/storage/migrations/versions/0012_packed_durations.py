"""packed durations: run_rollups' step durations as packed int64 µs (rollups.packed), not comma-separated text

The dashboard reads every run's step durations at once (step latency percentiles: 5 million
numbers for half of a 10M-step database); splitting and parsing the text was half its time on
PostgreSQL. The values are converted as they are (no rollup is recomputed); a database whose
0009 already made the packed column has nothing to convert.

Revision ID: 0012_packed_durations
Revises: 0011_daily
Create Date: 2026-12-02
"""

from array import array

import sqlalchemy as sa
from alembic import op

from replay_core.storage import rollups

revision = "0012_packed_durations"
down_revision = "0011_daily"
branch_labels = None
depends_on = None

BATCH = 2000
TEXT, PACKED = "durations_us", "step_durations_us"


def _columns() -> set[str]:
    return {c["name"] for c in sa.inspect(op.get_bind()).get_columns("run_rollups")}


def _convert(source: str, target: str, to_target) -> None:
    """Fill `target` from `source` for every run (keyset pages of BATCH runs), then drop `source`."""
    bind = op.get_bind()
    table = sa.table("run_rollups", sa.column("session_id"), sa.column(source), sa.column(target))
    after = ""
    while True:
        page = bind.execute(sa.select(table.c.session_id, table.c[source]).where(table.c.session_id > after)
                            .order_by(table.c.session_id).limit(BATCH)).all()
        if not page:
            break
        changes = [{"sid": sid, "value": to_target(value)} for sid, value in page if value is not None]
        if changes:
            bind.execute(sa.update(table).where(table.c.session_id == sa.bindparam("sid"))
                         .values({target: sa.bindparam("value")}), changes)
        after = page[-1][0]
    with op.batch_alter_table("run_rollups") as batch:
        batch.drop_column(source)


def upgrade() -> None:
    columns = _columns()
    if PACKED not in columns:
        with op.batch_alter_table("run_rollups") as batch:
            batch.add_column(sa.Column(PACKED, sa.LargeBinary()))
    if TEXT in columns:
        _convert(TEXT, PACKED, lambda text: rollups.packed(array(rollups.US, map(int, text.split(",")))))


def downgrade() -> None:
    with op.batch_alter_table("run_rollups") as batch:
        batch.add_column(sa.Column(TEXT, sa.Text()))
    _convert(PACKED, TEXT, lambda data: ",".join(map(str, rollups.unpacked(data))) or None)

"""call keys: each tool call's tool and arguments, hashed, stored with it and indexed

A live run's next batch carried its rollup on by reading back every stored call of the tools it
called, arguments and all, to find the repeats its new calls make (loops): a read that grew with
the run at every batch, most of a write's rollup time on long runs. steps.call_key holds
`rollups.call_key` of each tool call (NULL for any other step), filled here for the steps already
stored; partial indexes on (session_id, call_key) and (session_id, tool_call_id) find a run's
repeats of given calls, the calls its new results answer and their first ok results.

Revision ID: 0013_call_keys
Revises: 0012_member_durations
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

from replay_core.storage.rollups import call_key
from replay_core.storage.tables import steps

revision = "0013_call_keys"
down_revision = "0012_member_durations"
branch_labels = None
depends_on = None

BATCH = 5000


def upgrade() -> None:
    op.add_column("steps", sa.Column("call_key", sa.String(length=32)))
    bind = op.get_bind()
    s = steps.c
    calls = sa.select(s.id, s.tool_name, s.tool_args).where(s.type == "tool_call", s.tool_name.isnot(None)).order_by(s.id)
    fill = sa.update(steps).where(s.id == sa.bindparam("rid")).values(call_key=sa.bindparam("key"))
    after = 0
    while True:  # in id order, a batch at a time: a large database is never held in memory
        rows = bind.execute(calls.where(s.id > after).limit(BATCH)).all()
        if not rows:
            break
        bind.execute(fill, [{"rid": r.id, "key": call_key("tool_call", r.tool_name, r.tool_args)} for r in rows])
        after = rows[-1].id
    for name, column in (("ix_steps_call_key", "call_key"), ("ix_steps_call_id", "tool_call_id")):
        op.create_index(
            name,
            "steps",
            ["session_id", column],
            sqlite_where=sa.text(f"{column} IS NOT NULL"),
            postgresql_where=sa.text(f"{column} IS NOT NULL"),
        )


def downgrade() -> None:
    op.drop_index("ix_steps_call_id", table_name="steps")
    op.drop_index("ix_steps_call_key", table_name="steps")
    with op.batch_alter_table("steps") as batch:
        batch.drop_column("call_key")

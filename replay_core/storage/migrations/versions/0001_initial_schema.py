"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

from replay_core.storage.tables import JSONType, UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column("agent_id", sa.String(length=200), nullable=True),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column("workflow", sa.String(length=200), nullable=True),
        sa.Column("environment", sa.String(length=100), nullable=True),
        sa.Column("agent_version", sa.String(length=100), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("outcome", sa.Text(), nullable=True),
        sa.Column("error_class", sa.String(length=200), nullable=True),
        sa.Column("started_at", UTCDateTime(), nullable=True),
        sa.Column("ended_at", UTCDateTime(), nullable=True),
        sa.Column("last_event_at", UTCDateTime(), nullable=True),
        sa.Column("tags", JSONType, nullable=True),
        sa.Column("metadata", JSONType, nullable=True),
        sa.Column("source", sa.String(length=100), nullable=True),
        sa.Column("replay_of", sa.String(length=200), nullable=True),
        sa.Column("replay_from", sa.Integer(), nullable=True),
        sa.Column("replay_to", sa.Integer(), nullable=True),
        sa.Column("replay_config", JSONType, nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["replay_of"], ["sessions.id"], name=op.f("fk_sessions_replay_of_sessions"), ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sessions")),
    )
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sessions_agent_id"), ["agent_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_sessions_model"), ["model"], unique=False)
        batch_op.create_index(batch_op.f("ix_sessions_replay_of"), ["replay_of"], unique=False)
        batch_op.create_index(batch_op.f("ix_sessions_started_at"), ["started_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_sessions_status"), ["status"], unique=False)

    op.create_table(
        "annotations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("session_id", sa.String(length=200), nullable=False),
        sa.Column("event_id", sa.String(length=200), nullable=True),
        sa.Column("author", sa.String(length=200), nullable=True),
        sa.Column("label", sa.String(length=50), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name=op.f("fk_annotations_session_id_sessions"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_annotations")),
    )
    with op.batch_alter_table("annotations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_annotations_session_id"), ["session_id"], unique=False)

    op.create_table(
        "attachments",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("session_id", sa.String(length=200), nullable=False),
        sa.Column("event_id", sa.String(length=200), nullable=True),
        sa.Column("name", sa.String(length=300), nullable=True),
        sa.Column("mime_type", sa.String(length=100), nullable=True),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name=op.f("fk_attachments_session_id_sessions"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_attachments")),
    )
    with op.batch_alter_table("attachments", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_attachments_session_id_event_id"), ["session_id", "event_id"], unique=False)

    op.create_table(
        "step_contexts",
        sa.Column("session_id", sa.String(length=200), nullable=False),
        sa.Column("event_id", sa.String(length=200), nullable=False),
        sa.Column("context", JSONType, nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name=op.f("fk_step_contexts_session_id_sessions"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("session_id", "event_id", name=op.f("pk_step_contexts")),
    )
    op.create_table(
        "steps",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("session_id", sa.String(length=200), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("event_id", sa.String(length=200), nullable=False),
        sa.Column("parent_id", sa.String(length=200), nullable=True),
        sa.Column("type", sa.String(length=20), nullable=False),
        sa.Column("timestamp", UTCDateTime(), nullable=True),
        sa.Column("duration_ms", sa.Float(), nullable=True),
        sa.Column("agent_id", sa.String(length=200), nullable=True),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column("content", sa.Text(), nullable=True),
        sa.Column("tool_name", sa.String(length=200), nullable=True),
        sa.Column("tool_args", JSONType, nullable=True),
        sa.Column("tool_call_id", sa.String(length=200), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("error_class", sa.String(length=200), nullable=True),
        sa.Column("retry", sa.Integer(), nullable=False),
        sa.Column("tokens_in", sa.Integer(), nullable=True),
        sa.Column("tokens_out", sa.Integer(), nullable=True),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("metadata", JSONType, nullable=True),
        sa.Column("redacted", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"], name=op.f("fk_steps_session_id_sessions"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_steps")),
        sa.UniqueConstraint("session_id", "event_id", name=op.f("uq_steps_session_id_event_id")),
    )
    with op.batch_alter_table("steps", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_steps_session_id_seq"), ["session_id", "seq"], unique=False)
        batch_op.create_index(batch_op.f("ix_steps_tool_name"), ["tool_name"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("steps", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_steps_tool_name"))
        batch_op.drop_index(batch_op.f("ix_steps_session_id_seq"))

    op.drop_table("steps")
    op.drop_table("step_contexts")
    with op.batch_alter_table("attachments", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_attachments_session_id_event_id"))

    op.drop_table("attachments")
    with op.batch_alter_table("annotations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_annotations_session_id"))

    op.drop_table("annotations")
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sessions_status"))
        batch_op.drop_index(batch_op.f("ix_sessions_started_at"))
        batch_op.drop_index(batch_op.f("ix_sessions_replay_of"))
        batch_op.drop_index(batch_op.f("ix_sessions_model"))
        batch_op.drop_index(batch_op.f("ix_sessions_agent_id"))

    op.drop_table("sessions")

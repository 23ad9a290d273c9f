"""experiment_schedules, schedule_runs and queue_feeds: experiments run again on a schedule, each
run compared with the one before; a review queue's bad verdicts fed to a dataset

Revision ID: 0018_experiment_schedules
Revises: 0017_run_users
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

from replay_core.storage.tables import JSONType, UTCDateTime

revision = "0018_experiment_schedules"
down_revision = "0017_run_users"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "experiment_schedules",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("dataset", sa.String(length=200), nullable=False),
        sa.Column("trigger", sa.String(length=30), nullable=False),
        sa.Column("settings", JSONType, nullable=False),
        sa.Column("models_seen", JSONType),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_experiment_schedules"),
        sa.UniqueConstraint("name", name="uq_experiment_schedules_name"),
    )
    op.create_table(
        "schedule_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("schedule_id", sa.Integer(), nullable=False),
        sa.Column("experiment_id", sa.String(length=60)),
        sa.Column("reason", sa.String(length=300), nullable=False),
        sa.Column("dataset_version", sa.Integer()),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime()),
        sa.Column("result", JSONType),
        sa.ForeignKeyConstraint(
            ["schedule_id"],
            ["experiment_schedules.id"],
            name="fk_schedule_runs_schedule_id_experiment_schedules",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_schedule_runs"),
    )
    op.create_index("ix_schedule_runs_schedule_id", "schedule_runs", ["schedule_id"])
    op.create_table(
        "queue_feeds",
        sa.Column("queue_id", sa.Integer(), nullable=False),
        sa.Column("dataset", sa.String(length=200), nullable=False),
        sa.Column("verdicts", JSONType, nullable=False),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["queue_id"], ["review_queues.id"], name="fk_queue_feeds_queue_id_review_queues", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("queue_id", name="pk_queue_feeds"),
    )


def downgrade() -> None:
    op.drop_table("queue_feeds")
    op.drop_index("ix_schedule_runs_schedule_id", table_name="schedule_runs")
    op.drop_table("schedule_runs")
    op.drop_table("experiment_schedules")

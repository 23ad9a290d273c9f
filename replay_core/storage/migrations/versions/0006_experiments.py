"""experiments: datasets of cases, experiments, and one row per case × variant

Revision ID: 0006_experiments
Revises: 0005_watch
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

from replay_core.storage.tables import JSONType, UTCDateTime

revision = "0006_experiments"
down_revision = "0005_watch"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "datasets",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("match", sa.String(length=20), nullable=False),
        sa.Column("made_from", JSONType, nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_datasets")),
        sa.UniqueConstraint("name", name=op.f("uq_datasets_name")),
    )
    op.create_table(
        "dataset_cases",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.String(length=200), nullable=False),
        sa.Column("expected", sa.Text(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_id"], ["datasets.id"], name=op.f("fk_dataset_cases_dataset_id_datasets"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dataset_cases")),
        sa.UniqueConstraint("dataset_id", "session_id", name=op.f("uq_dataset_cases_dataset_id_session_id")),
    )
    op.create_table(
        "experiments",
        sa.Column("id", sa.String(length=60), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("dataset_version", sa.Integer(), nullable=False),
        sa.Column("settings", JSONType, nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["dataset_id"], ["datasets.id"], name=op.f("fk_experiments_dataset_id_datasets"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_experiments")),
    )
    op.create_index(op.f("ix_experiments_dataset_id"), "experiments", ["dataset_id"])
    op.create_table(
        "experiment_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("experiment_id", sa.String(length=60), nullable=False),
        sa.Column("case_session", sa.String(length=200), nullable=False),
        sa.Column("variant", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("replay_session", sa.String(length=300), nullable=True),
        sa.Column("outcome", sa.String(length=30), nullable=True),
        sa.Column("error_class", sa.String(length=200), nullable=True),
        sa.Column("passed", sa.Integer(), nullable=True),
        sa.Column("scores", JSONType, nullable=True),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("tokens_in", sa.Integer(), nullable=True),
        sa.Column("tokens_out", sa.Integer(), nullable=True),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.Column("overhead_ms", sa.Float(), nullable=True),
        sa.Column("departed_seq", sa.Integer(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["experiment_id"], ["experiments.id"], name=op.f("fk_experiment_runs_experiment_id_experiments"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_experiment_runs")),
        sa.UniqueConstraint(
            "experiment_id", "case_session", "variant", name=op.f("uq_experiment_runs_experiment_id_case_session_variant")
        ),
    )


def downgrade() -> None:
    op.drop_table("experiment_runs")
    op.drop_index(op.f("ix_experiments_dataset_id"), table_name="experiments")
    op.drop_table("experiments")
    op.drop_table("dataset_cases")
    op.drop_table("datasets")

"""SQLAlchemy table definitions. Only `store.py` and the alembic migrations use them.

Core tables rather than ORM classes: ingestion is bulk `insert()` of dicts and reads
are narrow selects, so the ORM's identity map would only cost time.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

JSONType = JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")


class UTCDateTime(TypeDecorator):
    """Stored as naive UTC everywhere, handed back timezone-aware."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is not None and value.utcoffset():
            value = value.astimezone(UTC)
        return value.replace(tzinfo=None)

    def bind_processor(self, dialect):
        if dialect.name != "sqlite":
            return super().bind_processor(dialect)

        def to_text(value):  # SQLAlchemy's own SQLite DATETIME text, ~10x faster than its processor
            if value is None:
                return None
            if value.tzinfo is not None and value.utcoffset():
                value = value.astimezone(UTC)
            return value.replace(tzinfo=None).isoformat(" ", "microseconds")

        return to_text

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        if isinstance(value, str):  # raw SQLite text, e.g. from a textual query
            value = datetime.fromisoformat(value)
        return value.replace(tzinfo=UTC)


sessions = Table(
    "sessions",
    metadata,
    Column("id", String(200), primary_key=True),
    Column("name", Text),
    Column("agent_id", String(200)),
    Column("model", String(200)),
    Column("workflow", String(200)),
    Column("environment", String(100)),
    Column("agent_version", String(100)),
    Column("status", String(20), nullable=False, default="running"),
    Column("outcome", Text),
    Column("error_class", String(200)),
    Column("started_at", UTCDateTime),
    Column("ended_at", UTCDateTime),
    Column("last_event_at", UTCDateTime),
    Column("tags", JSONType),
    Column("metadata", JSONType),
    Column("source", String(100)),
    Column("replay_of", String(200), ForeignKey("sessions.id", ondelete="SET NULL")),
    Column("replay_from", Integer),
    Column("replay_to", Integer),
    Column("replay_config", JSONType),
    Column("created_at", UTCDateTime, nullable=False),
    Index(None, "started_at"),
    Index(None, "status"),
    Index(None, "model"),
    Index(None, "agent_id"),
    Index(None, "replay_of"),
)

ROLLUP_COLUMNS = ("session_id", "seq", "type", "status", "retry", "duration_ms", "tokens_in", "tokens_out", "cost_usd",
                  "timestamp", "tool_name", "error_class")

steps = Table(
    "steps",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("session_id", String(200), ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("event_id", String(200), nullable=False),
    Column("parent_id", String(200)),
    Column("type", String(20), nullable=False),
    Column("timestamp", UTCDateTime),
    Column("duration_ms", Float),
    Column("agent_id", String(200)),
    Column("model", String(200)),
    Column("content", Text),
    Column("tool_name", String(200)),
    Column("tool_args", JSONType),
    Column("tool_call_id", String(200)),
    Column("status", String(20), nullable=False, default="ok"),
    Column("error_class", String(200)),
    Column("retry", Integer, nullable=False, default=0),
    Column("tokens_in", Integer),
    Column("tokens_out", Integer),
    Column("cost_usd", Float),
    Column("metadata", JSONType),
    Column("redacted", Integer, nullable=False, default=0),
    UniqueConstraint("session_id", "event_id"),
    # A run's steps in order, and everything analytics sums per run (replay_core.analytics),
    # so its passes over a million steps read this index rather than rows full of content.
    Index("ix_steps_rollup", *ROLLUP_COLUMNS),
    Index(None, "tool_name"),
)

# The context window at a step can be many kilobytes: kept apart so that listing
# and timeline queries never drag it along.
step_contexts = Table(
    "step_contexts",
    metadata,
    Column("session_id", String(200), ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True),
    Column("event_id", String(200), primary_key=True),
    Column("context", JSONType, nullable=False),
)

attachments = Table(
    "attachments",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("session_id", String(200), ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False),
    Column("event_id", String(200)),
    Column("name", String(300)),
    Column("mime_type", String(100)),
    Column("data", LargeBinary, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index(None, "session_id", "event_id"),
)

annotations = Table(
    "annotations",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("session_id", String(200), ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False),
    Column("event_id", String(200)),
    Column("author", String(200)),
    Column("label", String(50), nullable=False),
    Column("text", Text),
    Column("created_at", UTCDateTime, nullable=False),
    Index(None, "session_id"),
)

# Who did what, when, from where (replay_core.team.audit): imports, replays, deletes, replaces,
# sign-ins and failed ones. Never a secret: `detail` holds counts and names, not bodies.
audit_log = Table(
    "audit_log",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", UTCDateTime, nullable=False),
    Column("who", String(200), nullable=False),
    Column("role", String(20), nullable=False),
    Column("origin", String(200), nullable=False),
    Column("action", String(50), nullable=False),
    Column("outcome", String(20), nullable=False),
    Column("target", Text),
    Column("detail", JSONType),
    Index(None, "at"),
    Index(None, "action", "origin", "at"),  # sign-in throttling counts one client's recent failures
)

"""SQLAlchemy table definitions. Only `store.py` and the alembic migrations use them.

Core tables rather than ORM classes: ingestion is bulk `insert()` of dicts and reads
are narrow selects, so the ORM's identity map would only cost time.
"""

from datetime import UTC, datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
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
    text,
)

from .plain import sqlite_time

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


class _JSON(TypeDecorator):
    """JSON, stored as JSONB on PostgreSQL. PostgreSQL's dialect package is imported only by a
    PostgreSQL engine, not with these tables: on SQLite it was a tenth of `agent-replay stats`."""

    impl = JSON
    cache_ok = True

    def load_dialect_impl(self, dialect):
        if dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import JSONB

            return dialect.type_descriptor(JSONB(none_as_null=True))
        return dialect.type_descriptor(self.impl_instance)


JSONType = _JSON(none_as_null=True)


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

        return sqlite_time

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
    Column("user_id", String(200)),
    Column("thread_id", String(200)),
    Index(None, "started_at"),
    Index(None, "status"),
    Index(None, "model"),
    Index(None, "agent_id"),
    Index(None, "replay_of"),
    Index(None, "user_id", "started_at"),
    Index(None, "thread_id", "started_at"),
)

ROLLUP_COLUMNS = (
    "session_id",
    "seq",
    "type",
    "status",
    "retry",
    "duration_ms",
    "tokens_in",
    "tokens_out",
    "cost_usd",
    "timestamp",
    "tool_name",
    "error_class",
)

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
    # A tool call's tool and arguments, hashed (storage.rollups.call_key; NULL for other steps): a live
    # run's next batch finds the calls it repeats (loops) through the index below, not by reading every
    # stored call's arguments back, which grew with the run at every batch.
    Column("call_key", String(32)),
    # An OTLP step's place in its run's order (ingest.formats.otel.ordering.place; NULL for other sources): a
    # late batch's steps are put among the stored ones by it, compared in Python, never by the database's collation.
    Column("place", Text),
    UniqueConstraint("session_id", "event_id"),
    # A run's steps in order, and everything analytics sums per run (replay_core.analytics),
    # so its passes over a million steps read this index rather than rows full of content.
    Index("ix_steps_rollup", *ROLLUP_COLUMNS),
    Index(None, "tool_name"),
    Index(
        "ix_steps_call_key",
        "session_id",
        "call_key",
        sqlite_where=text("call_key IS NOT NULL"),
        postgresql_where=text("call_key IS NOT NULL"),
    ),
    # and a run's calls and results by call id (which calls a new result answers, their first ok result)
    Index(
        "ix_steps_call_id",
        "session_id",
        "tool_call_id",
        sqlite_where=text("tool_call_id IS NOT NULL"),
        postgresql_where=text("tool_call_id IS NOT NULL"),
    ),
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
    Column("data", LargeBinary),  # bytes of attachments stored before 0007; newer ones point at media_blobs
    Column("created_at", UTCDateTime, nullable=False),
    Column("sha256", String(64), ForeignKey("media_blobs.sha256")),
    Column("target", JSONType),  # where the step acted on the image: {"x", "y"} or {"box": [x, y, w, h]}
    Index(None, "session_id", "event_id"),
)

# image bytes, once per content hash however many steps show them (a page that did not change)
media_blobs = Table(
    "media_blobs",
    metadata,
    Column("sha256", String(64), primary_key=True),
    Column("mime_type", String(100), nullable=False),
    Column("size", Integer, nullable=False),
    Column("width", Integer),
    Column("height", Integer),
    Column("data", LargeBinary, nullable=False),
    Column("thumbnail", LargeBinary),
    Column("created_at", UTCDateTime, nullable=False),
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

# OTLP arrives in batches, and a trace's spans may be spread over several (children end and
# are exported before their parents). These two tables let a later batch join what earlier
# ones stored: where each trace lives (`settled` once its root or its session.id was seen;
# until then it lives in a provisional session named by the trace id), and the model calls and
# tool executions an earlier batch left unanswered (dropped once the trace has been idle).
otlp_traces = Table(
    "otlp_traces",
    metadata,
    Column("trace_id", String(32), primary_key=True),
    Column("session_id", String(200), nullable=False),
    Column("settled", Boolean, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Index(None, "session_id"),
    Index(None, "updated_at"),
)

otlp_open_calls = Table(
    "otlp_open_calls",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("trace_id", String(32), nullable=False),
    Column("side", String(10), nullable=False),  # "call": a model emitted it; "tool": a tool span no call matched
    Column("event_id", String(200), nullable=False),  # the stored step standing for it
    Column("name", Text),
    Column("call_id", Text),
    Column("arguments", JSONType),
    Column("t_ns", BigInteger),
    Index(None, "trace_id"),
)

# Where `agent-replay watch` has read up to in each file it follows: restart-safe tailing.
# `inode` and `size` tell a file replaced (new inode, or shorter than what was read) from one appended to.
watch_offsets = Table(
    "watch_offsets",
    metadata,
    Column("path", String(1000), primary_key=True),
    Column("inode", BigInteger),
    Column("offset", BigInteger, nullable=False),
    Column("format", String(100)),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("fingerprint", String(64)),  # watch.fingerprint of what was read: a copy-truncated file differs
)

# Experiments (whatif/experiment.py): datasets of cases, and every case × variant replayed.
# A dataset's version goes up with every change; a case remembers the version it came in
# with, so an experiment pinned to version v reads exactly the cases it ran on.
datasets = Table(
    "datasets",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("version", Integer, nullable=False, default=1),
    Column("description", Text),
    Column("match", String(20), nullable=False, default="equals"),  # how an expected outcome is matched: equals|contains|regex
    Column("made_from", JSONType),  # the filter or ids it was made from, per version
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

dataset_cases = Table(
    "dataset_cases",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("dataset_id", Integer, ForeignKey("datasets.id", ondelete="CASCADE"), nullable=False),
    Column("session_id", String(200), nullable=False),  # no FK: a case outlives nothing, but says when its run is gone
    Column("expected", Text),  # None: the original's own outcome counts as right
    Column("version", Integer, nullable=False),  # the dataset version that added it
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("dataset_id", "session_id"),
)

experiments = Table(
    "experiments",
    metadata,
    Column("id", String(60), primary_key=True),
    Column("dataset_id", Integer, ForeignKey("datasets.id", ondelete="CASCADE"), nullable=False),
    Column("dataset_version", Integer, nullable=False),
    Column("settings", JSONType, nullable=False),  # variants (replay configs), start point, scorers, budget, concurrency
    Column("status", String(20), nullable=False),  # running | done | stopped | budget | failed
    Column("message", Text),
    Column("created_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime),
    Index(None, "dataset_id"),
)

experiment_runs = Table(
    "experiment_runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("experiment_id", String(60), ForeignKey("experiments.id", ondelete="CASCADE"), nullable=False),
    Column("case_session", String(200), nullable=False),
    Column("variant", Integer, nullable=False),
    Column("state", String(20), nullable=False),  # running (claimed) | done
    Column("replay_session", String(300)),
    Column("outcome", String(30)),  # the replay's outcome (completed, final_answer, diverged, budget, provider_error, error)
    Column("error_class", String(200)),
    Column("passed", Integer),  # 1/0 once scored
    Column("scores", JSONType),  # [{name, passed, score, reason, cost_usd?}]
    Column("cost_usd", Float),
    Column("tokens_in", Integer),
    Column("tokens_out", Integer),
    Column("latency_ms", Float),
    Column("overhead_ms", Float),
    Column("departed_seq", Integer),  # the original's step where the replay departed (None: it did not)
    Column("attempts", Integer, nullable=False, default=1),
    Column("started_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime),
    Column("lease_until", UTCDateTime),  # a running claim is its runner's until then (renewed while it runs)
    UniqueConstraint("experiment_id", "case_session", "variant"),
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

# Review queues (replay_core.team.queues): a frozen list of runs to review with a rubric.
# An item is held (`held_by`, `held_until`) while a reviewer has it open: the hold lives
# here, not in a process, so it outlives a restart and expires by itself.
review_queues = Table(
    "review_queues",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False),
    Column("made_from", JSONType),  # the filter (as its options) or the ids the items came from
    Column("rubric", JSONType, nullable=False),  # verdicts, criteria, note, should_have
    Column("reviews_per_item", Integer, nullable=False, default=1),
    Column("assignees", JSONType),  # reviewer names; empty: open to every reviewer
    Column("created_by", String(200), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

queue_items = Table(
    "queue_items",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("queue_id", Integer, ForeignKey("review_queues.id", ondelete="CASCADE"), nullable=False),
    Column("position", Integer, nullable=False),
    Column("session_id", String(200), nullable=False),  # no FK: a deleted run leaves its item, shown as gone
    Column(
        "reviews", Integer, nullable=False, default=0
    ),  # verdicts given: kept by Store.save_queue_review, so claims need no count
    Column("held_by", String(200)),
    Column("held_until", UTCDateTime),
    UniqueConstraint("queue_id", "session_id"),
    Index(None, "queue_id", "position"),
)

# One row per (item, reviewer): a review (verdict set) or a skip (verdict None, skipped true).
queue_reviews = Table(
    "queue_reviews",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("queue_id", Integer, ForeignKey("review_queues.id", ondelete="CASCADE"), nullable=False),
    Column("item_id", Integer, ForeignKey("queue_items.id", ondelete="CASCADE"), nullable=False),
    Column("reviewer", String(200), nullable=False),
    Column("verdict", String(200)),
    Column("criteria", JSONType),  # {criterion name: "pass" | "fail"}
    Column("note", Text),
    Column("should_have", Text),  # "what should it have done"
    Column("skipped", Boolean, nullable=False, default=False),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("item_id", "reviewer"),
    Index(None, "queue_id"),
)

# Read-only links (replay_core.team.shares): only the token's SHA-256 is kept.
share_links = Table(
    "share_links",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("kind", String(20), nullable=False),  # run | compare | queue
    Column("target", JSONType, nullable=False),  # {"session"} | {"session", "other"} | {"queue"}
    Column("created_by", String(200), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    Column("revoked_at", UTCDateTime),
    Column("revoked_by", String(200)),
    Column("opened", Integer, nullable=False, default=0),
    Column("last_opened_at", UTCDateTime),
)

# When each periodic job (the retention sweep) last ran, whichever replica ran it: a replica
# claims a run by moving `last_run_at` forward, so N app processes sweep once per period.
# Monitors (monitors/): a rule over the runs' rollups, judged with an interval on a schedule, and the
# alerts it opened; an alert resolves once. Webhook secrets are never stored: the NAME of a variable.
monitors = Table(
    "monitors",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("rule", JSONType, nullable=False),  # metric, filter, window, threshold or change, min runs
    Column("webhook_url", Text),
    Column("webhook_secret_env", String(200)),  # the NAME of the variable holding the signing secret
    Column("created_at", UTCDateTime, nullable=False),
    Column("muted_until", UTCDateTime),
    Column("last_checked_at", UTCDateTime),
    Column("last_result", JSONType),  # the last judgement: figure, interval, baseline, verdict
)

monitor_alerts = Table(
    "monitor_alerts",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("monitor_id", Integer, ForeignKey("monitors.id", ondelete="CASCADE"), nullable=False),
    Column("opened_at", UTCDateTime, nullable=False),
    Column("resolved_at", UTCDateTime),
    Column("figure", JSONType, nullable=False),  # what fired it: value, interval, baseline, runs link, patterns
    Column("acked_by", String(200)),
    Column("acked_at", UTCDateTime),
    Column("delivered", JSONType),  # {"opened": attempts…, "resolved": …}: what the webhook answered
    Index(None, "monitor_id", "resolved_at"),
)

# The evaluation loop (monitors/loop.py): an experiment run again on a schedule (daily, on a new
# dataset version, on a new configured model), each run kept with its comparison against the one
# before; and a review queue that feeds its "bad" verdicts to a dataset's next version.
experiment_schedules = Table(
    "experiment_schedules",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("dataset", String(200), nullable=False),  # a dataset's name: each run takes its newest version
    Column("trigger", String(30), nullable=False),  # daily | dataset_version | new_model
    Column("settings", JSONType, nullable=False),  # variants, scorers, start, concurrency, budgets
    Column("models_seen", JSONType),  # the configured model names at the last run (new_model)
    Column("created_by", String(200), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

schedule_runs = Table(
    "schedule_runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("schedule_id", Integer, ForeignKey("experiment_schedules.id", ondelete="CASCADE"), nullable=False),
    Column("experiment_id", String(60)),  # None when it could not start (`result` says why)
    Column("reason", String(300), nullable=False),  # why it ran: first run, a day since, dataset v3, new model …
    Column("dataset_version", Integer),
    Column("started_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime),
    Column("result", JSONType),  # pass rates with intervals, against the previous run: regressions, verdict
    Index(None, "schedule_id"),
)

queue_feeds = Table(
    "queue_feeds",
    metadata,
    Column("queue_id", Integer, ForeignKey("review_queues.id", ondelete="CASCADE"), primary_key=True),
    Column("dataset", String(200), nullable=False),
    Column("verdicts", JSONType, nullable=False),  # the verdict labels that count as bad
    Column("created_by", String(200), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

job_runs = Table(
    "job_runs",
    metadata,
    Column("name", String(50), primary_key=True),
    Column("last_run_at", UTCDateTime, nullable=False),
)

# Per-run rollups (storage/rollups.py): what analytics and the runs list need of a run's steps,
# kept in the transaction that writes the steps. Dimensions stay on `sessions` (joined by key):
# a copy would be one more thing to keep in step through ends, renames, idle expiry and moves.
run_rollups = Table(
    "run_rollups",
    metadata,
    Column("session_id", String(200), ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True),
    Column("steps", Integer, nullable=False),
    Column("max_seq", Integer),
    Column("tokens_in", BigInteger),
    Column("tokens_out", BigInteger),
    Column("cost_usd", Float),
    Column("cost_unknown_steps", Integer, nullable=False),
    Column("retried_steps", Integer, nullable=False),
    Column("errored_steps", Integer, nullable=False),
    Column("first_error_at", UTCDateTime),
    Column("blocked_steps", Integer, nullable=False),
    Column("approvals", Integer, nullable=False),
    Column("fallback_blocks", Integer, nullable=False),
    Column("fallback_agent", Integer, nullable=False),
    Column("tool_calls", Integer, nullable=False),
    Column("tool_failures", Integer, nullable=False),
    Column("cycles", Integer, nullable=False),
    Column("loops", Integer, nullable=False),
    Column("redundant_calls", Integer, nullable=False),
    Column("durations_us", Text),  # step durations in whole µs, comma-separated (step latency percentiles)
)

# Per run, tool and error class: tool calls and errored steps (the tools and error-class charts).
run_breakdown = Table(
    "run_breakdown",
    metadata,
    Column("session_id", String(200), ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False),
    Column("tool_name", String(200)),
    Column("error_class", String(200)),
    Column("tool_calls", Integer, nullable=False),
    Column("errored", Integer, nullable=False),
    Index(None, "session_id"),
)

# Per-day rollups (storage/daily.py): the analytics dashboard's sums without reading a row per run.
# `daily_members` is each run's contribution (its dimensions copied from `sessions`, its numbers
# from `run_rollups`, as integers so sums add and subtract exactly); `daily_cells` sums them per
# cell (UTC start day × model × agent × status × source × replay or not); `daily_tools` and
# `daily_errors` per cell and tool / error class. Kept in each write's transaction.
DAILY_SUMS = (
    "tokens_in",
    "tokens_out",
    "cost_nano",
    "cost_known_nano",
    "runs_cost_known",
    "runs_cost_unknown",
    "steps",
    "retried_steps",
    "runs_with_retry",
    "blocked_steps",
    "approvals",
    "runs_with_intervention",
    "fallback_blocks",
    "fallback_agent",
    "runs_with_fallback",
    "tool_calls",
    "tool_failures",
    "cycles",
    "loops",
    "runs_with_loops",
    "redundant_calls",
    "runs_cost_unsummed",
)
DAILY_KEY = ("day", "model", "agent_id", "status", "source", "replay")


def _daily_key() -> list[Column]:
    return [
        Column("day", String(10)),
        Column("model", String(200)),
        Column("agent_id", String(200)),
        Column("status", String(20)),
        Column("source", String(100)),
        Column("replay", Integer, nullable=False),
    ]


daily_members = Table(
    "daily_members",
    metadata,
    Column("session_id", String(200), primary_key=True),  # no cascade: a deleted run's cell must be found to recompute it
    Column("cell", String(40), nullable=False),
    *_daily_key(),
    Column("started_at", UTCDateTime),
    Column("duration_us", BigInteger),
    Column("first_error_us", BigInteger),
    *(Column(name, BigInteger) for name in DAILY_SUMS),
    # the run rollup's step durations, copied (migration 0012): the dashboard reads them with the
    # run times, in one pass over the members, not joined to run_rollups
    Column("durations_us", Text),
    Index(None, "cell"),
    Index(None, "started_at"),
)
daily_cells = Table(
    "daily_cells",
    metadata,
    Column("cell", String(40), primary_key=True),
    *_daily_key(),
    Column("runs", BigInteger, nullable=False),
    *(Column(name, BigInteger) for name in DAILY_SUMS),
    Index(None, "day"),
)
daily_tools = Table(
    "daily_tools",
    metadata,
    Column("cell", String(40), nullable=False),
    Column("tool_name", String(200)),
    Column("calls", BigInteger, nullable=False),
    Column("failures", BigInteger, nullable=False),
    Column("runs_with_failure", BigInteger, nullable=False),
    Index(None, "cell"),
)
daily_errors = Table(
    "daily_errors",
    metadata,
    Column("cell", String(40), nullable=False),
    Column("error_class", String(200)),
    Column("errors", BigInteger, nullable=False),
    Column("runs", BigInteger, nullable=False),
    Index(None, "cell"),
)

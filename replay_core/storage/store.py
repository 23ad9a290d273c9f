"""The Store: the only code that speaks SQL.

SQLite (WAL, foreign keys, busy timeout) by default, PostgreSQL by URL; the same code
and the same tests run on both. Schema changes go through the alembic migrations in
`replay_core/migrations`, applied when a Store opens.
"""

from __future__ import annotations

import functools
import threading
from contextlib import contextmanager
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import islice
from operator import ge, itemgetter
from typing import TYPE_CHECKING, Any

import orjson
from sqlalchemy import (
    Engine,
    Integer,
    Text,
    and_,
    bindparam,
    cast,
    case,
    column,
    create_engine,
    delete,
    event,
    exists,
    false,
    func,
    insert,
    null,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.engine import Connection

from .. import config
from ..vocabulary import SessionStatus, now_utc
from . import daily, rollups
from .actor import DELETE, EDITOR, Actor, PermissionDenied, require
from .tables import (
    annotations, attachments, audit_log, dataset_cases, datasets, experiment_runs, experiments, media_blobs, metadata,
    job_runs, otlp_open_calls, otlp_traces, run_breakdown, run_rollups, sessions, step_contexts, steps, watch_offsets,
)
from .tables import queue_items, queue_reviews, review_queues, share_links
from .plain import EXPERIMENT_SOURCE  # experiments' replay sessions: kept out of lists and analytics unless asked for
from .search import PG_DOCUMENT, SQLITE_FILL_AFTER, SearchQuery, snippet

if TYPE_CHECKING:  # made only by the reads that return events: `stats` opens a Store without pydantic
    from ..events import SessionEndEvent, SessionEvent, StepEvent

RETENTION = Actor("retention policy", EDITOR, "retention")  # who deletes old runs, in the audit log
CHUNK = 500  # ids per IN (...) list: well under SQLite's and PostgreSQL's parameter limits

SESSION_FIELDS = (
    "name", "agent_id", "model", "workflow", "environment", "agent_version", "status",
    "outcome", "error_class", "started_at", "ended_at", "tags", "metadata", "source",
    "replay_of", "replay_from", "replay_to", "replay_config",
)
STEP_COLUMNS = (
    "seq", "event_id", "parent_id", "type", "timestamp", "duration_ms", "agent_id", "model",
    "content", "tool_name", "tool_args", "tool_call_id", "status", "error_class", "retry",
    "tokens_in", "tokens_out", "cost_usd", "metadata", "redacted",
)
_SEQ, _EVENT_ID, _TIMESTAMP = STEP_COLUMNS.index("seq"), STEP_COLUMNS.index("event_id"), STEP_COLUMNS.index("timestamp")
_ROW_OF_STEP = itemgetter(*STEP_COLUMNS)
ROW_COLUMNS = (*STEP_COLUMNS, "session_id", "call_key")  # a step row as `Store.write` inserts it
_ROLLUP_OF_ROW = itemgetter(*(ROW_COLUMNS.index(name) for name in rollups.FIELDS))  # a step row as rollups read it
_JSON_STEP_COLUMNS = tuple(STEP_COLUMNS.index(name) for name in ("tool_args", "metadata"))


def _decoded_step_columns(rows: list[Sequence], dialect: str) -> list[Sequence]:
    """Step rows as the driver returns them, turned into columns (STEP_COLUMNS' order) with the values
    SQLAlchemy's column types would have made: the timestamp timezone-aware UTC (tables.UTCDateTime),
    the JSON columns parsed (and a bare number, which SQLite hands back as a number, kept: SQLAlchemy's
    JSON type failed on it). SQLite hands back text; psycopg a naive datetime and JSON it parsed itself
    (the engine's json_deserializer)."""
    if not rows:
        return [() for _ in STEP_COLUMNS]
    columns = list(zip(*rows, strict=True))
    stamps = columns[_TIMESTAMP]
    if dialect == "sqlite":  # stored naive, as "YYYY-MM-DD HH:MM:SS.ffffff"
        columns[_TIMESTAMP] = [None if v is None else datetime.fromisoformat(v + "+00:00") for v in stamps]
        for i in _JSON_STEP_COLUMNS:  # a bare number comes back a number (the column's numeric affinity)
            columns[i] = [v if v is None else orjson.loads(v) if isinstance(v, (str, bytes)) else v for v in columns[i]]
    else:
        columns[_TIMESTAMP] = [None if v is None else v.replace(tzinfo=UTC) for v in stamps]
    return columns


def _fetched(conn: Connection, query: Any) -> list[Sequence]:
    """The driver's own row tuples, fetched at once: SQLAlchemy's Row objects and per-value processors
    were 60% of a 100,000-step open, a row at a time another quarter."""
    result = conn.execute(query)
    rows = result.cursor.fetchall()
    result.close()
    return rows


def step_events(session_id: str, rows: Iterable[Sequence], fields_set: set[str] | None = None) -> list[StepEvent]:
    """Steps of one session from decoded rows of STEP_COLUMNS (validated on their way in: built without
    validation), sharing one fields-set: `fields_set` (step_fields_set()) or a new one for this load."""
    from ..events import StepEvent

    shared = step_fields_set() if fields_set is None else fields_set
    return StepEvent.trusted_rows(STEP_COLUMNS, rows, shared, session_id=session_id)


def step_fields_set() -> set[str]:
    """The fields-set of a load's steps: one per load, so an assignment to one step marks no other load's."""
    return {*STEP_COLUMNS, "session_id"}


REVIEW_LABELS = ("good", "bad", "needs_attention")
# SessionFilter.has: runs with a retried step, an errored step, a blocked action or approval,
# a fallback block the agent took over, a loop (same tool and arguments 3+ times, retries aside).
HAS_FLAGS = ("retry", "error", "intervention", "fallback", "loop")


def _json_dumps(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def _chunks(items: Sequence, size: int = CHUNK) -> Iterator[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


ENDED = frozenset({SessionStatus.SUCCEEDED.value, SessionStatus.FAILED.value, SessionStatus.UNKNOWN.value})
FINAL_FIELDS = ("status", "name", "outcome")  # what only an explicit replace changes on an ended run


def _call_key(values: dict[str, Any]) -> str | None:
    return rollups.call_key(values["type"], values["tool_name"], values["tool_args"])


@dataclass
class WriteResult:
    """What one `Store.write` did; `conflicts` names the ended runs whose end (or status,
    name, outcome) the events would have changed, which was left as it was."""

    sessions: list[str] = field(default_factory=list)
    steps: int = 0
    duplicates: int = 0
    conflicts: list[str] = field(default_factory=list)


def step_row(step: StepEvent) -> tuple[tuple, Any]:
    """A step as `Store.write` stores it: its row (ROW_COLUMNS, the event_id its identity, seq None
    until placed; a tuple, the cheapest to send between processes) and its context."""
    values = step.__dict__
    row = (*_ROW_OF_STEP(values), step.session_id, _call_key(values))
    if row[_EVENT_ID] is None:
        row = (*row[:_EVENT_ID], step.identity(), *row[_EVENT_ID + 1 :])
    return row, values["context"]


@dataclass(slots=True)
class StepRow:
    """A step validated and redacted on a path that makes no StepEvent (ingest.step_rows):
    its `step_row`, and how many values redaction replaced in it. `Store.write` takes it among events."""

    session_id: str
    row: tuple
    context: Any
    redacted: int  # values this redaction replaced (the report's count), not the row's `redacted`
    kind = "row"

    @classmethod
    def of(cls, values: dict[str, Any], redacted: int) -> StepRow:
        """From a step's values (every StepEvent field) whose event_id is set."""
        sid = values["session_id"]
        return cls(sid, (*_ROW_OF_STEP(values), sid, _call_key(values)), values["context"], redacted)


@dataclass
class WriteBatch:
    """Events as `Store.write` takes them apart: the sessions in order of first appearance, the
    fields their session events set, their ends, and their steps as `step_row`s. Plain data, so a
    reader process can build it and send it (ingest.parallel) at a fraction of the cost of events."""

    order: dict[str, None] = field(default_factory=dict)
    opened: dict[str, dict[str, Any]] = field(default_factory=dict)
    ended: dict[str, SessionEndEvent] = field(default_factory=dict)
    steps: dict[str, list[tuple[tuple, Any]]] = field(default_factory=dict)
    # set by `bind`: the rows and contexts hold their values as the database takes them, and what
    # the writer would have read from the unbound rows is here: each run's rollup and (first, last) time
    bound: bool = False
    rolled: dict[str, Any] = field(default_factory=dict)
    times: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    def add(self, ev: SessionEvent | StepEvent | StepRow | SessionEndEvent) -> None:
        sid = ev.session_id
        self.order.setdefault(sid)
        if ev.kind == "step":
            self.steps.setdefault(sid, []).append(step_row(ev))
        elif ev.kind == "row":
            self.steps.setdefault(sid, []).append((ev.row, ev.context))
        elif ev.kind == "session":
            fields = self.opened.setdefault(sid, {})
            for name in SESSION_FIELDS:
                value = getattr(ev, name)
                if value is not None:
                    fields[name] = value
        else:
            self.ended[sid] = ev

    def bind(self, dialect) -> None:
        """Do in a reader process (ingest.parallel) the writer's work on rows that need no stored
        state: the types' conversions, the rollups of the runs and their first and last times.
        Only when every step has its seq and no run repeats an event id (else the writer numbers and
        skips, from the unbound rows); the writer uses the rollups only for runs the write creates."""
        for pending in self.steps.values():
            if len({row[_EVENT_ID] for row, _ in pending}) != len(pending) or any(row[_SEQ] is None for row, _ in pending):
                return
        row_procs = _bind_processors(dialect, steps, ROW_COLUMNS)
        context_proc = step_contexts.c.context.type._cached_bind_processor(dialect)
        for sid, pending in self.steps.items():
            rows = [row for row, _ in pending]
            self.rolled[sid] = rollups.rollup_of(sid, sorted(map(_ROLLUP_OF_ROW, rows), key=itemgetter(0)))
            stamps = [row[_TIMESTAMP] for row in rows if row[_TIMESTAMP] is not None]
            self.times[sid] = (min(stamps), max(stamps)) if stamps else (None, None)
            self.steps[sid] = [(_bound(row, row_procs), None if context is None or context_proc is None else context_proc(context))
                               for row, context in pending]
        self.bound = True

    def first_last(self, sid: str) -> tuple[Any, Any]:
        """The earliest and latest time of this run's steps in the batch (None, None without any)."""
        if self.bound:
            return self.times.get(sid, (None, None))
        stamps = [row[_TIMESTAMP] for row, _ in self.steps.get(sid, ()) if row[_TIMESTAMP] is not None]
        return (min(stamps), max(stamps)) if stamps else (None, None)


class WriteRefused(ValueError):
    """Events the store will not take, nothing of the batch stored. `field` names what is
    at fault; `status` is the HTTP answer that fits (422 a bad reference, 409 a conflict)."""

    def __init__(self, reason: str, *, field: str, status: int = 422):
        super().__init__(reason)
        self.reason, self.field, self.status = reason, field, status

    def __reduce__(self):  # whole across processes (storage.worker): its field and status are keywords
        return functools.partial(WriteRefused, field=self.field, status=self.status), (self.reason,)


@dataclass(frozen=True)
class SessionFilter:
    """The filters shared by the runs list, the CLI and analytics."""

    status: str | None = None
    model: str | None = None
    agent_id: str | None = None
    workflow: str | None = None
    environment: str | None = None
    agent_version: str | None = None
    tag: str | None = None
    source: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    text: str | None = None
    review: str | None = None
    replay_of: str | None = None
    ids: tuple[str, ...] | None = None
    failed_tool: str | None = None  # runs where this tool failed
    error_class: str | None = None  # runs that ended with, or had an errored step of, this class
    has: str | None = None  # runs with one of HAS_FLAGS
    experiments: bool = False  # include experiments' replay sessions (left out by default)
    include_replays: bool = False  # include what-if replays (replay_of set); originals only by default


class Store:
    """Storage for sessions, steps, contexts, attachments and annotations."""

    def __init__(self, url: str | None = None, *, migrate: bool = True, engine: Engine | None = None):
        self.url = config.database_url(url)
        self.engine = engine or make_engine(self.url)
        self.engine_given = engine is not None  # its connection settings live only in this process
        self._write_lock = threading.Lock()
        self._unplanned = 0 if self.dialect == "postgresql" else None  # steps written before statistics were seen
        if migrate:
            self.upgrade()

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def upgrade(self) -> None:
        """Bring the schema to the newest migration (idempotent)."""
        from .migrations import upgrade_to_head

        upgrade_to_head(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    # ------------------------------------------------------------------ writing

    def write(
        self, events: Iterable[SessionEvent | StepEvent | SessionEndEvent], *, default_source: str | None = None,
        replace: bool = False, refuse_conflicts: bool = False,
    ) -> WriteResult:
        """Store validated, redacted events in one transaction.

        Idempotent: a step whose event_id the session already holds is skipped and
        counted as a duplicate. Steps without seq are placed after the last one.

        Safe across processes: the transaction holds the database's write lock on SQLite
        (BEGIN IMMEDIATE) and, on PostgreSQL, a row lock on each session it writes, taken
        before the session's last seq and known event ids are read; sessions are created
        with INSERT … ON CONFLICT DO NOTHING, so two writers creating one run both succeed.

        An ended run keeps its end, status, name and outcome unless `replace`: a different
        value is left out and named in `conflicts`, or with `refuse_conflicts` refuses the
        batch (WriteRefused, 409). A `replay_of` naming no stored run is refused (422).
        """
        batch = WriteBatch()
        for ev in events:
            batch.add(ev)
        if not batch.order:
            return WriteResult()
        return self.write_batches([batch], default_source=default_source, replace=replace, refuse_conflicts=refuse_conflicts)

    def write_batches(
        self, batches: Iterable[WriteBatch], *, default_source: str | None = None, replace: bool = False,
        refuse_conflicts: bool = False, counts: list[tuple[int, int]] | None = None,
    ) -> WriteResult:
        """`write` of several batches in one transaction, each stored as it comes, so that a reader
        process can parse the next one meanwhile (ingest.parallel). The same as one `write` of all
        their events as long as each session's events are all in one batch: an error raised by the
        iterable rolls the whole transaction back. `counts` (when given) gets each non-empty batch's
        (steps stored, duplicates), for a caller answering per batch (the HTTP API's joined writes)."""
        result = WriteResult()
        now = now_utc()
        with self._write_lock, self._write_transaction() as conn, self._search_indexed(conn) as index_new:
            listed: dict[str, None] = {}
            analyzed = ANALYZE_WITHIN
            for batch in batches:
                if batch.order:
                    listed.update(batch.order)
                    before = result.steps, result.duplicates
                    self._write_batch(conn, batch, now, result, default_source, replace, refuse_conflicts)
                    if counts is not None:
                        counts.append((result.steps - before[0], result.duplicates - before[1]))
                    index_new()  # while the reader makes the next batch
                    if self.dialect == "postgresql" and len(listed) >= analyzed:
                        conn.exec_driver_sql(f"ANALYZE {', '.join(t.name for t in RUN_TABLES)}")
                        analyzed *= 4
            # once for the whole write: a day's cell holds runs of many batches, and was summed again after each
            daily.refresh(conn, list(listed), _bulk_insert)
        result.sessions = list(listed)
        if self._unplanned is not None:
            self._first_statistics(result.steps)
        return result

    def _first_statistics(self, written: int) -> None:
        """PostgreSQL plans a steps table it never analyzed as nearly empty, and then scans a whole run
        where the rollups meant an index lookup (seconds a batch at 30,000 steps, until autovacuum's first
        ANALYZE a minute or more later): past 1,000 steps written, this process looks once, and runs that
        first ANALYZE itself if no one has (PostgreSQL's advice after a bulk load)."""
        with self._write_lock:  # writers on other threads count too, and only one of them looks
            if self._unplanned is None:
                return
            self._unplanned += written
            if self._unplanned < 1000:
                return
            self._unplanned = None
        with self.engine.connect() as conn:
            seen = conn.execute(text("SELECT last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL FROM pg_stat_user_tables"
                                     " WHERE relid = 'steps'::regclass")).scalar()
            if not seen:
                conn.execute(text("ANALYZE steps"))
            conn.commit()

    def _write_batch(self, conn, batch: WriteBatch, now, result: WriteResult, default_source, replace, refuse_conflicts) -> None:
        ids, opened, ended, by_session = list(batch.order), batch.opened, batch.ended, batch.steps
        known = self._existing_sessions(conn, ids, lock=True)
        self._check_references(conn, ids, opened)
        created = self._create_sessions(conn, ids, known, opened, batch, now, default_source, ended)
        known.update(self._existing_sessions(conn, [sid for sid in ids if sid not in known and sid not in created], lock=True))
        if not replace:
            conflicts = self._keep_final(known, opened, ended)
            if conflicts and refuse_conflicts:
                raise WriteRefused("; ".join(conflicts), field="status", status=409)
            result.conflicts += conflicts
        for sid, fields in opened.items():
            if sid in known and fields:
                conn.execute(update(sessions).where(sessions.c.id == sid).values(**fields))
        last_seen: dict[str, datetime] = {}
        rolled_new, stale, all_rows, all_contexts = {}, {}, [], []
        for sid, pending in by_session.items():
            dupes, new_rows, contexts = self._new_steps(conn, sid, pending, sid in known, batch.bound)
            if sid in created and sid not in known:  # every step of the run is in hand
                rolled_new[sid] = batch.rolled[sid] if batch.bound else rollups.rollup_of(
                    sid, sorted(map(_ROLLUP_OF_ROW, new_rows), key=itemgetter(0)))
            elif new_rows:
                stale[sid] = list(map(_ROLLUP_OF_ROW, new_rows))
            all_rows += new_rows
            all_contexts += contexts
            result.steps += len(new_rows)
            result.duplicates += dupes
            latest = batch.first_last(sid)[1]
            if latest is None and new_rows and sid not in ended:
                latest = now  # a live run's steps without times: when they arrived is when they happened
            if latest is not None:
                last_seen[sid] = latest
        # one executemany per table for the whole batch: statements per run were most of a big import
        _bulk_insert(conn, steps, ROW_COLUMNS, all_rows, bound=batch.bound)
        _bulk_insert(conn, step_contexts, ("session_id", "event_id", "context"), all_contexts, bound=batch.bound)
        rollups.write(conn, list(rolled_new), rolled_new.values(), _bulk_insert)
        rollups.append(conn, stale, _bulk_insert)
        moved: dict[bool, list[dict]] = {False: [], True: []}
        for sid, latest in last_seen.items():
            revive = sid in known and known[sid]["status"] == SessionStatus.INCOMPLETE and sid not in ended
            moved[revive].append({"sid": sid, "latest": latest})
        for revive, params in moved.items():
            if params:
                values: dict[str, Any] = {"last_event_at": bindparam("latest")}
                if revive:
                    values["status"] = SessionStatus.RUNNING.value
                conn.execute(update(sessions).where(sessions.c.id == bindparam("sid"))
                             .where(or_(sessions.c.last_event_at.is_(None), sessions.c.last_event_at < bindparam("latest")))
                             .values(**values), params)
        # the source's end time, else its last event's: never the time of this write, so a
        # re-import stores the same ended_at, and a file without times gives a run without them
        ends = [{"sid": sid, "e_status": end.status, "e_outcome": end.outcome, "e_class": end.error_class,
                 "e_at": end.ended_at or last_seen.get(sid)} for sid, end in ended.items()]
        if ends:
            conn.execute(update(sessions).where(sessions.c.id == bindparam("sid")).values(
                status=bindparam("e_status"), outcome=bindparam("e_outcome"), error_class=bindparam("e_class"),
                ended_at=func.coalesce(bindparam("e_at", type_=sessions.c.ended_at.type), sessions.c.last_event_at)), ends)

    def _write_transaction(self):
        """A write transaction: on SQLite it takes the write lock at BEGIN (IMMEDIATE), so a
        read at its start cannot be overtaken by another process's write before ours."""
        conn = self.engine.connect().execution_options(sqlite_immediate=True)
        return _Transaction(conn)

    def _existing_sessions(self, conn: Connection, ids: Sequence[str], *, lock: bool = False) -> dict[str, dict]:
        """The stored status, name and outcome of those of `ids` that exist; with `lock`, their
        rows stay locked (PostgreSQL: FOR UPDATE, in id order so writers never deadlock)."""
        known: dict[str, dict] = {}
        cols = (sessions.c.id, sessions.c.status, sessions.c.name, sessions.c.outcome, sessions.c.error_class)
        for part in _chunks(sorted(ids)):
            query = select(*cols).where(sessions.c.id.in_(part)).order_by(sessions.c.id)
            if lock and self.dialect == "postgresql":
                query = query.with_for_update()
            for row in conn.execute(query):
                known[row.id] = dict(row._mapping)
        return known

    def _check_references(self, conn: Connection, ids: Sequence[str], opened: dict[str, dict]) -> None:
        wanted = {f["replay_of"] for f in opened.values() if f.get("replay_of") is not None} - set(ids)
        if not wanted:
            return
        found = set(self._existing_sessions(conn, list(wanted)))
        for sid, fields in opened.items():
            if fields.get("replay_of") is not None and fields["replay_of"] not in found and fields["replay_of"] not in ids:
                raise WriteRefused(f"replay_of: session {sid!r} names {fields['replay_of']!r}, which is not a stored run",
                                   field="replay_of")

    @staticmethod
    def _keep_final(known: dict[str, dict], opened: dict[str, dict], ended: dict[str, SessionEndEvent]) -> list[str]:
        """Drop what would change an ended run (in place); one line per run that it touched."""
        conflicts = []
        for sid, row in known.items():
            if row["status"] not in ENDED:
                continue
            changed = []
            fields = opened.get(sid, {})
            for name in FINAL_FIELDS:
                if name in fields and fields[name] != row[name]:
                    changed.append(f"{name} {row[name]!r} → {fields.pop(name)!r}")
            fields.pop("ended_at", None)
            end = ended.get(sid)
            if end is not None:
                if (end.status, end.outcome, end.error_class) != (row["status"], row["outcome"], row["error_class"]):
                    changed.append(f"end {row['status']!r} → {end.status!r}")
                del ended[sid]
            if changed:
                conflicts.append(f"session {sid!r} already ended ({row['status']}); kept, not changed: {', '.join(changed)}"
                                 " (replace to change it)")
        return conflicts

    def _create_sessions(self, conn, ids, known, opened, batch: WriteBatch, now, default_source, ended) -> set[str]:
        """Insert the sessions not yet stored; returns those this transaction created (a
        concurrent writer may have created the others first). A run's start is the source's, else
        its first step's time; the time of arrival only for a live run (not ended in this batch:
        SDK, HTTP, watch), never for a finished file, which keeps `started_at` empty."""
        new_rows = []
        for sid in ids:
            if sid in known:
                continue
            fields = opened.get(sid, {})
            started = fields.get("started_at")
            if started is None:
                started = batch.first_last(sid)[0]
                if started is None:
                    started = None if sid in ended else now
            row = {name: fields.get(name) for name in SESSION_FIELDS}
            row.update(id=sid, started_at=started, created_at=now, status=fields.get("status") or "running")
            row["source"] = row["source"] or default_source
            new_rows.append(row)
        if not new_rows:
            return set()
        names = ("id", "created_at", *SESSION_FIELDS)
        created: set[str] = set()
        for part in _chunks(new_rows, 200):  # RETURNING says which rows were ours
            created.update(_insert_new(conn, sessions, names, [[row[n] for n in names] for row in part], "id"))
        return created

    def _new_steps(self, conn, sid: str, batch: list[tuple[tuple, Any]], existed: bool, bound: bool = False):
        """The rows (and contexts) of the steps of `batch` (`step_row`s) not stored yet, numbered; and the duplicates."""
        if not existed and bound:  # `WriteBatch.bind` found every seq given and no event id twice
            return 0, [row for row, _ in batch], [(sid, row[_EVENT_ID], context) for row, context in batch if context is not None]
        seen: set[str] = set()
        next_seq = 1
        if existed:
            ids = list({row[_EVENT_ID] for row, _ in batch})
            known = select(steps.c.event_id).where(steps.c.session_id == sid, steps.c.event_id.in_(bindparam("ids", expanding=True)))
            if self.dialect == "postgresql":  # one array, joined: the generic plan a pooled connection gets after a few
                # runs tested each of the run's steps against the list (75 ms a batch)
                id_array = _dialect_module(self.dialect).ARRAY(Text)
                wanted = func.unnest(bindparam("ids", type_=id_array)).table_valued("id").render_derived()
                known = select(steps.c.event_id).join_from(wanted, steps, and_(
                    steps.c.session_id == sid, steps.c.event_id == wanted.c.id))
            for part in _chunks(ids):  # an expanding parameter: ids are sent as values, not coerced into the statement one by one
                seen.update(conn.scalars(known, {"ids": list(part)}))
            next_seq = (conn.scalar(select(func.max(steps.c.seq)).where(steps.c.session_id == sid)) or 0) + 1
        batch_max = max((row[_SEQ] for row, _ in batch if row[_SEQ] is not None), default=0)
        next_seq = max(next_seq, batch_max + 1)
        rows, contexts, dupes = [], [], 0
        for row, context in batch:
            event_id = row[_EVENT_ID]
            if event_id in seen:
                dupes += 1
                continue
            seen.add(event_id)
            if row[_SEQ] is None:
                row = list(row)
                row[_SEQ] = next_seq
                next_seq += 1
            if context is not None:
                contexts.append((sid, event_id, context))
            rows.append(row)
        return dupes, rows, contexts

    def expire_idle(self, idle: timedelta | None = None, now: datetime | None = None) -> int:
        """Mark running sessions with no event for longer than `idle` as incomplete."""
        cutoff = (now or now_utc()) - (idle if idle is not None else config.idle_timeout())
        stale = and_(
            sessions.c.status == SessionStatus.RUNNING.value,
            func.coalesce(sessions.c.last_event_at, sessions.c.started_at, sessions.c.created_at) < cutoff,
        )
        with self._write_lock, self._write_transaction() as conn:
            ids = list(conn.scalars(select(sessions.c.id).where(stale)))
            for part in _chunks(ids):
                conn.execute(update(sessions).where(sessions.c.id.in_(part)).values(status=SessionStatus.INCOMPLETE.value))
            daily.refresh(conn, ids, _bulk_insert)  # a run's status is part of its cell
            return len(ids)

    # ------------------------------------------------------------------ reading sessions

    def _filter_clause(self, flt: SessionFilter | None):
        flt = flt or SessionFilter()
        clauses = []
        if not flt.experiments and flt.source != EXPERIMENT_SOURCE:
            clauses.append(or_(sessions.c.source.is_(None), sessions.c.source != EXPERIMENT_SOURCE))
        if not (flt.include_replays or flt.replay_of or flt.ids is not None):
            # originals only: a what-if replay is not another run of the agent (experiments' runs have their own switch)
            original = sessions.c.replay_of.is_(None)
            clauses.append(or_(original, sessions.c.source == EXPERIMENT_SOURCE) if flt.experiments or flt.source == EXPERIMENT_SOURCE else original)
        for name in ("status", "model", "agent_id", "workflow", "environment", "agent_version", "source", "replay_of"):
            value = getattr(flt, name)
            if value:
                clauses.append(sessions.c[name] == value)
        if flt.since:
            clauses.append(sessions.c.started_at >= flt.since)
        if flt.until:
            clauses.append(sessions.c.started_at < flt.until)
        if flt.ids is not None:
            clauses.append(sessions.c.id.in_(flt.ids))
        if flt.tag:
            clauses.append(cast(sessions.c.tags, Text).like(f"%{_json_dumps(flt.tag)}%"))
        if flt.text:
            clauses.append(self._text_clause(flt.text))
        if flt.failed_tool:
            clauses.append(_has_breakdown(run_breakdown.c.tool_name == flt.failed_tool))
        if flt.error_class:
            clauses.append(or_(sessions.c.error_class == flt.error_class, _has_breakdown(run_breakdown.c.error_class == flt.error_class)))
        if flt.has:
            clauses.append(self._has(flt.has))
        if flt.review:
            labelled = exists().where(annotations.c.session_id == sessions.c.id).where(annotations.c.label == flt.review)
            if flt.review == "unreviewed":
                labelled = ~exists().where(annotations.c.session_id == sessions.c.id)
            clauses.append(labelled)
        return clauses

    @staticmethod
    def _has(flag: str):
        """Runs with a retried or errored step, a blocked action or approval, a fallback the agent
        took over, or a loop: read from the rollups (storage/rollups.py has the definitions)."""
        r = run_rollups.c
        conditions = {"retry": r.retried_steps > 0, "error": r.errored_steps > 0,
                      "intervention": r.blocked_steps + r.approvals > 0, "fallback": r.fallback_agent > 0, "loop": r.loops > 0}
        if flag not in conditions:
            raise ValueError(f"has: expected one of {', '.join(HAS_FLAGS)}, got {flag!r}")
        return exists().where(r.session_id == sessions.c.id, conditions[flag]).correlate(sessions)  # also under a read of run_rollups

    def count_sessions(self, flt: SessionFilter | None = None) -> int:
        with self.engine.connect() as conn:
            return conn.scalar(select(func.count()).select_from(sessions).where(*self._filter_clause(flt)))

    def list_sessions(self, flt: SessionFilter | None = None, *, limit: int = 50, offset: int = 0) -> list[dict]:
        """One page of sessions, newest first, with per-session step aggregates."""
        query = (
            select(sessions)
            .where(*self._filter_clause(flt))
            .order_by(func.coalesce(sessions.c.started_at, sessions.c.created_at).desc(), sessions.c.id)
            .limit(limit)
            .offset(offset)
        )
        with self.engine.connect() as conn:
            rows = [dict(r._mapping) for r in conn.execute(query)]
            totals = self._step_totals(conn, [r["id"] for r in rows])
        for row in rows:
            row.update(run_totals(row, totals.get(row["id"], _EMPTY_TOTALS)))
            row["duration_s"] = _duration(row)
        return rows

    def _step_totals(self, conn, ids: Sequence[str]) -> dict[str, dict]:
        """Steps, token and cost sums, errors and last seq per run, from its rollup."""
        out: dict[str, dict] = {}
        r = run_rollups.c
        for part in _chunks(list(ids)):
            query = select(r.session_id, r.steps, r.tokens_in, r.tokens_out, r.cost_usd, r.errored_steps, r.max_seq)
            for sid, n, t_in, t_out, cost, errors, max_seq in conn.execute(query.where(r.session_id.in_(part))):
                out[sid] = {"steps": n, "tokens_in": t_in, "tokens_out": t_out, "cost_usd": cost, "errors": errors, "max_seq": max_seq}
        return out

    def rebuild_rollups(self) -> int:
        """Recompute every run's rollups from its steps (`agent-replay db rebuild-rollups`); returns runs rolled up."""
        with self._write_lock, self._write_transaction() as conn:
            runs = rollups.rebuild(conn, _bulk_insert)
            daily.rebuild(conn, _bulk_insert)
            return runs

    def get_session(self, session_id: str) -> dict | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(sessions).where(sessions.c.id == session_id)).first()
            if row is None:
                return None
            out = dict(row._mapping)
            out.update(run_totals(out, self._step_totals(conn, [session_id]).get(session_id, _EMPTY_TOTALS)))
        out["duration_s"] = _duration(out)
        return out

    def session_ids(self, flt: SessionFilter | None = None) -> list[str]:
        with self.engine.connect() as conn:
            query = select(sessions.c.id).where(*self._filter_clause(flt)).order_by(sessions.c.started_at, sessions.c.id)
            return list(conn.scalars(query))

    def distinct_values(self, column: str) -> list[str]:
        """Values present in one session dimension, for filter pickers."""
        col = sessions.c[column]
        with self.engine.connect() as conn:
            return [v for v in conn.scalars(select(col).distinct().where(col.is_not(None)).order_by(col))]

    def delete_sessions(self, ids: Sequence[str], *, actor: Actor | None = None) -> int:
        """Delete sessions; steps, contexts, attachments and annotations go with them.
        Editors only (`actor`, default the local user); the delete is in the audit log."""
        ids = list(ids)
        actor = self.authorize(actor, DELETE, ",".join(ids)[:2000])
        n, left = 0, []
        with self._write_lock, self.engine.begin() as conn:
            self._audit(conn, actor, DELETE, target=",".join(ids)[:2000], detail={"sessions": len(ids)})
            for part in _chunks(list(ids)):
                orphans = list(conn.scalars(select(sessions.c.id).where(sessions.c.replay_of.in_(part))))
                conn.execute(update(sessions).where(sessions.c.replay_of.in_(part)).values(replay_of=None))
                for table in (step_contexts, steps, attachments, annotations, run_breakdown, run_rollups):
                    conn.execute(delete(table).where(table.c.session_id.in_(part)))
                traces = select(otlp_traces.c.trace_id).where(otlp_traces.c.session_id.in_(part))
                conn.execute(delete(otlp_open_calls).where(otlp_open_calls.c.trace_id.in_(traces)))
                conn.execute(delete(otlp_traces).where(otlp_traces.c.session_id.in_(part)))
                n += conn.execute(delete(sessions).where(sessions.c.id.in_(part))).rowcount
                left += [*part, *orphans]  # a replay whose original went counts as a run now
            _drop_unused_blobs(conn)
            daily.refresh(conn, left, _bulk_insert)  # once, last: its lock is the transaction's last (daily._one_at_a_time)
        return n

    def delete_older_than(self, days: float, *, keep_annotated: bool = False, now: datetime | None = None) -> int:
        """Retention: drop runs that started more than `days` ago."""
        cutoff = (now or now_utc()) - timedelta(days=days)
        query = select(sessions.c.id).where(sessions.c.started_at < cutoff)
        if keep_annotated:
            query = query.where(~exists().where(annotations.c.session_id == sessions.c.id))
        with self.engine.connect() as conn:
            ids = list(conn.scalars(query))
        return self.delete_sessions(ids, actor=RETENTION)

    # ------------------------------------------------------------------ OTLP traces arriving in batches

    def otlp_state(self, trace_ids: Sequence[str]) -> tuple[dict[str, tuple[str, bool]], list[dict]]:
        """Where each known trace lives ({trace_id: (session_id, settled)}) and the calls its earlier batches left open."""
        placed: dict[str, tuple[str, bool]] = {}
        open_calls: list[dict] = []
        cols = [otlp_open_calls.c[n] for n in ("trace_id", "side", "event_id", "name", "call_id", "arguments", "t_ns")]
        with self.engine.connect() as conn:
            for part in _chunks(list(trace_ids)):
                t = otlp_traces.c
                for tid, sid, settled in conn.execute(select(t.trace_id, t.session_id, t.settled).where(t.trace_id.in_(part))):
                    placed[tid] = (sid, bool(settled))
                query = select(*cols).where(otlp_open_calls.c.trace_id.in_(part)).order_by(otlp_open_calls.c.id)
                open_calls += [dict(r) for r in conn.execute(query).mappings()]
        return placed, open_calls

    def move_session_steps(self, from_sid: str, to_sid: str) -> int:
        """Move every step of one session (a provisional one) to the end of another and drop the first.

        Steps the target already holds (same event_id) are dropped; the rest keep their order and
        are numbered after the target's last seq, with their contexts, attachments and notes. The
        target is created from the source's row when it does not exist yet. Returns steps moved.
        """
        with self._write_lock, self._write_transaction() as conn:  # like every write: another process's
            # steps cannot take the target's seqs between our read of max(seq) and our commit
            self._existing_sessions(conn, [from_sid, to_sid], lock=True)
            src = conn.execute(select(sessions).where(sessions.c.id == from_sid)).mappings().first()
            conn.execute(update(otlp_traces).where(otlp_traces.c.session_id == from_sid).values(session_id=to_sid))
            if src is None or from_sid == to_sid:
                return 0
            dialect = _dialect_module(self.dialect)
            conn.execute(dialect.insert(sessions).values(**{**src, "id": to_sid}).on_conflict_do_nothing(index_elements=["id"]))
            self._existing_sessions(conn, [to_sid], lock=True)
            target = conn.execute(select(sessions.c.id, sessions.c.last_event_at).where(sessions.c.id == to_sid)).first()
            if src["last_event_at"] and (target.last_event_at is None or target.last_event_at < src["last_event_at"]):
                conn.execute(update(sessions).where(sessions.c.id == to_sid).values(last_event_at=src["last_event_at"]))
            rows = conn.execute(select(steps.c.id, steps.c.event_id).where(steps.c.session_id == from_sid)
                                .order_by(steps.c.seq, steps.c.timestamp, steps.c.id)).all()
            held: set[str] = set()
            for part in _chunks([r.event_id for r in rows]):
                held.update(conn.scalars(select(steps.c.event_id).where(steps.c.session_id == to_sid, steps.c.event_id.in_(part))))
            for part in _chunks(sorted(held)):
                for table in (step_contexts, steps):
                    conn.execute(delete(table).where(table.c.session_id == from_sid, table.c.event_id.in_(part)))
            base = conn.scalar(select(func.max(steps.c.seq)).where(steps.c.session_id == to_sid)) or 0
            moving = [{"rid": r.id, "new_seq": base + n} for n, r in enumerate((r for r in rows if r.event_id not in held), 1)]
            if moving:
                conn.execute(update(steps).where(steps.c.id == bindparam("rid"))
                             .values(session_id=to_sid, seq=bindparam("new_seq")), moving)
            for table in (step_contexts, attachments, annotations):
                conn.execute(update(table).where(table.c.session_id == from_sid).values(session_id=to_sid))
            conn.execute(update(sessions).where(sessions.c.replay_of == from_sid).values(replay_of=to_sid))
            rollups.forget(conn, [from_sid])
            conn.execute(delete(sessions).where(sessions.c.id == from_sid))
            rollups.refresh(conn, [to_sid], _bulk_insert)
            daily.refresh(conn, [from_sid, to_sid], _bulk_insert)
        return len(moving)

    def otlp_commit(
        self,
        placed: dict[str, tuple[str, bool]],
        consumed: Sequence[tuple[str, str, str]],
        opened: Sequence[dict],
        replaced: Sequence[tuple[str, StepEvent]],
        idle: timedelta | None = None,
    ) -> None:
        """What one OTLP batch changed, in one transaction: where its traces live, the calls it answered
        (`consumed`: (trace_id, side, event_id)) or left open, and stored steps a tool span took the place
        of (`replaced`: (old event id, the redacted step), keeping the old step's seq). Open calls of
        traces that received nothing for longer than `idle` (AGENT_REPLAY_IDLE_MINUTES) are dropped:
        such a trace is over, and the table stays as small as the traces in flight."""
        now = now_utc()
        t, o = otlp_traces.c, otlp_open_calls.c
        with self._write_lock, self.engine.begin() as conn:
            known: set[str] = set()
            for part in _chunks(list(placed)):
                known.update(conn.scalars(select(t.trace_id).where(t.trace_id.in_(part))))
            for tid in known:
                sid, settled = placed[tid]
                conn.execute(update(otlp_traces).where(t.trace_id == tid).values(session_id=sid, settled=settled, updated_at=now))
            new = [{"trace_id": tid, "session_id": sid, "settled": settled, "updated_at": now}
                   for tid, (sid, settled) in placed.items() if tid not in known]
            if new:
                conn.execute(insert(otlp_traces), new)
            for tid, side, event_id in consumed:
                conn.execute(delete(otlp_open_calls).where(o.trace_id == tid, o.side == side, o.event_id == event_id))
            if opened:
                conn.execute(insert(otlp_open_calls), list(opened))
            cutoff = now - (idle if idle is not None else config.idle_timeout())
            stale = select(t.trace_id).where(t.updated_at < cutoff)
            conn.execute(delete(otlp_open_calls).where(o.trace_id.in_(stale)))
            row_of = itemgetter(*STEP_COLUMNS)
            for old_event_id, step in replaced:
                event_id = step.identity()
                taken = conn.scalar(select(steps.c.id).where(steps.c.session_id == step.session_id, steps.c.event_id == event_id))
                if taken is not None:  # a re-delivered batch: the tool's step is stored already
                    continue
                values = dict(zip(STEP_COLUMNS, row_of(step.__dict__), strict=True))
                values.update(event_id=event_id, call_key=_call_key(values))
                del values["seq"]
                conn.execute(update(steps).where(steps.c.session_id == step.session_id, steps.c.event_id == old_event_id)
                             .values(**values))
            rollups.refresh(conn, [step.session_id for _, step in replaced], _bulk_insert)
            daily.refresh(conn, [step.session_id for _, step in replaced], _bulk_insert)

    # ------------------------------------------------------------------ reading steps

    def load_steps(self, session_id: str, *, from_seq: int | None = None, to_seq: int | None = None) -> list[StepEvent]:
        """Steps of a session in order (seq, then timestamp), without their context."""
        return step_events(session_id, zip(*self.load_step_columns(session_id, from_seq=from_seq, to_seq=to_seq)))

    def load_step_columns(self, session_id: str, *, from_seq: int | None = None, to_seq: int | None = None) -> list[Sequence]:
        """load_steps as columns (STEP_COLUMNS' order, decoded), every column whole: what an opened run's
        cycles, totals and rebuilt messages are computed from without building 100,000 step objects."""
        cols = [steps.c[name] for name in STEP_COLUMNS]
        query = select(*cols).where(steps.c.session_id == session_id)
        if from_seq is not None:
            query = query.where(steps.c.seq >= from_seq)
        if to_seq is not None:
            query = query.where(steps.c.seq <= to_seq)
        with self.engine.connect() as conn:
            # in seq order alone first, as the index holds them: the full order's ties on seq cost SQLite
            # a sort of every row (a quarter of the read); when a seq repeats, read again in the full order
            rows = _fetched(conn, query.order_by(steps.c.seq))
            if any(map(ge, map(itemgetter(_SEQ), rows), map(itemgetter(_SEQ), islice(rows, 1, None)))):
                rows = _fetched(conn, query.order_by(steps.c.seq, steps.c.timestamp, steps.c.id))
        return _decoded_step_columns(rows, self.engine.dialect.name)

    # ------------------------------------------------------------------ reading one long run (the timeline)

    def search_seqs_in_session(self, session_id: str, text_: str | None) -> list[int]:
        """The seq of every step of one run that matches `text_` in the search index, in order (no
        content read: a 100,000-step run's timeline marks and steps through all of its hits)."""
        query = SearchQuery.parse(text_)
        if not query:
            return []
        with self.engine.connect() as conn:
            return list(conn.scalars(select(steps.c.seq).where(steps.c.session_id == session_id, self._step_matches(query))
                                     .order_by(steps.c.seq, steps.c.id)))

    def step_types(self, session_ids: Sequence[str]) -> dict[str, list[str]]:
        """Step types in order, per session: all cycle counting needs, without content."""
        out: dict[str, list[str]] = {sid: [] for sid in session_ids}
        with self.engine.connect() as conn:
            for part in _chunks(list(session_ids)):
                query = (
                    select(steps.c.session_id, steps.c.type)
                    .where(steps.c.session_id.in_(part))
                    .order_by(steps.c.session_id, steps.c.seq, steps.c.timestamp, steps.c.id)
                )
                for sid, kind in conn.execute(query):
                    out[sid].append(kind)
        return out

    def step_context(self, session_id: str, event_id: str) -> Any:
        with self.engine.connect() as conn:
            return conn.scalar(
                select(step_contexts.c.context)
                .where(step_contexts.c.session_id == session_id)
                .where(step_contexts.c.event_id == event_id)
            )

    def context_event_ids(self, session_id: str) -> set[str]:
        """Which steps of a session have a recorded context (without loading it)."""
        with self.engine.connect() as conn:
            return set(conn.scalars(select(step_contexts.c.event_id).where(step_contexts.c.session_id == session_id)))

    def step_contexts(self, session_id: str) -> dict[str, Any]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(step_contexts.c.event_id, step_contexts.c.context).where(step_contexts.c.session_id == session_id)
            )
            return {event_id: ctx for event_id, ctx in rows}

    def export_events(self, session_ids: Iterable[str]) -> Iterator[SessionEvent | StepEvent | SessionEndEvent]:
        """The native events of whole sessions, contexts included: what export writes."""
        from ..events import SessionEndEvent, SessionEvent, StepEvent

        for sid in session_ids:
            row = self.get_session(sid)
            if row is None:
                raise KeyError(sid)
            status = row["status"]
            fields = {k: row[k] for k in SESSION_FIELDS if row.get(k) is not None}
            if status in (SessionStatus.RUNNING, SessionStatus.INCOMPLETE):
                fields.pop("status", None)
                fields.pop("ended_at", None)
            else:
                for name in ("status", "outcome", "error_class", "ended_at"):
                    fields.pop(name, None)
            yield SessionEvent(session_id=sid, **fields)
            contexts = self.step_contexts(sid)
            for step in self.load_steps(sid):
                values = step.__dict__ | {"context": contexts.get(step.event_id)}
                yield StepEvent.trusted(values)
            if status not in (SessionStatus.RUNNING, SessionStatus.INCOMPLETE):
                yield SessionEndEvent(
                    session_id=sid, status=status, outcome=row["outcome"],
                    error_class=row["error_class"], ended_at=row["ended_at"],
                )

    # ------------------------------------------------------------------ analytics reads
    # Narrow reads for replay_core.analytics, aggregated here because SQL does it without
    # moving a million rows through Python. Never step content. Each returns (columns, rows).
    # Times and tags come as text (UTC 'YYYY-MM-DD HH:MM:SS[.ffffff]', JSON): polars parses
    # them in bulk far faster than per-row objects are made.

    def _json_number(self, column, key: str):
        """A number from a JSON object, NULL when it is anything else (never a cast error)."""
        if self.dialect == "sqlite":
            return case((func.json_type(column, f"$.{key}").in_(("integer", "real")), func.json_extract(column, f"$.{key}")))
        return case((func.jsonb_typeof(column[key]) == "number", column[key].as_float()))

    @staticmethod
    def _rows(conn: Connection, query) -> tuple[list[str], list[tuple]]:
        result = conn.execute(query)
        return list(result.keys()), [tuple(r) for r in result.all()]

    def run_rows(self, flt: SessionFilter | None = None) -> tuple[list[str], list[tuple]]:
        """One row per run: dimensions, status, times, session-level totals, replay facts."""
        meta = sessions.c.metadata
        query = select(
            sessions.c.id.label("session_id"), sessions.c.agent_id, sessions.c.model, sessions.c.workflow,
            sessions.c.environment, sessions.c.agent_version, sessions.c.status, sessions.c.error_class,
            cast(sessions.c.started_at, Text).label("started_at"),
            cast(func.coalesce(sessions.c.ended_at, sessions.c.last_event_at), Text).label("ended_at"),
            cast(sessions.c.tags, Text).label("tags"), self._json_number(meta, "tokens_in").label("meta_tokens_in"),
            self._json_number(meta, "tokens_out").label("meta_tokens_out"), self._json_number(meta, "cost_usd").label("meta_cost_usd"),
            sessions.c.replay_of, sessions.c.replay_config["model"].as_string().label("replay_model"),
            meta["replay_outcome"].as_string().label("replay_outcome"),
        ).where(*self._filter_clause(flt))
        with self.engine.connect() as conn:
            return self._rows(conn, query)

    def rollup_rows(self, flt: SessionFilter | None = None, *, durations: bool = True) -> tuple[list[str], list[tuple]]:
        """Per run with steps, its rollup (storage/rollups.py): counts, sums, first error, cycles,
        loops, and with `durations` its step durations packed as comma-separated whole µs."""
        r = run_rollups.c
        cols = [c for c in r if c.name not in ("max_seq", "first_error_at", "durations_us")]
        cols.append(cast(r.first_error_at, Text).label("first_error_at"))
        if durations:
            cols.append(r.durations_us)
        query = select(*cols).select_from(run_rollups.join(sessions, sessions.c.id == r.session_id)).where(*self._filter_clause(flt))
        with self.engine.connect() as conn:
            return self._rows(conn, query)

    def headline_rows(self, flt: SessionFilter | None = None, key: str | None = None) -> list[tuple]:
        """Per run, what the headline sums, in one narrow query: (key, status, started_at, ended_at
        as text, tokens in, tokens out, cost — the rollup's, else the source's — retried steps, tool
        calls, tool failures, fallback blocks, taken over). `key` is a sessions column (or None)."""
        r, meta = run_rollups.c, sessions.c.metadata

        def rolled(column, name):
            return case((column.is_(None), self._json_number(meta, name)), else_=column)

        query = select(
            sessions.c[key] if key else null(), sessions.c.status, cast(sessions.c.started_at, Text),
            cast(func.coalesce(sessions.c.ended_at, sessions.c.last_event_at), Text),
            rolled(r.tokens_in, "tokens_in"), rolled(r.tokens_out, "tokens_out"), rolled(r.cost_usd, "cost_usd"),
            r.retried_steps, r.tool_calls, r.tool_failures, r.fallback_blocks, r.fallback_agent,
        ).select_from(sessions.outerjoin(run_rollups, r.session_id == sessions.c.id)).where(*self._filter_clause(flt))
        with self.engine.connect() as conn:
            return [tuple(row) for row in conn.execute(query)]

    def daily_rows(self, flt: SessionFilter | None = None, *, detail: bool = True,
                   parts: Sequence[str] | None = None) -> dict[str, tuple[list[str], list[tuple]]] | None:
        """The dashboard's reads from the per-day rollups (storage/daily.py): cells, tools and errors
        per cell, run times, and with `detail` step durations (only `parts` of them, if given); None
        when the filter needs the per-run rollups (a text search, a tag, a workflow, …)."""
        if not daily.answers(flt):
            return None
        out = {}
        with self.engine.connect() as conn:
            for name, query in daily.reads(flt, EXPERIMENT_SOURCE, detail=detail).items():
                if parts is None or name in parts:
                    # text and whole numbers only: the driver's rows as they come (SQLAlchemy's row
                    # objects were half the read)
                    result = conn.execute(query)
                    out[name] = list(result.keys()), result.cursor.fetchall()
        return out

    def breakdown_rows(self, flt: SessionFilter | None = None) -> tuple[list[str], list[tuple]]:
        """Tool calls and errored steps per run, tool and error class (from the rollups)."""
        b = run_breakdown.c
        query = (select(b.session_id, b.tool_name, b.error_class, b.tool_calls, b.errored)
                 .select_from(run_breakdown.join(sessions, sessions.c.id == b.session_id)).where(*self._filter_clause(flt)))
        with self.engine.connect() as conn:
            return self._rows(conn, query)

    # ------------------------------------------------------------------ watch offsets

    def watch_offset(self, path: str) -> dict | None:
        """Where `watch` has read `path` up to: {path, inode, offset, format, updated_at}, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(select(watch_offsets).where(watch_offsets.c.path == path)).first()
            return dict(row._mapping) if row else None

    def save_watch_offset(self, path: str, *, inode: int | None, offset: int, format: str | None) -> None:
        values = {"inode": inode, "offset": offset, "format": format, "updated_at": now_utc()}
        with self._write_lock, self.engine.begin() as conn:
            done = conn.execute(update(watch_offsets).where(watch_offsets.c.path == path).values(**values)).rowcount
            if not done:
                conn.execute(insert(watch_offsets).values(path=path, **values))

    # ------------------------------------------------------------------ annotations & attachments

    def annotate(self, session_id: str, label: str, text: str = "", *, event_id: str | None = None, author: str | None = None) -> int:
        if label not in REVIEW_LABELS:
            raise ValueError(f"label: expected one of {', '.join(REVIEW_LABELS)}, got {label!r}")
        with self._write_lock, self.engine.begin() as conn:
            if conn.scalar(select(sessions.c.id).where(sessions.c.id == session_id)) is None:
                raise KeyError(session_id)
            res = conn.execute(
                insert(annotations).values(
                    session_id=session_id, event_id=event_id, label=label, text=text, author=author, created_at=now_utc()
                )
            )
            return res.inserted_primary_key[0]

    def annotations(self, session_id: str) -> list[dict]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(annotations).where(annotations.c.session_id == session_id).order_by(annotations.c.created_at, annotations.c.id)
            )
            return [dict(r._mapping) for r in rows]

    def add_attachment(self, session_id: str, data: bytes, *, event_id: str | None = None, name: str | None = None, mime_type: str | None = None) -> int:
        """Bytes that are not an image (or come from before media_blobs): kept in the row itself."""
        with self._write_lock, self.engine.begin() as conn:
            res = conn.execute(
                insert(attachments).values(
                    session_id=session_id, event_id=event_id, name=name, mime_type=mime_type, data=data, created_at=now_utc()
                )
            )
            return res.inserted_primary_key[0]

    def has_blob(self, sha256: str) -> bool:
        with self.engine.connect() as conn:
            return conn.scalar(select(media_blobs.c.sha256).where(media_blobs.c.sha256 == sha256)) is not None

    def add_media(self, session_id: str, event_id: str | None, blob: dict | None, *, sha256: str, mime_type: str,
                  name: str | None = None, target: dict | None = None) -> tuple[int, bool]:
        """Attach an image to a step: its bytes once per hash (`blob` is None when `has_blob` said
        it is stored), the link once per (step, hash). Returns (attachment id, whether it was new)."""
        with self._write_lock, self.engine.begin() as conn:
            if blob is not None:  # another writer may store the same new image at once: then this insert does nothing
                conn.execute(_dialect_module(self.dialect).insert(media_blobs).values(sha256=sha256, created_at=now_utc(), **blob)
                             .on_conflict_do_nothing(index_elements=["sha256"]))
            same = select(attachments.c.id).where(attachments.c.session_id == session_id, attachments.c.sha256 == sha256)
            same = same.where(attachments.c.event_id.is_(None) if event_id is None else attachments.c.event_id == event_id)
            known = conn.scalar(same)
            if known is not None:
                return known, False
            res = conn.execute(insert(attachments).values(session_id=session_id, event_id=event_id, name=name, mime_type=mime_type,
                                                          sha256=sha256, target=target, created_at=now_utc()))
            return res.inserted_primary_key[0], True

    def list_attachments(self, session_id: str) -> list[dict]:
        """Attachment descriptions without their bytes, in the order they came, with the image's size."""
        cols = [c for c in attachments.c if c.name != "data"]
        query = (select(*cols, media_blobs.c.width, media_blobs.c.height, media_blobs.c.size)
                 .select_from(attachments.outerjoin(media_blobs, attachments.c.sha256 == media_blobs.c.sha256))
                 .where(attachments.c.session_id == session_id).order_by(attachments.c.id))
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def attachment_data(self, attachment_id: int) -> bytes | None:
        query = (select(func.coalesce(media_blobs.c.data, attachments.c.data))
                 .select_from(attachments.outerjoin(media_blobs, attachments.c.sha256 == media_blobs.c.sha256))
                 .where(attachments.c.id == attachment_id))
        with self.engine.connect() as conn:
            return conn.scalar(query)

    def thumbnails(self, sha256s: Sequence[str]) -> dict[str, bytes]:
        """Thumbnails by hash: only the ones asked for, so a filmstrip costs what it shows."""
        out: dict[str, bytes] = {}
        with self.engine.connect() as conn:
            for part in _chunks(list(dict.fromkeys(sha256s))):
                rows = conn.execute(select(media_blobs.c.sha256, media_blobs.c.thumbnail).where(media_blobs.c.sha256.in_(part)))
                out.update({sha: thumb for sha, thumb in rows if thumb is not None})
        return out

    # ------------------------------------------------------------------ datasets and experiments

    def create_dataset(self, name: str, cases: Sequence[tuple[str, str | None]], *, match: str = "equals",
                       description: str | None = None, made_from: Any = None) -> dict:
        """A new dataset (version 1) of (session id, expected outcome or None) cases; ValueError if the name is taken."""
        now = now_utc()
        with self._write_lock, self.engine.begin() as conn:
            if conn.scalar(select(datasets.c.id).where(datasets.c.name == name)) is not None:
                raise ValueError(f"dataset {name!r} exists already (add runs to it with `dataset add`)")
            dataset_id = conn.execute(insert(datasets).values(
                name=name, version=1, description=description, match=match, made_from=[made_from], created_at=now, updated_at=now,
            )).inserted_primary_key[0]
            self._insert_cases(conn, dataset_id, 1, cases, now)
        return self.get_dataset(name)

    def _insert_cases(self, conn: Connection, dataset_id: int, version: int, cases, now) -> int:
        have = set(conn.scalars(select(dataset_cases.c.session_id).where(dataset_cases.c.dataset_id == dataset_id)))
        rows, seen = [], set(have)
        for sid, expected in cases:
            if sid not in seen:
                seen.add(sid)
                rows.append({"dataset_id": dataset_id, "session_id": sid, "expected": expected, "version": version, "created_at": now})
        if rows:
            conn.execute(insert(dataset_cases), rows)
        return len(rows)

    def add_dataset_cases(self, name: str, cases: Sequence[tuple[str, str | None]], *, made_from: Any = None) -> dict:
        """Add cases to a dataset as its next version (cases it holds already are skipped); KeyError if unknown."""
        now = now_utc()
        with self._write_lock, self.engine.begin() as conn:
            row = conn.execute(select(datasets).where(datasets.c.name == name)).first()
            if row is None:
                raise KeyError(name)
            version = row.version + 1
            added = self._insert_cases(conn, row.id, version, cases, now)
            if added:
                conn.execute(update(datasets).where(datasets.c.id == row.id).values(
                    version=version, updated_at=now, made_from=[*(row.made_from or []), made_from]))
        out = self.get_dataset(name)
        out["added"] = added
        return out

    def get_dataset(self, name_or_id: str | int) -> dict | None:
        """A dataset with its case count at its current version, by name (or numeric id)."""
        key = datasets.c.id == int(name_or_id) if str(name_or_id).isdigit() else datasets.c.name == str(name_or_id)
        with self.engine.connect() as conn:
            row = conn.execute(select(datasets).where(key)).first()
            if row is None:
                return None
            out = dict(row._mapping)
            out["cases"] = conn.scalar(select(func.count()).where(dataset_cases.c.dataset_id == row.id))
        return out

    def list_datasets(self) -> list[dict]:
        counts = (select(dataset_cases.c.dataset_id, func.count().label("cases")).group_by(dataset_cases.c.dataset_id).subquery())
        query = (select(datasets, func.coalesce(counts.c.cases, 0).label("cases"))
                 .outerjoin(counts, counts.c.dataset_id == datasets.c.id).order_by(datasets.c.name))
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def dataset_cases(self, dataset_id: int, *, version: int | None = None) -> list[dict]:
        """Cases in the order they were added (at `version`: those it held then)."""
        query = select(dataset_cases).where(dataset_cases.c.dataset_id == dataset_id)
        if version is not None:
            query = query.where(dataset_cases.c.version <= version)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query.order_by(dataset_cases.c.id))]

    def create_experiment(self, experiment_id: str, dataset_id: int, dataset_version: int, settings: dict) -> None:
        with self._write_lock, self.engine.begin() as conn:
            conn.execute(insert(experiments).values(id=experiment_id, dataset_id=dataset_id, dataset_version=dataset_version,
                                                    settings=settings, status="running", created_at=now_utc()))

    def get_experiment(self, experiment_id: str) -> dict | None:
        query = select(experiments, datasets.c.name.label("dataset")).join(datasets, datasets.c.id == experiments.c.dataset_id)
        with self.engine.connect() as conn:
            row = conn.execute(query.where(experiments.c.id == experiment_id)).first()
            return dict(row._mapping) if row else None

    def list_experiments(self, *, dataset_id: int | None = None, limit: int = 100) -> list[dict]:
        done = (select(experiment_runs.c.experiment_id, func.count().label("runs_done"))
                .where(experiment_runs.c.state == "done").group_by(experiment_runs.c.experiment_id).subquery())
        query = (select(experiments, datasets.c.name.label("dataset"), func.coalesce(done.c.runs_done, 0).label("runs_done"))
                 .join(datasets, datasets.c.id == experiments.c.dataset_id)
                 .outerjoin(done, done.c.experiment_id == experiments.c.id))
        if dataset_id is not None:
            query = query.where(experiments.c.dataset_id == dataset_id)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query.order_by(experiments.c.created_at.desc()).limit(limit))]

    def set_experiment_status(self, experiment_id: str, status: str, message: str | None = None, *, finished: bool = True) -> None:
        with self._write_lock, self.engine.begin() as conn:
            conn.execute(update(experiments).where(experiments.c.id == experiment_id).values(
                status=status, message=message, finished_at=now_utc() if finished else None))

    def update_experiment_settings(self, experiment_id: str, settings: dict) -> None:
        with self._write_lock, self.engine.begin() as conn:
            conn.execute(update(experiments).where(experiments.c.id == experiment_id).values(settings=settings))

    def claim_experiment_run(self, experiment_id: str, case_session: str, variant: int) -> bool:
        """Take one case × variant to run: False when it is done already (it is never paid for twice).

        A row left `running` by a process that died is taken again (its `attempts` counts up).
        """
        key = (experiment_runs.c.experiment_id == experiment_id, experiment_runs.c.case_session == case_session,
               experiment_runs.c.variant == variant)
        with self._write_lock, self.engine.begin() as conn:
            row = conn.execute(select(experiment_runs.c.state, experiment_runs.c.attempts).where(*key)).first()
            if row is None:
                conn.execute(insert(experiment_runs).values(experiment_id=experiment_id, case_session=case_session, variant=variant,
                                                            state="running", attempts=1, started_at=now_utc()))
                return True
            if row.state == "done":
                return False
            return conn.execute(update(experiment_runs).where(*key, experiment_runs.c.attempts == row.attempts).values(
                attempts=row.attempts + 1, started_at=now_utc())).rowcount == 1

    def finish_experiment_run(self, experiment_id: str, case_session: str, variant: int, **values: Any) -> None:
        """Store a case × variant's replay, measures and scores; it is done."""
        with self._write_lock, self.engine.begin() as conn:
            conn.execute(update(experiment_runs).where(
                experiment_runs.c.experiment_id == experiment_id, experiment_runs.c.case_session == case_session,
                experiment_runs.c.variant == variant,
            ).values(state="done", finished_at=now_utc(), **values))

    def release_experiment_run(self, experiment_id: str, case_session: str, variant: int) -> None:
        """Give back a claimed case × variant that was never started (a stop or a budget before its launch)."""
        with self._write_lock, self.engine.begin() as conn:
            conn.execute(delete(experiment_runs).where(
                experiment_runs.c.experiment_id == experiment_id, experiment_runs.c.case_session == case_session,
                experiment_runs.c.variant == variant, experiment_runs.c.state == "running"))

    def experiment_runs(self, experiment_id: str) -> list[dict]:
        query = (select(experiment_runs).where(experiment_runs.c.experiment_id == experiment_id)
                 .order_by(experiment_runs.c.id))
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]


    # ------------------------------------------------------------------ review queues and share links (replay_core.team)

    def create_queue(self, name: str, session_ids: Sequence[str], *, actor: Actor, made_from: Any, rubric: dict,
                     reviews_per_item: int, assignees: Sequence[str]) -> int:
        """A queue with its items frozen now (in the order given); the audit line in the same transaction."""
        with self._write_lock, self._write_transaction() as conn:
            queue_id = conn.execute(insert(review_queues).values(
                name=name, made_from=made_from, rubric=rubric, reviews_per_item=reviews_per_item, assignees=list(assignees),
                created_by=actor.who[:200], created_at=now_utc())).inserted_primary_key[0]
            rows = [{"queue_id": queue_id, "position": i, "session_id": sid, "reviews": 0} for i, sid in enumerate(session_ids, 1)]
            if rows:
                conn.execute(insert(queue_items), rows)
            self._audit(conn, actor, "manage_queues", target=f"queue {queue_id}",
                        detail={"op": "create", "name": name, "items": len(rows)})
        return queue_id

    def delete_queue(self, queue_id: int, *, actor: Actor) -> bool:
        with self._write_lock, self._write_transaction() as conn:
            for table in (queue_reviews, queue_items):
                conn.execute(delete(table).where(table.c.queue_id == queue_id))
            gone = conn.execute(delete(review_queues).where(review_queues.c.id == queue_id)).rowcount == 1
            if gone:
                self._audit(conn, actor, "manage_queues", target=f"queue {queue_id}", detail={"op": "delete"})
        return gone

    def _queue_counts(self):
        """Per queue: items, reviews given (verdicts), items with all their reviews."""
        done = case((queue_items.c.reviews >= review_queues.c.reviews_per_item, 1), else_=0)
        return (select(queue_items.c.queue_id, func.count().label("n_items"), func.sum(queue_items.c.reviews).label("reviews"),
                       func.sum(done).label("items_done"))
                .select_from(queue_items.join(review_queues, review_queues.c.id == queue_items.c.queue_id))
                .group_by(queue_items.c.queue_id).subquery())

    def list_queues(self, queue_id: int | None = None) -> list[dict]:
        """Queues, newest first, with `items`, `reviews` (verdicts given) and `items_done`."""
        counts = self._queue_counts()
        query = (select(review_queues, func.coalesce(counts.c.n_items, 0).label("items"),
                        func.coalesce(counts.c.reviews, 0).label("reviews"), func.coalesce(counts.c.items_done, 0).label("items_done"))
                 .outerjoin(counts, counts.c.queue_id == review_queues.c.id)
                 .order_by(review_queues.c.created_at.desc(), review_queues.c.id.desc()))
        if queue_id is not None:
            query = query.where(review_queues.c.id == queue_id)
        with self.engine.connect() as conn:
            return [{**dict(r._mapping), "reviews": int(r.reviews), "items_done": int(r.items_done)} for r in conn.execute(query)]

    def queue_items(self, queue_id: int) -> list[dict]:
        """Items in order, each with the run's name and status (None when the run is gone)."""
        query = (select(queue_items, sessions.c.name, sessions.c.status, sessions.c.id.label("stored"))
                 .outerjoin(sessions, sessions.c.id == queue_items.c.session_id)
                 .where(queue_items.c.queue_id == queue_id).order_by(queue_items.c.position))
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def queue_reviews(self, queue_id: int) -> list[dict]:
        query = select(queue_reviews).where(queue_reviews.c.queue_id == queue_id).order_by(queue_reviews.c.item_id, queue_reviews.c.id)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def claim_queue_item(self, queue_id: int, reviewer: str, hold: timedelta, *, now: datetime | None = None,
                         item_id: int | None = None) -> dict | None:
        """Hold the next item `reviewer` may review (or `item_id`) until now + hold: one that still needs
        reviews, that they have not reviewed, that nobody else holds; items they skipped come last.
        Their other holds in the queue are let go. None when nothing is left for them."""
        now = now or now_utc()
        mine = and_(queue_reviews.c.item_id == queue_items.c.id, queue_reviews.c.reviewer == reviewer)
        free = or_(queue_items.c.held_until.is_(None), queue_items.c.held_until < now, queue_items.c.held_by == reviewer)
        wanted = (select(queue_items.c.id)
                  .join(review_queues, review_queues.c.id == queue_items.c.queue_id)
                  .where(queue_items.c.queue_id == queue_id, queue_items.c.reviews < review_queues.c.reviews_per_item, free,
                         ~exists().where(mine, queue_reviews.c.verdict.is_not(None)))
                  .order_by(exists().where(mine, queue_reviews.c.skipped.is_(True)), queue_items.c.position))
        if item_id is not None:
            wanted = wanted.where(queue_items.c.id == item_id)
        with self._write_lock, self._write_transaction() as conn:
            for candidate in conn.scalars(wanted.limit(20)).all():
                took = conn.execute(update(queue_items).where(queue_items.c.id == candidate, free).values(
                    held_by=reviewer[:200], held_until=now + hold)).rowcount
                if took == 1:
                    conn.execute(update(queue_items).where(queue_items.c.queue_id == queue_id, queue_items.c.held_by == reviewer,
                                                           queue_items.c.id != candidate).values(held_by=None, held_until=None))
                    row = conn.execute(select(queue_items).where(queue_items.c.id == candidate)).first()
                    return dict(row._mapping)
        return None

    def release_queue_item(self, item_id: int, reviewer: str) -> None:
        with self._write_lock, self._write_transaction() as conn:
            conn.execute(update(queue_items).where(queue_items.c.id == item_id, queue_items.c.held_by == reviewer)
                         .values(held_by=None, held_until=None))

    def save_queue_review(self, queue_id: int, item_id: int, reviewer: str, *, verdict: str | None, criteria: dict | None = None,
                          note: str | None = None, should_have: str | None = None) -> None:
        """A review (or, verdict None, a skip) of one item by one reviewer; saving again replaces it. Lets go of the hold."""
        values = {"verdict": verdict, "criteria": criteria or None, "note": note or None, "should_have": should_have or None,
                  "skipped": verdict is None, "created_at": now_utc()}
        key = (queue_reviews.c.item_id == item_id, queue_reviews.c.reviewer == reviewer)
        with self._write_lock, self._write_transaction() as conn:
            if conn.scalar(select(queue_items.c.id).where(queue_items.c.id == item_id, queue_items.c.queue_id == queue_id)) is None:
                raise KeyError(item_id)
            before = conn.execute(select(queue_reviews.c.verdict).where(*key)).first()
            if before is None:
                conn.execute(insert(queue_reviews).values(queue_id=queue_id, item_id=item_id, reviewer=reviewer[:200], **values))
            else:
                conn.execute(update(queue_reviews).where(*key).values(**values))
            counted = (verdict is not None) - (before is not None and before.verdict is not None)
            changes: dict[str, Any] = {"reviews": queue_items.c.reviews + counted} if counted else {}
            if conn.execute(update(queue_items).where(queue_items.c.id == item_id, queue_items.c.held_by == reviewer)
                            .values(held_by=None, held_until=None, **changes)).rowcount == 0 and changes:
                conn.execute(update(queue_items).where(queue_items.c.id == item_id).values(**changes))

    def create_share(self, token_hash: str, kind: str, target: dict, expires_at: datetime, *, actor: Actor) -> int:
        with self._write_lock, self._write_transaction() as conn:
            share_id = conn.execute(insert(share_links).values(
                token_hash=token_hash, kind=kind, target=target, created_by=actor.who[:200], created_at=now_utc(),
                expires_at=expires_at, opened=0)).inserted_primary_key[0]
            self._audit(conn, actor, "share", target=f"share {share_id}",
                        detail={"op": "create", "kind": kind, **target, "expires_at": expires_at.isoformat()})
        return share_id

    def get_share(self, *, token_hash: str | None = None, share_id: int | None = None) -> dict | None:
        key = share_links.c.token_hash == token_hash if token_hash is not None else share_links.c.id == share_id
        with self.engine.connect() as conn:
            row = conn.execute(select(share_links).where(key)).first()
            return dict(row._mapping) if row else None

    def list_shares(self) -> list[dict]:
        cols = [c for c in share_links.c if c.name != "token_hash"]
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(select(*cols).order_by(share_links.c.created_at.desc(), share_links.c.id.desc()))]

    def revoke_share(self, share_id: int, *, actor: Actor) -> bool:
        """False when there is no such link or it was revoked already."""
        with self._write_lock, self._write_transaction() as conn:
            done = conn.execute(update(share_links).where(share_links.c.id == share_id, share_links.c.revoked_at.is_(None))
                                .values(revoked_at=now_utc(), revoked_by=actor.who[:200])).rowcount == 1
            if done:
                self._audit(conn, actor, "share", target=f"share {share_id}", detail={"op": "revoke"})
        return done

    def note_share_opened(self, share_id: int, *, actor: Actor, outcome: str = "ok", detail: dict | None = None) -> None:
        """Count an opening (a refused one too: expired, revoked) and put it in the audit log."""
        with self._write_lock, self._write_transaction() as conn:
            if outcome == "ok":
                conn.execute(update(share_links).where(share_links.c.id == share_id)
                             .values(opened=share_links.c.opened + 1, last_opened_at=now_utc()))
            self._audit(conn, actor, "share", outcome=outcome, target=f"share {share_id}", detail={"op": "open", **(detail or {})})

    def authorize(self, actor: Actor | None, action: str, target: str | None = None) -> Actor:
        """The actor (the local user when None) if its role allows `action`; else the refusal
        goes in the audit log and PermissionDenied is raised. Every guarded function starts here."""
        try:
            return require(actor, action)
        except PermissionDenied as exc:
            self.record_audit(exc.actor, action, outcome="denied", target=target)
            raise

    def record_audit(self, actor: Actor, action: str, *, outcome: str = "ok", target: str | None = None,
                     detail: dict | None = None, at: datetime | None = None) -> int:
        """One line of the audit log, in its own transaction."""
        with self._write_lock, self.engine.begin() as conn:
            return self._audit(conn, actor, action, outcome=outcome, target=target, detail=detail, at=at)

    def audit_entries(self, *, limit: int = 200, since: datetime | None = None, actions: Sequence[str] = (),
                      origin: str | None = None, outcomes: Sequence[str] = ()) -> list[dict]:
        """Audit lines, newest first."""
        query = select(audit_log).order_by(audit_log.c.at.desc(), audit_log.c.id.desc()).limit(limit)
        if since is not None:
            query = query.where(audit_log.c.at >= since)
        if actions:
            query = query.where(audit_log.c.action.in_(list(actions)))
        if origin is not None:
            query = query.where(audit_log.c.origin == origin)
        if outcomes:
            query = query.where(audit_log.c.outcome.in_(list(outcomes)))
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]



    # ------------------------------------------------------------------ full-text search (storage/search.py)

    def _text_clause(self, text_: str):
        """Runs whose name holds the text, or one of whose steps matches it in the search index."""
        needle = text_.replace("\x00", "").strip().lower()
        find = func.instr if self.dialect == "sqlite" else func.strpos  # not LIKE: no wildcards, no pattern-length limit
        named = find(func.lower(sessions.c.name), needle) > 0 if needle else false()
        query = SearchQuery.parse(text_)
        if not query:
            return named
        return or_(named, sessions.c.id.in_(select(steps.c.session_id).where(self._step_matches(query))))

    @contextmanager
    def _search_indexed(self, conn: Connection):
        """SQLite: the steps a write transaction inserts go into the search index in one statement at
        its end (see search.SQLITE_FILL_AFTER); under the write lock, they are those past the highest id
        seen at its start. PostgreSQL's GIN index keeps itself. Yields a function that indexes the steps
        inserted so far, for a write of several batches to call after each one."""
        if self.dialect != "sqlite":
            yield lambda: None
            return
        mark = [conn.scalar(select(func.max(steps.c.id))) or 0]

        def index_new() -> None:
            top = conn.scalar(select(func.max(steps.c.id))) or 0
            if top > mark[0]:
                conn.exec_driver_sql(SQLITE_FILL_AFTER, (mark[0],))
                mark[0] = top

        yield index_new
        index_new()

    def _step_matches(self, query: SearchQuery):
        """A condition on `steps`: the row matches `query` in the index."""
        if self.dialect == "sqlite":
            hits = text("SELECT rowid FROM steps_fts WHERE steps_fts MATCH :fts").bindparams(fts=query.fts5())
            return steps.c.id.in_(hits.columns(column("rowid", Integer)))
        return text(f"{PG_DOCUMENT} @@ to_tsquery('simple'::regconfig, :tsq)").bindparams(tsq=query.tsquery())

    _HIT_COLUMNS = ("session_id", "seq", "event_id", "type", "tool_name", "content", "tool_args")

    def _hit(self, query: SearchQuery, row) -> dict:
        args = None if row.tool_args is None else _json_dumps(row.tool_args)
        return {"session_id": row.session_id, "seq": row.seq, "event_id": row.event_id, "type": row.type,
                "tool_name": row.tool_name, "snippet": snippet(query, row.content, row.tool_name, args)}

    def search_matches(self, session_ids: Sequence[str], text_: str | None) -> dict[str, dict]:
        """Per run, its first step (by seq) matching `text_`: {session_id: {seq, event_id, type,
        tool_name, snippet}}, the snippet as (text, matched) parts. Runs matched by name only are absent."""
        query = SearchQuery.parse(text_)
        out: dict[str, dict] = {}
        if not query or not session_ids:
            return out
        cols = [steps.c[n] for n in self._HIT_COLUMNS]
        with self.engine.connect() as conn:
            for part in _chunks(list(session_ids)):
                first = (select(steps.c.session_id, func.min(steps.c.seq).label("seq"))
                         .where(steps.c.session_id.in_(part), self._step_matches(query)).group_by(steps.c.session_id).subquery())
                rows = conn.execute(select(*cols).join(first, and_(steps.c.session_id == first.c.session_id, steps.c.seq == first.c.seq))
                                    .order_by(steps.c.id))
                for row in rows:
                    out.setdefault(row.session_id, self._hit(query, row))
        return out

    def search_in_session(self, session_id: str, text_: str | None, *, limit: int = 500) -> tuple[int, list[dict]]:
        """Search inside one run: (how many steps match, the first `limit` of them in seq order with snippets)."""
        query = SearchQuery.parse(text_)
        if not query:
            return 0, []
        where = (steps.c.session_id == session_id, self._step_matches(query))
        cols = [steps.c[n] for n in self._HIT_COLUMNS]
        with self.engine.connect() as conn:
            total = conn.scalar(select(func.count()).select_from(steps).where(*where))
            rows = conn.execute(select(*cols).where(*where).order_by(steps.c.seq, steps.c.id).limit(limit))
            return total, [self._hit(query, r) for r in rows]

    # ------------------------------------------------------------------ the live feed (server/stream.py, the Live page)

    def feed_cursor(self, session_id: str, after_seq: int | None) -> int:
        """Where the feed resumes after the step with seq `after_seq` (an SSE Last-Event-ID): the
        position of that step in storing order; 0 (from the start) when there is none such."""
        if after_seq is None:
            return 0
        with self.engine.connect() as conn:
            return conn.scalar(select(func.max(steps.c.id)).where(steps.c.session_id == session_id, steps.c.seq == after_seq)) or 0

    def feed_head(self, session_id: str) -> int:
        """The cursor of the run's newest stored step (0 when it has none): a feed from here sends only what comes next."""
        with self.engine.connect() as conn:
            return conn.scalar(select(func.max(steps.c.id)).where(steps.c.session_id == session_id)) or 0

    def step_feed(self, session_id: str, after: int = 0, *, limit: int = 500, newest: bool = False) -> list[tuple[int, StepEvent]]:
        """Steps of a run in the order they were stored, after cursor `after`: [(cursor, step)];
        with `newest`, the last `limit` stored (the Live page's tail), still oldest first.

        Storing order, not seq: a step stored late with a lower seq (an SDK's held place for a
        model call) still comes. One run's writes are serialised (its row lock, SQLite's write
        lock), so its row ids grow in commit order and a cursor never skips a committed step."""
        from ..events import StepEvent

        cols = [steps.c.id, *(steps.c[name] for name in STEP_COLUMNS)]
        query = select(*cols).where(steps.c.session_id == session_id, steps.c.id > after)
        query = query.order_by(steps.c.id.desc() if newest else steps.c.id).limit(limit)
        out = []
        with self.engine.connect() as conn:
            for r in conn.execute(query):
                values = dict(zip(STEP_COLUMNS, r[1:], strict=True))
                values["session_id"] = session_id
                out.append((r[0], StepEvent.trusted(values)))
        return out[::-1] if newest else out

    # ------------------------------------------------------------------ periodic jobs across replicas

    @contextmanager
    def advisory_lock(self, key: int):
        """`with store.advisory_lock(k) as held:` PostgreSQL's session advisory lock, tried (never waited
        for), released at the end; True on SQLite, whose write lock serialises writers already."""
        if self.dialect != "postgresql":
            yield True
            return
        with self.engine.connect() as conn:
            held = conn.scalar(text("SELECT pg_try_advisory_lock(:k)"), {"k": key})
            conn.commit()
            try:
                yield bool(held)
            finally:
                if held:
                    conn.scalar(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
                    conn.commit()

    def claim_job(self, name: str, every: timedelta, *, now: datetime | None = None) -> bool:
        """True for exactly one caller per `every` among all processes on this database: the
        caller that moves `job_runs.last_run_at` forward runs the job (retention sweep)."""
        now = now or now_utc()
        with self._write_lock, self._write_transaction() as conn:
            dialect = _dialect_module(self.dialect)
            conn.execute(dialect.insert(job_runs).values(name=name, last_run_at=now - every * 2)
                         .on_conflict_do_nothing(index_elements=["name"]))
            done = conn.execute(update(job_runs).where(job_runs.c.name == name, job_runs.c.last_run_at <= now - every * 0.9)
                                .values(last_run_at=now)).rowcount
        return done == 1

    # ------------------------------------------------------------------ audit log (replay_core.team.audit)

    @staticmethod
    def _audit(conn: Connection, actor: Actor, action: str, *, outcome: str = "ok", target: str | None = None,
               detail: dict | None = None, at: datetime | None = None) -> int:
        res = conn.execute(insert(audit_log).values(
            at=at or now_utc(), who=actor.who[:200], role=actor.role[:20], origin=(actor.origin or "?")[:200],
            action=action[:50], outcome=outcome[:20], target=target, detail=detail))
        return res.inserted_primary_key[0]


def _drop_unused_blobs(conn: Connection) -> None:
    """Image bytes no attachment points at any more (their runs were deleted)."""
    used = select(attachments.c.sha256).where(attachments.c.sha256.is_not(None))
    conn.execute(delete(media_blobs).where(media_blobs.c.sha256.not_in(used)))


def _bind_processors(dialect, table, names: Sequence[str]) -> list[tuple[int, Any]]:
    """(position, bind processor) of the columns of `names` whose type converts its values."""
    procs = [(i, table.c[n].type._cached_bind_processor(dialect)) for i, n in enumerate(names)]
    return [(i, p) for i, p in procs if p is not None]


def _bound(row: Sequence, converted: list[tuple[int, Any]]) -> tuple:
    values = list(row)
    for i, proc in converted:
        if values[i] is not None:
            values[i] = proc(values[i])
    return tuple(values)


def _dialect_module(name: str):
    """The dialect's own module (its INSERT … ON CONFLICT), imported when first needed: PostgreSQL's
    package is not loaded by a SQLite process (it was a tenth of `agent-replay stats`' imports)."""
    if name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql
    from sqlalchemy.dialects import sqlite

    return sqlite


def _bulk_insert(conn: Connection, table, names: Sequence[str], rows: list, *, bound: bool = False) -> None:
    """executemany straight to the driver, with SQLAlchemy's own bind processors.

    `rows` are sequences of values in the order of `names`, converted here unless `bound`.
    The same rows through `conn.execute(insert(table), dicts)` spend most of their time in
    per-row parameter processing; this keeps the types' conversions (JSON, UTC
    datetimes) and skips the rest. On PostgreSQL a big batch goes by COPY (psycopg's
    `copy.write_row`, in the same transaction).
    """
    if not rows:
        return
    dialect = conn.dialect
    quote = dialect.identifier_preparer.quote
    mark = "?" if dialect.paramstyle == "qmark" else "%s"
    sql = f"INSERT INTO {quote(table.name)} ({', '.join(quote(n) for n in names)}) VALUES ({', '.join([mark] * len(names))})"
    if bound:  # converted already (`WriteBatch.bind`)
        params = rows
    else:
        converted = _bind_processors(dialect, table, names)
        params = [_bound(row, converted) for row in rows]
    if dialect.name == "postgresql" and len(params) >= _COPY_FROM:
        columns = ", ".join(quote(n) for n in names)
        with conn.connection.dbapi_connection.cursor() as cur, cur.copy(f"COPY {quote(table.name)} ({columns}) FROM STDIN") as copy:
            for row in params:
                copy.write_row(row)
        return
    conn.exec_driver_sql(sql, params)


# A long write (a big file's batches in one transaction, ingest.parallel) grows the per-run tables past
# what PostgreSQL's statistics say (none in a new database, and autovacuum cannot see rows not committed):
# each batch's look-ups of its runs by an IN list were planned as scans of the whole table, and a 1M-step
# import spent 30 of its 70 s in them. `write_batches` analyzes them itself (ANALYZE counts the rows its
# own transaction wrote) once it has written ANALYZE_WITHIN runs, then at 4×, 16× … that.
ANALYZE_WITHIN = 2_000
RUN_TABLES = (sessions, run_rollups, run_breakdown)
_COPY_FROM = 200  # rows from which PostgreSQL takes them by COPY (several times executemany's speed)


def _insert_new(conn: Connection, table, names: Sequence[str], rows: list, key: str) -> list:
    """One multi-row INSERT … ON CONFLICT (key) DO NOTHING RETURNING key, with SQLAlchemy's bind
    processors: the keys of the rows inserted (both databases). Built as text: SQLAlchemy's
    compiler spent ~1 ms a row on a multi-row VALUES."""
    dialect = conn.dialect
    quote = dialect.identifier_preparer.quote
    mark = "?" if dialect.paramstyle == "qmark" else "%s"
    one = f"({', '.join([mark] * len(names))})"
    sql = (f"INSERT INTO {quote(table.name)} ({', '.join(quote(n) for n in names)}) VALUES {', '.join([one] * len(rows))}"
           f" ON CONFLICT ({quote(key)}) DO NOTHING RETURNING {quote(key)}")
    procs = [table.c[n].type._cached_bind_processor(dialect) for n in names]
    params = [proc(v) if proc is not None and v is not None else v for row in rows for v, proc in zip(row, procs, strict=True)]
    return [r[0] for r in conn.exec_driver_sql(sql, tuple(params))]


def _has_breakdown(condition):
    """Runs with an errored step matching `condition` (a tool, an error class)."""
    b = run_breakdown.c
    return exists().where(b.session_id == sessions.c.id, b.errored > 0, condition).correlate(sessions)  # also under a read of run_breakdown


_EMPTY_TOTALS = {"steps": 0, "tokens_in": None, "tokens_out": None, "cost_usd": None, "errors": 0, "max_seq": None}
TOTALS = ("tokens_in", "tokens_out", "cost_usd")


def run_totals(session: dict, step_sums: dict) -> dict:
    """The one definition of a run's tokens and cost, for every view of it: per figure, the
    steps' sum when any step carries it, else the source's run total (session metadata
    `tokens_in`, `tokens_out`, `cost_usd`, as SWE-agent's `model_stats` gives), else none
    (tokens 0, cost None). `totals_source` says which: "steps", "source", "steps+source", None."""
    meta = session.get("metadata") if isinstance(session.get("metadata"), dict) else {}
    out = dict(step_sums)
    used = set()
    for name in TOTALS:
        if step_sums.get(name) is not None:
            used.add("steps")
            continue
        value = meta.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            out[name] = int(value) if name != "cost_usd" else float(value)
            used.add("source")
    out["tokens_in"] = int(out.get("tokens_in") or 0)
    out["tokens_out"] = int(out.get("tokens_out") or 0)
    out["totals_source"] = "+".join(sorted(used, key=("steps", "source").index)) or None
    return out


def _duration(row: dict) -> float | None:
    start, end = row.get("started_at"), row.get("ended_at") or row.get("last_event_at")
    return (end - start).total_seconds() if start and end else None


class _Transaction:
    """`with`: a connection with its transaction begun; committed on success, else rolled back."""

    def __init__(self, conn: Connection):
        self.conn = conn

    def __enter__(self) -> Connection:
        self._tx = self.conn.begin()
        return self.conn

    def __exit__(self, kind, exc, tb) -> None:
        try:
            if kind is None:
                self._tx.commit()
            else:
                self._tx.rollback()
        finally:
            self.conn.close()


def make_engine(url: str) -> Engine:
    """An engine with orjson for JSON columns and SQLite set up for concurrent use."""
    kwargs: dict[str, Any] = {"json_serializer": _json_dumps, "json_deserializer": orjson.loads}
    if url.startswith("sqlite"):
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
    engine = create_engine(url, **kwargs)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
    return engine


def _sqlite_begin(conn: Connection) -> None:
    """SQLAlchemy's documented pysqlite recipe: the driver's own transaction handling is off
    (isolation_level None, in `_sqlite_pragmas`) and BEGIN is ours to say, IMMEDIATE for writes."""
    immediate = conn.get_execution_options().get("sqlite_immediate")
    conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()
    dbapi_conn.isolation_level = None  # BEGIN is emitted by _sqlite_begin


__all__ = ["Store", "SessionFilter", "WriteResult", "WriteRefused", "REVIEW_LABELS", "EXPERIMENT_SOURCE", "make_engine", "metadata"]


def open_store(url: str | None = None, *, migrate: bool = True) -> Store:
    """The Store at `url` (`--db` → `AGENT_REPLAY_DB_URL` → the embedded SQLite file), migrated."""
    return Store(url, migrate=migrate)

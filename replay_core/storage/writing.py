"""The write path: events (or rows made from them elsewhere) in, stored in one transaction.

`WriteBatch` is what a write takes apart, plain data a reader process can build and send;
`WriteResult` what it did; `WriteRefused` what it would not take. `Writing` stores batches:
sessions created or locked, steps numbered and deduplicated, their contexts, the per-run and
per-day rollups and (SQLite) the search index kept up in the same transaction.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from operator import itemgetter
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from sqlalchemy import Text, and_, bindparam, func, or_, select, text, update
from sqlalchemy.engine import Connection

from .. import config
from ..vocabulary import SessionStatus, now_utc
from . import daily, rollups
from .actor import INGEST, Actor
from .audit import audit_line
from .bulk import bind_processors, bound_row, bulk_insert, chunks, dialect_module, insert_new
from .columns import EVENT_ID_AT, ROW_COLUMNS, SEQ_AT, SESSION_FIELDS, TIMESTAMP_AT, call_key, rollup_values, step_values
from .engine import StoreBase
from .room import settle_quiet
from .search import SQLITE_FILL_AFTER
from .tables import run_breakdown, run_rollups, sessions, step_contexts, steps

if TYPE_CHECKING:
    from ..events import SessionEndEvent, SessionEvent, StepEvent

ENDED = frozenset({SessionStatus.SUCCEEDED.value, SessionStatus.FAILED.value, SessionStatus.UNKNOWN.value})
FINAL_FIELDS = ("status", "name", "outcome")  # what only an explicit replace changes on an ended run

# A long write (a big file's batches in one transaction, ingest.parallel) grows the per-run tables past
# what PostgreSQL's statistics say (none in a new database, and autovacuum cannot see rows not committed):
# each batch's look-ups of its runs by an IN list were planned as scans of the whole table, and a 1M-step
# import spent 30 of its 70 s in them. `write_batches` analyzes them itself (ANALYZE counts the rows its
# own transaction wrote) once it has written ANALYZE_WITHIN runs, then at 4×, 16× … that.
ANALYZE_WITHIN = 2_000
RUN_TABLES = (sessions, run_rollups, run_breakdown)


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
    row = (*step_values(values), step.session_id, call_key(values), None)
    if row[EVENT_ID_AT] is None:
        row = (*row[:EVENT_ID_AT], step.identity(), *row[EVENT_ID_AT + 1 :])
    return row, values["context"]


@dataclass(slots=True)
class StepRow:
    """A step validated and redacted on a path that makes no StepEvent (ingest.step_rows):
    its `step_row`, and how many values redaction replaced in it. `Store.write` takes it among events."""

    session_id: str
    row: tuple
    context: Any
    redacted: int  # values this redaction replaced (the report's count), not the row's `redacted`
    kind: ClassVar[Literal["row"]] = "row"

    @classmethod
    def of(cls, values: dict[str, Any], redacted: int, place: str | None = None) -> StepRow:
        """From a step's values (every StepEvent field) whose event_id is set, and its place (OTLP steps)."""
        sid = values["session_id"]
        return cls(sid, (*step_values(values), sid, call_key(values), place), values["context"], redacted)


class Arrangement(Protocol):
    """What a write does besides storing its batch, in the same transaction (an OTLP batch: moving a
    provisional run's steps, making room among stored steps, the receiver's state): `start` before
    the batch's runs are read, `place` once they are locked and created (it may set its rows' seqs and
    places, and takes out the steps their runs hold already; returns the rollup rows, rollups.FIELDS, of
    stored steps it moved into each run, and how many steps of each run it took out), `finish` after the
    steps are stored. `landed` says, per run it placed steps in, where they landed for the rollups
    (rollups.append: the first and last seq of one spot with no stored step among them and whether stored
    steps follow it, None for several). `daily` names the runs besides the batch's whose day cells it changed
    (steps taken over, runs moved away), refreshed with the batch's at the write's end."""

    landed: dict[str, tuple[int, int, bool] | None]
    daily: list[str]

    def start(self, conn: Connection) -> None: ...

    def place(self, conn: Connection, batch: WriteBatch) -> tuple[dict[str, list[Sequence]], dict[str, int]]: ...

    def finish(self, conn: Connection) -> None: ...


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
    # who sent it: its `ingest` audit line (runs, steps stored) is written in its own transaction
    audit: Actor | None = None

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
            if len({row[EVENT_ID_AT] for row, _ in pending}) != len(pending) or any(row[SEQ_AT] is None for row, _ in pending):
                return
        row_procs = bind_processors(dialect, steps, ROW_COLUMNS)
        context_proc = step_contexts.c.context.type._cached_bind_processor(dialect)
        for sid, pending in self.steps.items():
            rows = [row for row, _ in pending]
            self.rolled[sid] = rollups.rollup_of(sid, sorted(map(rollup_values, rows), key=itemgetter(0)))
            stamps = [row[TIMESTAMP_AT] for row in rows if row[TIMESTAMP_AT] is not None]
            self.times[sid] = (min(stamps), max(stamps)) if stamps else (None, None)
            self.steps[sid] = [
                (bound_row(row, row_procs), None if context is None or context_proc is None else context_proc(context))
                for row, context in pending
            ]
        self.bound = True

    def first_last(self, sid: str) -> tuple[Any, Any]:
        """The earliest and latest time of this run's steps in the batch (None, None without any)."""
        if self.bound:
            return self.times.get(sid, (None, None))
        stamps = [row[TIMESTAMP_AT] for row, _ in self.steps.get(sid, ()) if row[TIMESTAMP_AT] is not None]
        return (min(stamps), max(stamps)) if stamps else (None, None)


class WriteRefused(ValueError):
    """Events the store will not take, nothing of the batch stored. `field` names what is
    at fault; `status` is the HTTP answer that fits (422 a bad reference, 409 a conflict)."""

    def __init__(self, reason: str, *, field: str, status: int = 422):
        super().__init__(reason)
        self.reason, self.field, self.status = reason, field, status

    def __reduce__(self):  # whole across processes (storage.worker): its field and status are keywords
        return functools.partial(WriteRefused, field=self.field, status=self.status), (self.reason,)


def existing_sessions(conn: Connection, ids: Sequence[str], *, lock: bool = False) -> dict[str, dict]:
    """The stored status, name and outcome of those of `ids` that exist; with `lock`, their
    rows stay locked (PostgreSQL: FOR UPDATE, in id order so writers never deadlock)."""
    known: dict[str, dict] = {}
    cols = (sessions.c.id, sessions.c.status, sessions.c.name, sessions.c.outcome, sessions.c.error_class)
    for part in chunks(sorted(ids)):
        query = select(*cols).where(sessions.c.id.in_(part)).order_by(sessions.c.id)
        if lock and conn.dialect.name == "postgresql":
            query = query.with_for_update()
        for row in conn.execute(query):
            known[row.id] = dict(row._mapping)
    return known


class Writing(StoreBase):
    """Storing events, and marking runs that went quiet incomplete."""

    _unplanned: int | None  # PostgreSQL: steps written before the steps table's statistics were seen

    def write(
        self,
        events: Iterable[SessionEvent | StepEvent | StepRow | SessionEndEvent],
        *,
        default_source: str | None = None,
        replace: bool = False,
        refuse_conflicts: bool = False,
        audit: Actor | None = None,
        arrange: Arrangement | None = None,
    ) -> WriteResult:
        """Store validated, redacted events in one transaction (with `audit`, an `ingest` line of the
        audit log in the name of that actor, summing up the write; with `arrange`, its work too).

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
        batch = WriteBatch(audit=audit)
        for ev in events:
            batch.add(ev)
        if not batch.order and arrange is None:
            return WriteResult()
        return self.write_batches(
            [batch], default_source=default_source, replace=replace, refuse_conflicts=refuse_conflicts, arrange=arrange
        )

    def write_batches(
        self,
        batches: Iterable[WriteBatch],
        *,
        default_source: str | None = None,
        replace: bool = False,
        refuse_conflicts: bool = False,
        counts: list[tuple[int, int]] | None = None,
        arrange: Arrangement | None = None,
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
                if batch.order or arrange is not None:
                    listed.update(batch.order)
                    before = result.steps, result.duplicates
                    self._write_batch(conn, batch, now, result, default_source, replace, refuse_conflicts, arrange)
                    if counts is not None:
                        counts.append((result.steps - before[0], result.duplicates - before[1]))
                    if batch.audit is not None:
                        stored, dupes = result.steps - before[0], result.duplicates - before[1]
                        detail = {"sessions": len(batch.order), "steps": stored, "duplicates": dupes}
                        audit_line(conn, batch.audit, INGEST, target=",".join(batch.order)[:2000], detail=detail)
                    index_new()  # while the reader makes the next batch
                    if self.dialect == "postgresql" and len(listed) >= analyzed:
                        conn.exec_driver_sql(f"ANALYZE {', '.join(t.name for t in RUN_TABLES)}")
                        analyzed *= 4
            # once for the whole write: a day's cell holds runs of many batches, and was summed again after each
            daily.refresh(conn, [*listed, *(arrange.daily if arrange is not None else ())], bulk_insert)
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
            seen = conn.execute(
                text(
                    "SELECT last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL FROM pg_stat_user_tables"
                    " WHERE relid = 'steps'::regclass"
                )
            ).scalar()
            if not seen:
                conn.execute(text("ANALYZE steps"))
            conn.commit()

    def _write_batch(
        self, conn, batch: WriteBatch, now, result: WriteResult, default_source, replace, refuse_conflicts, arrange=None
    ) -> None:
        ids, opened, ended, by_session = list(batch.order), batch.opened, batch.ended, batch.steps
        if arrange is not None:
            arrange.start(conn)
        known = existing_sessions(conn, ids, lock=True)
        self._check_references(conn, ids, opened)
        created = self._create_sessions(conn, ids, known, opened, batch, now, default_source, ended)
        known.update(existing_sessions(conn, [sid for sid in ids if sid not in known and sid not in created], lock=True))
        if not replace:
            conflicts = self._keep_final(known, opened, ended)
            if conflicts and refuse_conflicts:
                raise WriteRefused("; ".join(conflicts), field="status", status=409)
            result.conflicts += conflicts
        for sid, fields in opened.items():
            if sid in known and fields:
                conn.execute(update(sessions).where(sessions.c.id == sid).values(**fields))
        moved, held = arrange.place(conn, batch) if arrange is not None else ({}, {})
        last_seen: dict[str, datetime] = {}
        rolled_new, stale, all_rows, all_contexts = {}, {}, [], []
        for sid, pending in by_session.items():
            existed = sid in known and arrange is None  # an arrangement numbered them and took out what is stored
            dupes, new_rows, contexts = self._new_steps(conn, sid, pending, existed, batch.bound)
            dupes += held.get(sid, 0)
            if sid in created and sid not in known and sid not in moved:  # every step of the run is in hand
                rolled_new[sid] = (
                    batch.rolled[sid]
                    if batch.bound
                    else rollups.rollup_of(sid, sorted(map(rollup_values, new_rows), key=itemgetter(0)))
                )
            elif new_rows or sid in moved:
                stale[sid] = [*map(rollup_values, new_rows), *moved.get(sid, ())]
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
        bulk_insert(conn, steps, ROW_COLUMNS, all_rows, bound=batch.bound)
        bulk_insert(conn, step_contexts, ("session_id", "event_id", "context"), all_contexts, bound=batch.bound)
        rollups.write(conn, list(rolled_new), rolled_new.values(), bulk_insert)
        for sid, rows in moved.items():
            if sid not in by_session and rows:
                stale[sid] = list(rows)
        rollups.append(conn, stale, bulk_insert, arrange.landed if arrange is not None else None)
        seen: dict[bool, list[dict]] = {False: [], True: []}
        for sid, latest in last_seen.items():
            revive = sid in known and known[sid]["status"] == SessionStatus.INCOMPLETE and sid not in ended
            seen[revive].append({"sid": sid, "latest": latest})
        for revive, params in seen.items():
            if params:
                values: dict[str, Any] = {"last_event_at": bindparam("latest")}
                if revive:
                    values["status"] = SessionStatus.RUNNING.value
                conn.execute(
                    update(sessions)
                    .where(sessions.c.id == bindparam("sid"))
                    .where(or_(sessions.c.last_event_at.is_(None), sessions.c.last_event_at < bindparam("latest")))
                    .values(**values),
                    params,
                )
        # the source's end time, else its last event's: never the time of this write, so a
        # re-import stores the same ended_at, and a file without times gives a run without them
        ends = [
            {
                "sid": sid,
                "e_status": end.status,
                "e_outcome": end.outcome,
                "e_class": end.error_class,
                "e_at": end.ended_at or last_seen.get(sid),
            }
            for sid, end in ended.items()
        ]
        if ends:
            conn.execute(
                update(sessions)
                .where(sessions.c.id == bindparam("sid"))
                .values(
                    status=bindparam("e_status"),
                    outcome=bindparam("e_outcome"),
                    error_class=bindparam("e_class"),
                    ended_at=func.coalesce(bindparam("e_at", type_=sessions.c.ended_at.type), sessions.c.last_event_at),
                ),
                ends,
            )
        if arrange is not None:
            arrange.finish(conn)

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

    def _check_references(self, conn: Connection, ids: Sequence[str], opened: dict[str, dict]) -> None:
        wanted = {f["replay_of"] for f in opened.values() if f.get("replay_of") is not None} - set(ids)
        if not wanted:
            return
        found = set(existing_sessions(conn, list(wanted)))
        for sid, fields in opened.items():
            if fields.get("replay_of") is not None and fields["replay_of"] not in found and fields["replay_of"] not in ids:
                raise WriteRefused(
                    f"replay_of: session {sid!r} names {fields['replay_of']!r}, which is not a stored run", field="replay_of"
                )

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
                conflicts.append(
                    f"session {sid!r} already ended ({row['status']}); kept, not changed: {', '.join(changed)}"
                    " (replace to change it)"
                )
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
        for part in chunks(new_rows, 200):  # RETURNING says which rows were ours
            created.update(insert_new(conn, sessions, names, [[row[n] for n in names] for row in part], "id"))
        return created

    def _new_steps(self, conn, sid: str, batch: list[tuple[tuple, Any]], existed: bool, bound: bool = False):
        """The rows (and contexts) of the steps of `batch` (`step_row`s) not stored yet, numbered; and the duplicates."""
        if not existed and bound:  # `WriteBatch.bind` found every seq given and no event id twice
            return (
                0,
                [row for row, _ in batch],
                [(sid, row[EVENT_ID_AT], context) for row, context in batch if context is not None],
            )
        seen: set[str] = set()
        next_seq = 1
        if existed:
            ids = list({row[EVENT_ID_AT] for row, _ in batch})
            known = select(steps.c.event_id).where(
                steps.c.session_id == sid, steps.c.event_id.in_(bindparam("ids", expanding=True))
            )
            if self.dialect == "postgresql":  # one array, joined: the generic plan a pooled connection gets after a few
                # runs tested each of the run's steps against the list (75 ms a batch)
                id_array = dialect_module(self.dialect).ARRAY(Text)
                wanted = func.unnest(bindparam("ids", type_=id_array)).table_valued("id").render_derived()
                known = select(steps.c.event_id).join_from(
                    wanted, steps, and_(steps.c.session_id == sid, steps.c.event_id == wanted.c.id)
                )
            for part in chunks(ids):  # an expanding parameter: ids are sent as values, not coerced into the statement one by one
                seen.update(conn.scalars(known, {"ids": list(part)}))
            next_seq = (conn.scalar(select(func.max(steps.c.seq)).where(steps.c.session_id == sid)) or 0) + 1
        batch_max = max((row[SEQ_AT] for row, _ in batch if row[SEQ_AT] is not None), default=0)
        next_seq = max(next_seq, batch_max + 1)
        rows, contexts, dupes = [], [], 0
        for row, context in batch:
            event_id = row[EVENT_ID_AT]
            if event_id in seen:
                dupes += 1
                continue
            seen.add(event_id)
            if row[SEQ_AT] is None:
                row = (*row[:SEQ_AT], next_seq, *row[SEQ_AT + 1 :])
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
            for part in chunks(ids):
                conn.execute(update(sessions).where(sessions.c.id.in_(part)).values(status=SessionStatus.INCOMPLETE.value))
            daily.refresh(conn, ids, bulk_insert)  # a run's status is part of its cell
            settle_quiet(conn)  # OTLP runs whose gaps wait for their traces to go quiet
            return len(ids)

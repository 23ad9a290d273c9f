"""Reading steps: a run's steps in order (as events or as decoded columns), their types, the
contexts recorded with them, and whole runs as native events for export."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from itertools import islice
from operator import ge, itemgetter
from typing import TYPE_CHECKING, Any

import orjson
from sqlalchemy import select
from sqlalchemy.engine import Connection

from ..vocabulary import SessionStatus
from .bulk import chunks
from .columns import SEQ_AT, SESSION_FIELDS, STEP_COLUMNS, TIMESTAMP_AT
from .engine import StoreBase
from .tables import sessions, step_contexts, steps

if TYPE_CHECKING:  # made only by the reads that return events: `stats` opens a Store without pydantic
    from ..events import SessionEndEvent, SessionEvent, StepEvent

_JSON_STEP_COLUMNS = tuple(STEP_COLUMNS.index(name) for name in ("tool_args", "metadata"))


def _decoded_step_columns(rows: Sequence[Sequence], dialect: str) -> list[Sequence]:
    """Step rows as the driver returns them, turned into columns (STEP_COLUMNS' order) with the values
    SQLAlchemy's column types would have made: the timestamp timezone-aware UTC (tables.UTCDateTime),
    the JSON columns parsed (and a bare number, which SQLite hands back as a number, kept: SQLAlchemy's
    JSON type failed on it). SQLite hands back text; psycopg a naive datetime and JSON it parsed itself
    (the engine's json_deserializer)."""
    if not rows:
        return [() for _ in STEP_COLUMNS]
    columns: list[Sequence] = list(zip(*rows, strict=True))
    stamps = columns[TIMESTAMP_AT]
    if dialect == "sqlite":  # stored naive, as "YYYY-MM-DD HH:MM:SS.ffffff"
        columns[TIMESTAMP_AT] = [None if v is None else datetime.fromisoformat(v + "+00:00") for v in stamps]
        for i in _JSON_STEP_COLUMNS:  # a bare number comes back a number (the column's numeric affinity)
            columns[i] = [v if v is None else orjson.loads(v) if isinstance(v, (str, bytes)) else v for v in columns[i]]
    else:
        columns[TIMESTAMP_AT] = [None if v is None else v.replace(tzinfo=UTC) for v in stamps]
    return columns


def _fetched(conn: Connection, query: Any) -> Sequence[Sequence]:
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


class Steps(StoreBase):
    """A run's steps and contexts, read back."""

    def load_steps(self, session_id: str, *, from_seq: int | None = None, to_seq: int | None = None) -> list[StepEvent]:
        """Steps of a session in order (seq, then timestamp), without their context."""
        return step_events(session_id, zip(*self.load_step_columns(session_id, from_seq=from_seq, to_seq=to_seq), strict=True))

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
            if any(map(ge, map(itemgetter(SEQ_AT), rows), map(itemgetter(SEQ_AT), islice(rows, 1, None)))):
                rows = _fetched(conn, query.order_by(steps.c.seq, steps.c.timestamp, steps.c.id))
        return _decoded_step_columns(rows, self.engine.dialect.name)

    def step_types(self, session_ids: Sequence[str]) -> dict[str, list[str]]:
        """Step types in order, per session: all cycle counting needs, without content."""
        out: dict[str, list[str]] = {sid: [] for sid in session_ids}
        with self.engine.connect() as conn:
            for part in chunks(list(session_ids)):
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
            with self.engine.connect() as conn:
                row = conn.execute(select(sessions).where(sessions.c.id == sid)).mappings().first()
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
                values = step.__dict__ | {"context": contexts.get(step.identity())}
                yield StepEvent.trusted(values)
            if status not in (SessionStatus.RUNNING, SessionStatus.INCOMPLETE):
                yield SessionEndEvent(
                    session_id=sid,
                    status=status,
                    outcome=row["outcome"],
                    error_class=row["error_class"],
                    ended_at=row["ended_at"],
                )

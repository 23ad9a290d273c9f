"""What ingest keeps between one delivery and the next: OTLP traces that arrive over several
batches (which run each trace went to, the tool calls still waiting for their answer, a
provisional run's steps moved into the run its trace turned out to be), and how far `watch`
has read each file."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from sqlalchemy import bindparam, delete, func, insert, select, update

from .. import config
from ..vocabulary import now_utc
from . import daily, rollups
from .bulk import bulk_insert, chunks, dialect_module
from .columns import STEP_COLUMNS, call_key, step_values
from .engine import StoreBase
from .tables import annotations as annotations_table
from .tables import attachments, otlp_open_calls, otlp_traces, sessions, step_contexts, steps, watch_offsets
from .writing import existing_sessions

if TYPE_CHECKING:
    from ..events import StepEvent


class IngestState(StoreBase):
    """OTLP traces across batches, and watch's file offsets."""

    def otlp_state(self, trace_ids: Sequence[str]) -> tuple[dict[str, tuple[str, bool]], list[dict]]:
        """Where each known trace lives ({trace_id: (session_id, settled)}) and the calls its earlier batches left open."""
        placed: dict[str, tuple[str, bool]] = {}
        open_calls: list[dict] = []
        cols = [otlp_open_calls.c[n] for n in ("trace_id", "side", "event_id", "name", "call_id", "arguments", "t_ns")]
        with self.engine.connect() as conn:
            for part in chunks(list(trace_ids)):
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
            existing_sessions(conn, [from_sid, to_sid], lock=True)
            src = conn.execute(select(sessions).where(sessions.c.id == from_sid)).mappings().first()
            conn.execute(update(otlp_traces).where(otlp_traces.c.session_id == from_sid).values(session_id=to_sid))
            if src is None or from_sid == to_sid:
                return 0
            dialect = dialect_module(self.dialect)
            conn.execute(dialect.insert(sessions).values(**{**src, "id": to_sid}).on_conflict_do_nothing(index_elements=["id"]))
            existing_sessions(conn, [to_sid], lock=True)
            target = conn.execute(select(sessions.c.id, sessions.c.last_event_at).where(sessions.c.id == to_sid)).one()
            if src["last_event_at"] and (target.last_event_at is None or target.last_event_at < src["last_event_at"]):
                conn.execute(update(sessions).where(sessions.c.id == to_sid).values(last_event_at=src["last_event_at"]))
            rows = conn.execute(
                select(steps.c.id, steps.c.event_id)
                .where(steps.c.session_id == from_sid)
                .order_by(steps.c.seq, steps.c.timestamp, steps.c.id)
            ).all()
            held: set[str] = set()
            for part in chunks([r.event_id for r in rows]):
                held.update(
                    conn.scalars(select(steps.c.event_id).where(steps.c.session_id == to_sid, steps.c.event_id.in_(part)))
                )
            for part in chunks(sorted(held)):
                for table in (step_contexts, steps):
                    conn.execute(delete(table).where(table.c.session_id == from_sid, table.c.event_id.in_(part)))
            base = conn.scalar(select(func.max(steps.c.seq)).where(steps.c.session_id == to_sid)) or 0
            moving = [{"rid": r.id, "new_seq": base + n} for n, r in enumerate((r for r in rows if r.event_id not in held), 1)]
            if moving:
                conn.execute(
                    update(steps).where(steps.c.id == bindparam("rid")).values(session_id=to_sid, seq=bindparam("new_seq")),
                    moving,
                )
            for table in (step_contexts, attachments, annotations_table):
                conn.execute(update(table).where(table.c.session_id == from_sid).values(session_id=to_sid))
            conn.execute(update(sessions).where(sessions.c.replay_of == from_sid).values(replay_of=to_sid))
            rollups.forget(conn, [from_sid])
            conn.execute(delete(sessions).where(sessions.c.id == from_sid))
            rollups.refresh(conn, [to_sid], bulk_insert)
            daily.refresh(conn, [from_sid, to_sid], bulk_insert)
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
            for part in chunks(list(placed)):
                known.update(conn.scalars(select(t.trace_id).where(t.trace_id.in_(part))))
            for tid in known:
                sid, settled = placed[tid]
                conn.execute(update(otlp_traces).where(t.trace_id == tid).values(session_id=sid, settled=settled, updated_at=now))
            new = [
                {"trace_id": tid, "session_id": sid, "settled": settled, "updated_at": now}
                for tid, (sid, settled) in placed.items()
                if tid not in known
            ]
            if new:
                conn.execute(insert(otlp_traces), new)
            for tid, side, event_id in consumed:
                conn.execute(delete(otlp_open_calls).where(o.trace_id == tid, o.side == side, o.event_id == event_id))
            if opened:
                conn.execute(insert(otlp_open_calls), list(opened))
            cutoff = now - (idle if idle is not None else config.idle_timeout())
            stale = select(t.trace_id).where(t.updated_at < cutoff)
            conn.execute(delete(otlp_open_calls).where(o.trace_id.in_(stale)))
            for old_event_id, step in replaced:
                event_id = step.identity()
                taken = conn.scalar(select(steps.c.id).where(steps.c.session_id == step.session_id, steps.c.event_id == event_id))
                if taken is not None:  # a re-delivered batch: the tool's step is stored already
                    continue
                values = dict(zip(STEP_COLUMNS, step_values(step.__dict__), strict=True))
                values.update(event_id=event_id, call_key=call_key(values))
                del values["seq"]
                conn.execute(
                    update(steps).where(steps.c.session_id == step.session_id, steps.c.event_id == old_event_id).values(**values)
                )
            rollups.refresh(conn, [step.session_id for _, step in replaced], bulk_insert)
            daily.refresh(conn, [step.session_id for _, step in replaced], bulk_insert)

    def watch_offset(self, path: str) -> dict | None:
        """Where `watch` has read `path` up to: {path, inode, offset, format, updated_at, fingerprint}, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(select(watch_offsets).where(watch_offsets.c.path == path)).first()
            return dict(row._mapping) if row else None

    def save_watch_offset(
        self, path: str, *, inode: int | None, offset: int, format: str | None, fingerprint: str | None = None
    ) -> None:
        values = {"inode": inode, "offset": offset, "format": format, "fingerprint": fingerprint, "updated_at": now_utc()}
        with self._write_lock, self.engine.begin() as conn:
            done = conn.execute(update(watch_offsets).where(watch_offsets.c.path == path).values(**values)).rowcount
            if not done:
                conn.execute(insert(watch_offsets).values(path=path, **values))

"""Reading runs (one, a filtered page, their ids, a dimension's values), their totals, and
deleting them with everything they hold (by hand or by the retention policy)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import delete, exists, func, select, update

from ..vocabulary import now_utc
from . import daily, rollups
from .actor import DELETE, EDITOR, Actor
from .attachments import drop_unused_blobs
from .audit import Audited, audit_line
from .bulk import bulk_insert, chunks
from .filters import SessionFilter, filter_clauses
from .tables import annotations as annotations_table
from .tables import (
    attachments,
    otlp_open_calls,
    otlp_traces,
    run_breakdown,
    run_rollups,
    sessions,
    step_contexts,
    steps,
)

RETENTION = Actor("retention policy", EDITOR, "retention")  # who deletes old runs, in the audit log
_EMPTY_TOTALS = {"steps": 0, "tokens_in": None, "tokens_out": None, "cost_usd": None, "errors": 0, "max_seq": None}
TOTALS = ("tokens_in", "tokens_out", "cost_usd")


def run_totals(session: dict, step_sums: dict) -> dict:
    """The one definition of a run's tokens and cost, for every view of it: per figure, the
    steps' sum when any step carries it, else the source's run total (session metadata
    `tokens_in`, `tokens_out`, `cost_usd`, as SWE-agent's `model_stats` gives), else none
    (tokens 0, cost None). `totals_source` says which: "steps", "source", "steps+source", None."""
    meta = session.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
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


class Sessions(Audited):
    """Runs as the lists, the timeline's header and exports see them; deleting runs."""

    def count_sessions(self, flt: SessionFilter | None = None) -> int:
        with self.engine.connect() as conn:
            return conn.execute(select(func.count()).select_from(sessions).where(*filter_clauses(flt, self.dialect))).scalar_one()

    def list_sessions(self, flt: SessionFilter | None = None, *, limit: int = 50, offset: int = 0) -> list[dict]:
        """One page of sessions, newest first, with per-session step aggregates."""
        query = (
            select(sessions)
            .where(*filter_clauses(flt, self.dialect))
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
        for part in chunks(list(ids)):
            query = select(r.session_id, r.steps, r.tokens_in, r.tokens_out, r.cost_usd, r.errored_steps, r.max_seq)
            for sid, n, t_in, t_out, cost, errors, max_seq in conn.execute(query.where(r.session_id.in_(part))):
                out[sid] = {
                    "steps": n,
                    "tokens_in": t_in,
                    "tokens_out": t_out,
                    "cost_usd": cost,
                    "errors": errors,
                    "max_seq": max_seq,
                }
        return out

    def rebuild_rollups(self) -> int:
        """Recompute every run's rollups from its steps (`agent-replay db rebuild-rollups`); returns runs rolled up."""
        with self._write_lock, self._write_transaction() as conn:
            runs = rollups.rebuild(conn, bulk_insert)
            daily.rebuild(conn, bulk_insert)
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
            query = select(sessions.c.id).where(*filter_clauses(flt, self.dialect)).order_by(sessions.c.started_at, sessions.c.id)
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
            audit_line(conn, actor, DELETE, target=",".join(ids)[:2000], detail={"sessions": len(ids)})
            for part in chunks(list(ids)):
                orphans = list(conn.scalars(select(sessions.c.id).where(sessions.c.replay_of.in_(part))))
                conn.execute(update(sessions).where(sessions.c.replay_of.in_(part)).values(replay_of=None))
                for table in (step_contexts, steps, attachments, annotations_table, run_breakdown, run_rollups):
                    conn.execute(delete(table).where(table.c.session_id.in_(part)))
                traces = select(otlp_traces.c.trace_id).where(otlp_traces.c.session_id.in_(part))
                conn.execute(delete(otlp_open_calls).where(otlp_open_calls.c.trace_id.in_(traces)))
                conn.execute(delete(otlp_traces).where(otlp_traces.c.session_id.in_(part)))
                n += conn.execute(delete(sessions).where(sessions.c.id.in_(part))).rowcount
                left += [*part, *orphans]  # a replay whose original went counts as a run now
            drop_unused_blobs(conn)
            daily.refresh(conn, left, bulk_insert)  # once, last: its lock is the transaction's last (daily._one_at_a_time)
        return n

    def delete_older_than(
        self, days: float, *, keep_annotated: bool = False, now: datetime | None = None, actor: Actor = RETENTION
    ) -> int:
        """Retention: drop runs that started more than `days` ago (as `actor`: the policy, or who asked)."""
        cutoff = (now or now_utc()) - timedelta(days=days)
        query = select(sessions.c.id).where(sessions.c.started_at < cutoff)
        if keep_annotated:
            query = query.where(~exists().where(annotations_table.c.session_id == sessions.c.id))
        with self.engine.connect() as conn:
            ids = list(conn.scalars(query))
        return self.delete_sessions(ids, actor=actor)

"""Narrow reads for replay_core.understand.analytics, aggregated here because SQL does it without
moving a million rows through Python. Never step content. Each returns (columns, rows).
Times and tags come as text (UTC 'YYYY-MM-DD HH:MM:SS[.ffffff]', JSON): polars parses
them in bulk far faster than per-row objects are made."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Text, case, cast, func, null, select
from sqlalchemy.engine import Connection

from . import daily
from .engine import StoreBase
from .filters import SessionFilter, filter_clauses
from .plain import EXPERIMENT_SOURCE
from .tables import run_breakdown, run_rollups, sessions


class AnalyticsReads(StoreBase):
    """Per-run rows, rollups, headline sums and per-day cells for the dashboard and analytics."""

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
            sessions.c.id.label("session_id"),
            sessions.c.agent_id,
            sessions.c.model,
            sessions.c.workflow,
            sessions.c.environment,
            sessions.c.agent_version,
            sessions.c.user_id,
            sessions.c.thread_id,
            sessions.c.status,
            sessions.c.error_class,
            cast(sessions.c.started_at, Text).label("started_at"),
            cast(func.coalesce(sessions.c.ended_at, sessions.c.last_event_at), Text).label("ended_at"),
            cast(sessions.c.tags, Text).label("tags"),
            self._json_number(meta, "tokens_in").label("meta_tokens_in"),
            self._json_number(meta, "tokens_out").label("meta_tokens_out"),
            self._json_number(meta, "cost_usd").label("meta_cost_usd"),
            sessions.c.replay_of,
            sessions.c.replay_config["model"].as_string().label("replay_model"),
            meta["replay_outcome"].as_string().label("replay_outcome"),
        ).where(*filter_clauses(flt, self.dialect))
        with self.engine.connect() as conn:
            return self._rows(conn, query)

    def rollup_rows(self, flt: SessionFilter | None = None, *, durations: bool = True) -> tuple[list[str], list[tuple]]:
        """Per run with steps, its rollup (storage/rollups.py): counts, sums, first error, cycles,
        loops, and with `durations` its step durations packed as comma-separated whole µs."""
        r = run_rollups.c
        cols: list[ColumnElement[Any]] = [c for c in r if c.name not in ("max_seq", "first_error_at", "durations_us")]
        cols.append(cast(r.first_error_at, Text).label("first_error_at"))
        if durations:
            cols.append(r.durations_us)
        query = (
            select(*cols)
            .select_from(run_rollups.join(sessions, sessions.c.id == r.session_id))
            .where(*filter_clauses(flt, self.dialect))
        )
        with self.engine.connect() as conn:
            return self._rows(conn, query)

    def headline_rows(self, flt: SessionFilter | None = None, key: str | None = None) -> list[tuple]:
        """Per run, what the headline sums, in one narrow query: (key, status, started_at, ended_at
        as text, tokens in, tokens out, cost — the rollup's, else the source's — retried steps, tool
        calls, tool failures, fallback blocks, taken over). `key` is a sessions column (or None)."""
        r, meta = run_rollups.c, sessions.c.metadata

        def rolled(column, name):
            return case((column.is_(None), self._json_number(meta, name)), else_=column)

        query = (
            select(
                sessions.c[key] if key else null(),
                sessions.c.status,
                cast(sessions.c.started_at, Text),
                cast(func.coalesce(sessions.c.ended_at, sessions.c.last_event_at), Text),
                rolled(r.tokens_in, "tokens_in"),
                rolled(r.tokens_out, "tokens_out"),
                rolled(r.cost_usd, "cost_usd"),
                r.retried_steps,
                r.tool_calls,
                r.tool_failures,
                r.fallback_blocks,
                r.fallback_agent,
            )
            .select_from(sessions.outerjoin(run_rollups, r.session_id == sessions.c.id))
            .where(*filter_clauses(flt, self.dialect))
        )
        with self.engine.connect() as conn:
            return [tuple(row) for row in conn.execute(query)]

    def daily_rows(
        self, flt: SessionFilter | None = None, *, detail: bool = True, parts: Sequence[str] | None = None
    ) -> dict[str, tuple[list[str], Sequence[tuple]]] | None:
        """The dashboard's reads from the per-day rollups (storage/daily.py): cells, tools and errors
        per cell, run times, and with `detail` step durations (only `parts` of them, if given); None
        when the filter needs the per-run rollups (a text search, a tag, a workflow, …)."""
        if not daily.answers(flt):
            return None
        out: dict[str, tuple[list[str], Sequence[tuple]]] = {}
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
        query = (
            select(b.session_id, b.tool_name, b.error_class, b.tool_calls, b.errored)
            .select_from(run_breakdown.join(sessions, sessions.c.id == b.session_id))
            .where(*filter_clauses(flt, self.dialect))
        )
        with self.engine.connect() as conn:
            return self._rows(conn, query)

    def thread_rows(self, flt: SessionFilter | None = None, *, limit: int = 100) -> list[dict]:
        """Conversations (runs sharing a thread_id), the latest first: their runs, failed runs, first and
        last start, users (the one, or how many), tokens and cost summed as each run's totals are
        (the rollup's, else the source's)."""
        r, meta, s = run_rollups.c, sessions.c.metadata, sessions.c

        def rolled(column, name):
            return func.sum(case((column.is_(None), self._json_number(meta, name)), else_=column))

        last = func.max(func.coalesce(s.started_at, s.created_at))
        query = (
            select(
                s.thread_id,
                func.count().label("runs"),
                func.sum(case((s.status == "failed", 1), else_=0)).label("failed"),
                func.min(func.coalesce(s.started_at, s.created_at)).label("first_started_at"),
                last.label("last_started_at"),
                func.min(s.user_id).label("user_id"),
                func.count(s.user_id.distinct()).label("users"),
                rolled(r.tokens_in, "tokens_in").label("tokens_in"),
                rolled(r.tokens_out, "tokens_out").label("tokens_out"),
                rolled(r.cost_usd, "cost_usd").label("cost_usd"),
            )
            .select_from(sessions.outerjoin(run_rollups, r.session_id == s.id))
            .where(s.thread_id.is_not(None), *filter_clauses(flt, self.dialect))
            .group_by(s.thread_id)
            .order_by(last.desc(), s.thread_id)
            .limit(limit)
        )
        with self.engine.connect() as conn:
            rows = [dict(row._mapping) for row in conn.execute(query)]
        for row in rows:
            row["tokens_in"], row["tokens_out"] = int(row["tokens_in"] or 0), int(row["tokens_out"] or 0)
            row["cost_usd"] = None if row["cost_usd"] is None else float(row["cost_usd"])
        return rows

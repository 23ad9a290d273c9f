"""Storage without SQLAlchemy: the reads `agent-replay stats` makes, on the standard library's sqlite3.

Why: `stats` is a command people type and wait for (≤ 0.4 s past process start: the performance goals
in docs/architecture.md), and importing SQLAlchemy was most of it. So, for a SQLite file, `open_reader` gives an object with the
two reads `understand.headline` makes of a Store (`daily_rows` for the cells and run times,
`headline_rows` per run), running the Store's queries for an unfiltered `stats` as plain SQL text,
and handing back what they hand back (the driver's rows; JSON left as text, which headline parses).
It answers only where that is exactly the Store's answer: a file whose schema is at the migrations'
head (so these queries match its tables), no filter, and no running run that the Store's idle
expiry would mark incomplete (a write). Otherwise `open_reader` is None and the caller opens the
Store, which migrates, expires and errors as it always does. tests/test_stats_plain.py holds the
two ways' output byte-identical and this module's rows equal to the Store's.

The units the Store's rollups share with these reads live here too, so that neither side needs the other's imports.
"""

from __future__ import annotations

import math
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from .. import config
from ..vocabulary import SessionStatus, now_utc
from .migrations import head_revision

EXPERIMENT_SOURCE = "experiment"  # experiments' runs: left out of analytics unless asked for
SUMMED_BELOW = 1e5  # USD a run: past it (a stored cost may be 10¹⁵ a step) its nano-dollars could overflow a sum
# what headline_rows may group by
KEYS = ("model", "agent_id", "workflow", "environment", "agent_version", "status", "tags", "user_id", "thread_id")


def nano(cost: float | None) -> int | None:
    """USD as whole nano-dollars (half up), so sums are exact; None for no cost or one too large
    to sum this way (such a run marks its cell `runs_cost_unsummed`: analytics then reads per run)."""
    return None if cost is None or abs(cost) >= SUMMED_BELOW else math.floor(cost * 1e9 + 0.5)


def sqlite_time(value: datetime | None) -> str | None:
    """A time as SQLAlchemy's SQLite DATETIME stores it, naive UTC text to the microsecond (the
    bind processor of tables.UTCDateTime, ~10x faster than SQLAlchemy's own)."""
    if value is None:
        return None
    if value.tzinfo is UTC:  # what validation makes (events.utc): the text without its "+00:00"
        return value.isoformat(" ", "microseconds")[:26]
    if value.tzinfo is not None and value.utcoffset():
        value = value.astimezone(UTC)
    return value.replace(tzinfo=None).isoformat(" ", "microseconds")


def _rolled(name: str) -> str:
    """The rollup's number, else the source's from the session's metadata (Store.headline_rows)."""
    at = f"sessions.metadata, '$.{name}'"
    number = f"CASE WHEN json_type({at}) IN ('integer', 'real') THEN json_extract({at}) END"
    return f"CASE WHEN run_rollups.{name} IS NULL THEN {number} ELSE run_rollups.{name} END"


DAILY = {
    "cells": "SELECT * FROM daily_cells WHERE (source IS NULL OR source != ?) AND replay = 0",
    "times": "SELECT cell, duration_us, first_error_us FROM daily_members WHERE (source IS NULL OR source != ?) AND replay = 0",
}
HEADLINE = (
    "SELECT {key}, sessions.status, CAST(sessions.started_at AS TEXT), "
    "CAST(coalesce(sessions.ended_at, sessions.last_event_at) AS TEXT), "
    f"{_rolled('tokens_in')}, {_rolled('tokens_out')}, {_rolled('cost_usd')}, run_rollups.retried_steps, run_rollups.tool_calls, "
    "run_rollups.tool_failures, run_rollups.fallback_blocks, run_rollups.fallback_agent "
    "FROM sessions LEFT OUTER JOIN run_rollups ON run_rollups.session_id = sessions.id "
    "WHERE (sessions.source IS NULL OR sessions.source != ?) AND sessions.replay_of IS NULL"
)
VERSION = "SELECT version_num FROM alembic_version"
STALE = "SELECT 1 FROM sessions WHERE status = ? AND coalesce(last_event_at, started_at, created_at) < ? LIMIT 1"


class Reader:
    """An open SQLite file at the schema's head, read in one transaction (`with`)."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self) -> Reader:
        self.conn.execute("BEGIN")
        return self

    def __exit__(self, *exc) -> None:
        self.conn.close()

    def daily_rows(self, flt: None = None, *, detail: bool = False, parts=("cells", "times")) -> dict:
        """Store.daily_rows(None, detail=False, parts=parts): the per-day cells and each run's times."""
        if flt is not None or detail:
            raise ValueError("the plain reads answer an unfiltered `stats` only")
        out = {}
        for name in parts:
            cursor = self.conn.execute(DAILY[name], (EXPERIMENT_SOURCE,))
            out[name] = [d[0] for d in cursor.description], cursor.fetchall()
        return out

    def headline_rows(self, flt: None = None, key: str | None = None) -> list[tuple]:
        """Store.headline_rows(None, key): per run, what the headline sums."""
        if flt is not None or key not in (None, *KEYS):
            raise ValueError("the plain reads answer an unfiltered `stats` only")
        return self.conn.execute(HEADLINE.format(key=f"sessions.{key}" if key else "NULL"), (EXPERIMENT_SOURCE,)).fetchall()


def open_reader(url: str | None = None) -> Reader | None:
    """A Reader for the database `url` names (as `Store(url)` would resolve it), or None where
    the Store must answer: not a SQLite file (PostgreSQL, memory, URL options), no such file, a
    schema not at head, a run to expire, or anything unusual about the file."""
    url = config.database_url(url)
    path = url.removeprefix("sqlite:///")
    if path == url or any(c in path for c in "?%") or not Path(path).is_file():  # memory, options, quoting: the Store's
        return None
    head = head_revision()
    if head is None:
        return None
    try:
        conn = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=rw", uri=True, timeout=30, isolation_level=None)
    except sqlite3.Error:
        return None
    try:  # Store.expire_idle's runs, as it finds them
        stale = (SessionStatus.RUNNING.value, sqlite_time(now_utc() - config.idle_timeout()))
        ok = conn.execute(VERSION).fetchall() == [(head,)] and not conn.execute(STALE, stale).fetchall()
    except (sqlite3.Error, ValueError):  # not a database, no version table, a bad AGENT_REPLAY_IDLE_MINUTES: the Store says
        ok = False
    if not ok:
        conn.close()
        return None
    return Reader(conn)

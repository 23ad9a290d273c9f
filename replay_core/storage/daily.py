"""Per-day rollups: the analytics dashboard's sums per cell (UTC start day × model × agent ×
status × source × replay or not), so a 90-day dashboard reads a few thousand cells, not a row
per run joined to its session (tables.py: daily_members, daily_cells, daily_tools, daily_errors).

Exact by construction: `daily_members` holds each run's contribution as integers (cost in
nano-USD, durations in µs), computed from its session and per-run rollup (rollups.py) by
`contribution`, the one definition; a cell is the plain sum of its members. A member also
carries a copy of its rollup's step durations, so the latency percentiles read one table. `refresh` is called
at the end of every transaction that changes a run's session or steps (writes, ends, idle
expiry, moves, deletes, retention): it replaces the runs' contributions and recomputes every
cell a run left or joined from its members, so a late, duplicate or out-of-order step, a
changed status or a deleted run moves its contribution exactly (old cell without it, new cell
with it). `rebuild` (migration 0011_daily, `agent-replay db rebuild-rollups`) does all runs.

The key holds what the dashboard groups by and what its default filter needs; a filter on
anything else (text, tags, workflow, …) is answered from the per-run rollups instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from functools import cache

import orjson
from sqlalchemy import (
    BigInteger,
    BindParameter,
    and_,
    bindparam,
    case,
    cast,
    delete,
    func,
    insert,
    literal,
    or_,
    select,
    union_all,
)
from sqlalchemy.engine import Connection

from .plain import nano  # the cells' unit, shared with the plain reads of `stats`
from .tables import (
    DAILY_KEY,
    DAILY_SUMS,
    daily_cells,
    daily_errors,
    daily_members,
    daily_tools,
    run_breakdown,
    run_rollups,
    sessions,
)

MEMBER_COLUMNS = tuple(c.name for c in daily_members.c)
FALLBACK_FIELDS = (
    "text",
    "review",
    "ids",
    "failed_tool",
    "error_class",
    "has",
    "tag",
    "workflow",
    "environment",
    "agent_version",
    "replay_of",
    "user_id",
    "thread_id",
)  # SessionFilter fields the cells cannot answer
_CHUNK = 500
_DAY = timedelta(days=1)
REFRESH_LOCK = 7_402_113_903  # the advisory lock key of the cells' recompute (migrations use ...901, retention ...902)


def cell_of(key: Sequence) -> str:
    return hashlib.sha1(orjson.dumps(list(key))).hexdigest()


def _number(value):
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _us(end: datetime | None, start: datetime | None) -> int | None:
    return None if end is None or start is None else (end - start) // timedelta(microseconds=1)


def contribution(s, r) -> list:
    """A run's row of daily_members from its session row `s` and rollup row `r` (None: no steps);
    the numbers are analytics' (understand/analytics.py `_derive`)."""
    meta = s.metadata if isinstance(s.metadata, dict) else {}
    started = s.started_at
    key = (
        None if started is None else started.astimezone(UTC).date().isoformat(),
        s.model,
        s.agent_id,
        s.status,
        s.source,
        int(s.replay_of is not None),
    )
    meta_in, meta_out = _number(meta.get("tokens_in")), _number(meta.get("tokens_out"))
    tokens_in = r.tokens_in if r is not None and r.tokens_in is not None else int(meta_in) if meta_in is not None else 0
    tokens_out = r.tokens_out if r is not None and r.tokens_out is not None else int(meta_out) if meta_out is not None else 0
    rolled_cost = None if r is None else r.cost_usd
    cost = rolled_cost if rolled_cost is not None else _number(meta.get("cost_usd"))
    from_session = rolled_cost is None and cost is not None
    known = from_session or ((r is None or r.cost_unknown_steps == 0) and (cost is not None or tokens_in + tokens_out == 0))
    cost_nano = nano(cost)
    ended = s.ended_at or s.last_event_at
    n = (lambda name: getattr(r, name)) if r is not None else (lambda name: 0)
    sums = {
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "cost_nano": cost_nano,
        "cost_known_nano": cost_nano if known else None,
        "runs_cost_known": int(known and cost is not None),
        "runs_cost_unknown": int(not known),
        "steps": n("steps"),
        "retried_steps": n("retried_steps"),
        "runs_with_retry": int(n("retried_steps") > 0),
        "blocked_steps": n("blocked_steps"),
        "approvals": n("approvals"),
        "runs_with_intervention": int(n("blocked_steps") + n("approvals") > 0),
        "fallback_blocks": n("fallback_blocks"),
        "fallback_agent": n("fallback_agent"),
        "runs_with_fallback": int(n("fallback_agent") > 0),
        "tool_calls": n("tool_calls"),
        "tool_failures": n("tool_failures"),
        "cycles": n("cycles"),
        "loops": n("loops"),
        "runs_with_loops": int(n("loops") > 0),
        "redundant_calls": n("redundant_calls"),
        "runs_cost_unsummed": int(cost is not None and cost_nano is None),
    }
    first_error = None if r is None else r.first_error_at
    return [
        s.id,
        cell_of(key),
        *key,
        started,
        _us(ended, started) if s.status != "running" else None,
        _us(first_error, started),
        *(sums[name] for name in DAILY_SUMS),
        None if r is None else r.durations_us,
    ]


def _contributions(conn: Connection, ids: Sequence[str] | None) -> list[list]:
    statements = _statements()
    rows = (
        conn.execute(statements["all contributions"])
        if ids is None
        else conn.execute(statements["contributions"], {"ids": list(ids)})
    )
    return [contribution(row, row if row.steps is not None else None) for row in rows]


def _contribution_query():
    """Each run's session row beside its rollup row (none without steps): what `contribution` reads."""
    s = sessions.c
    return select(
        s.id,
        s.model,
        s.agent_id,
        s.status,
        s.source,
        s.replay_of,
        s.started_at,
        s.ended_at,
        s.last_event_at,
        s.metadata,
        *(c for c in run_rollups.c if c.name != "session_id"),
    ).select_from(sessions.outerjoin(run_rollups, run_rollups.c.session_id == s.id))


def _sum(column):
    return cast(func.sum(column), BigInteger)


def cell_sums(members=daily_members):
    """Each cell's sums over the member rows selected (one row per cell)."""
    m = members.c
    return select(
        m.cell, *(m[k] for k in DAILY_KEY), func.count().label("runs"), *(_sum(m[n]).label(n) for n in DAILY_SUMS)
    ).group_by(m.cell, *(m[k] for k in DAILY_KEY))


def tool_sums(where):
    """Per cell and tool of the members matching `where`: calls, failures, runs where it failed."""
    b, m = run_breakdown.c, daily_members.c
    per_run = (
        select(m.cell, b.session_id, b.tool_name, func.sum(b.tool_calls).label("calls"), func.sum(b.errored).label("failures"))
        .select_from(run_breakdown.join(daily_members, m.session_id == b.session_id))
        .where(b.tool_name.is_not(None), *where)
        .group_by(m.cell, b.session_id, b.tool_name)
        .subquery()
    )
    p = per_run.c
    return select(
        p.cell,
        p.tool_name,
        _sum(p.calls).label("calls"),
        _sum(p.failures).label("failures"),
        _sum(case((p.failures > 0, 1), else_=0)).label("runs_with_failure"),
    ).group_by(p.cell, p.tool_name)


def error_sums(where):
    """Per cell and error class of the members matching `where`: errored steps, and runs that had
    one or ended with that class."""
    b, m, s = run_breakdown.c, daily_members.c, sessions.c
    chosen = select(m.session_id, m.cell).where(*where).subquery()  # each branch reads only these runs (by index)
    classes = union_all(
        select(chosen.c.cell, b.session_id, b.error_class, b.errored)
        .join_from(chosen, run_breakdown, b.session_id == chosen.c.session_id)
        .where(b.errored > 0),
        select(chosen.c.cell, s.id, s.error_class, literal(0))
        .join_from(chosen, sessions, s.id == chosen.c.session_id)
        .where(s.error_class.is_not(None)),
    ).subquery()
    u = classes.c
    per_run = (
        select(u.cell, u.session_id, u.error_class, func.sum(u.errored).label("errors"))
        .group_by(u.cell, u.session_id, u.error_class)
        .subquery()
    )
    p = per_run.c
    return select(p.cell, p.error_class, _sum(p.errors).label("errors"), func.count().label("runs")).group_by(
        p.cell, p.error_class
    )


def _recompute(conn: Connection, cells: Sequence[str] | None) -> None:
    """Cells (all with None) from their members: deleted, then summed again."""
    if cells is None:
        for statement in _statements()["recompute all"]:
            conn.execute(statement)
        return
    for start in range(0, len(cells), _CHUNK):
        for statement in _statements()["recompute"]:
            conn.execute(statement, {"cells": list(cells[start : start + _CHUNK])})


def _summing(where: list) -> list:
    """The INSERT … SELECTs that fill the cells, tools and errors of the members matching `where`."""
    return [
        insert(table).from_select([c.name for c in query.selected_columns], query)
        for table, query in (
            (daily_cells, cell_sums().where(*where)),
            (daily_tools, tool_sums(where)),
            (daily_errors, error_sums(where)),
        )
    ]


@cache
def _statements() -> dict:
    """`refresh`'s and `rebuild`'s statements, built once (building them each time was most of
    refresh's time, and half of a rebuild of a few runs), the runs and cells bound as expanding parameters."""
    m = daily_members.c
    cells: BindParameter[str] = bindparam("cells", expanding=True)
    ids: BindParameter[str] = bindparam("ids", expanding=True)
    return {
        "recompute": [
            *(delete(table).where(table.c.cell.in_(cells)) for table in (daily_cells, daily_tools, daily_errors)),
            *_summing([m.cell.in_(cells)]),
        ],
        "cells_of": select(m.cell).where(m.session_id.in_(ids)),
        "leave": delete(daily_members).where(m.session_id.in_(ids)),
        "contributions": _contribution_query().where(sessions.c.id.in_(ids)),
        "recompute all": [*(delete(table) for table in (daily_cells, daily_tools, daily_errors)), *_summing([])],
        "all contributions": _contribution_query(),
        "forget all": delete(daily_members),
    }


def _one_at_a_time(conn: Connection) -> None:
    """On PostgreSQL, wait for any other transaction recomputing cells to commit. Two writers of runs
    that share a cell (one day, model, agent) would each delete and insert it: the second's insert
    failed on the cell's key, and an upsert instead would keep a sum that missed the first's runs.
    A transaction lock, taken by the last step of every transaction that refreshes (no row lock
    is taken after it, so it cannot deadlock): concurrent writers wait for each other over their
    tail only. SQLite has one writer at a time already."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({REFRESH_LOCK})")


def refresh(conn: Connection, session_ids: Sequence[str], insert_rows) -> None:
    """Replace these runs' contributions (a run no longer stored leaves) and recompute every
    cell they left or joined."""
    ids = sorted(set(session_ids))
    touched: set[str] = set()
    statements = _statements()
    _one_at_a_time(conn)
    for start in range(0, len(ids), _CHUNK):
        part = {"ids": ids[start : start + _CHUNK]}
        touched.update(conn.execute(statements["cells_of"], part).scalars())
        conn.execute(statements["leave"], part)
        rows = _contributions(conn, part["ids"])
        insert_rows(conn, daily_members, MEMBER_COLUMNS, rows)
        touched.update(row[1] for row in rows)
    if touched:
        _recompute(conn, sorted(touched))


def rebuild(conn: Connection, insert_rows) -> None:
    """Every run's contribution and every cell from scratch."""
    _one_at_a_time(conn)
    conn.execute(_statements()["forget all"])
    insert_rows(conn, daily_members, MEMBER_COLUMNS, _contributions(conn, None))
    _recompute(conn, None)
    for table in (daily_members, daily_cells, daily_tools, daily_errors):  # the planner's statistics: on PostgreSQL,
        conn.exec_driver_sql(f"ANALYZE {table.name}")  # without them a read of 20,000 runs took 4× as long


# ---------------------------------------------------------------------------- reading


def answers(flt) -> bool:
    """Whether the cells (and members, for part days) can answer this filter."""
    return flt is None or not any(getattr(flt, name) for name in FALLBACK_FIELDS)


def _midnight(value: datetime, up: bool) -> datetime:
    day = datetime.combine(value.astimezone(UTC).date(), datetime.min.time(), UTC)
    return day + _DAY if up and day < value else day


def where(table, flt, experiment_source: str) -> list:
    """`filters.filter_clauses`' meaning on a cells or members table's copied dimensions
    (times aside: see `period`)."""
    c = table.c
    clauses = []
    if flt is not None:
        for name in ("status", "model", "agent_id", "source"):
            if getattr(flt, name):
                clauses.append(c[name] == getattr(flt, name))
    experiments = flt is not None and (flt.experiments or flt.source == experiment_source)
    if not experiments:
        clauses.append(or_(c.source.is_(None), c.source != experiment_source))
    if not (flt is not None and flt.include_replays):
        clauses.append(or_(c.replay == 0, c.source == experiment_source) if experiments else c.replay == 0)
    return clauses


def period(flt) -> tuple[list, list]:
    """(clauses on cells, clauses on members) that split [since, until) into whole UTC days,
    read from the cells, and the part days at either end, read from the members."""
    since, until = (None, None) if flt is None else (flt.since, flt.until)
    if since is None and until is None:
        return [], [literal(False)]
    c, m = daily_cells.c, daily_members.c
    low = _midnight(since, True) if since is not None else None
    high = _midnight(until, False) if until is not None else None
    if low is not None and high is not None and high <= low:  # no whole day inside: members only
        return [literal(False)], [m.started_at >= since, m.started_at < until]
    cells = [*([c.day >= low.date().isoformat()] if low else []), *([c.day < high.date().isoformat()] if high else [])]
    edges = []
    if since is not None and low != since:
        edges.append(and_(m.started_at >= since, m.started_at < low))
    if until is not None and high != until:
        edges.append(and_(m.started_at >= high, m.started_at < until))
    return cells, [or_(*edges) if edges else literal(False)]


def reads(flt, experiment_source: str, *, detail: bool) -> dict:
    """The queries behind one dashboard: cells (whole days from daily_cells, part days summed
    from members), tools and errors per cell, and each run's times, with `detail` also its step
    durations (copied onto its member row: joining 100,000 runs' rollups was most of this read)."""
    on_cells, on_edges = period(flt)
    c, m = daily_cells.c, daily_members.c
    cell_where = [*where(daily_cells, flt, experiment_source), *on_cells]
    edge_where = [*where(daily_members, flt, experiment_source), *on_edges]
    run_where = [
        *where(daily_members, flt, experiment_source),
        *([m.started_at >= flt.since] if flt is not None and flt.since else []),
        *([m.started_at < flt.until] if flt is not None and flt.until else []),
    ]
    chosen = select(c.cell).where(*cell_where)
    t, e = daily_tools.c, daily_errors.c
    return {
        "cells": union_all(select(daily_cells).where(*cell_where), cell_sums().where(*edge_where)),
        "tools": union_all(
            select(t.cell, t.tool_name, t.calls, t.failures, t.runs_with_failure).where(t.cell.in_(chosen)), tool_sums(edge_where)
        ),
        "errors": union_all(select(e.cell, e.error_class, e.errors, e.runs).where(e.cell.in_(chosen)), error_sums(edge_where)),
        "times": select(m.cell, m.duration_us, m.first_error_us, *([m.durations_us] if detail else [])).where(*run_where),
    }

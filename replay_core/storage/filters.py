"""Which runs a list, an export or an analytics read covers: `SessionFilter`, and the SQL
conditions on `sessions` it stands for (the per-day rollups repeat its meaning in daily.where)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Text, cast, exists, or_

from .engine import json_dumps
from .plain import EXPERIMENT_SOURCE  # experiments' replay sessions: kept out of lists and analytics unless asked for
from .search_reads import text_clause
from .tables import annotations as annotations_table
from .tables import run_breakdown, run_rollups, sessions
from .widths import RUN_IDS, cut_apart

# SessionFilter.has: runs with a retried step, an errored step, a blocked action or approval,
# a fallback block the agent took over, a loop (same tool and arguments 3+ times, retries aside).
HAS_FLAGS = ("retry", "error", "intervention", "fallback", "loop")
# the fields that match one column of `sessions` exactly
EQUALS = (
    "status",
    "model",
    "agent_id",
    "workflow",
    "environment",
    "agent_version",
    "source",
    "replay_of",
    "user_id",
    "thread_id",
)


@dataclass(frozen=True)
class SessionFilter:
    """The filters shared by the runs list, the CLI and analytics."""

    status: str | None = None
    model: str | None = None
    agent_id: str | None = None
    workflow: str | None = None
    environment: str | None = None
    agent_version: str | None = None
    user_id: str | None = None
    thread_id: str | None = None
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


def filter_clauses(flt: SessionFilter | None, dialect: str) -> list:
    """The conditions on `sessions` (joined to nothing, or to a per-run table) that `flt` stands for."""
    flt = flt or SessionFilter()
    clauses = []
    if not flt.experiments and flt.source != EXPERIMENT_SOURCE:
        clauses.append(or_(sessions.c.source.is_(None), sessions.c.source != EXPERIMENT_SOURCE))
    if not (flt.include_replays or flt.replay_of or flt.ids is not None):
        # originals only: a what-if replay is not another run of the agent (experiments' runs have their own switch)
        original = sessions.c.replay_of.is_(None)
        clauses.append(
            or_(original, sessions.c.source == EXPERIMENT_SOURCE)
            if flt.experiments or flt.source == EXPERIMENT_SOURCE
            else original
        )
    for name in EQUALS:
        value = getattr(flt, name)
        if value:  # a user or thread id too long for its column is kept cut apart: the whole id finds its runs
            clauses.append(sessions.c[name] == (cut_apart(value, sessions.c[name]) if name in RUN_IDS else value))
    if flt.since:
        clauses.append(sessions.c.started_at >= flt.since)
    if flt.until:
        clauses.append(sessions.c.started_at < flt.until)
    if flt.ids is not None:
        clauses.append(sessions.c.id.in_(flt.ids))
    if flt.tag:
        clauses.append(cast(sessions.c.tags, Text).like(f"%{json_dumps(flt.tag)}%"))
    if flt.text:
        clauses.append(text_clause(flt.text, dialect))
    if flt.failed_tool:
        clauses.append(_has_breakdown(run_breakdown.c.tool_name == flt.failed_tool))
    if flt.error_class:
        clauses.append(
            or_(sessions.c.error_class == flt.error_class, _has_breakdown(run_breakdown.c.error_class == flt.error_class))
        )
    if flt.has:
        clauses.append(_has(flt.has))
    if flt.review == "unreviewed":
        clauses.append(~exists().where(annotations_table.c.session_id == sessions.c.id))
    elif flt.review:
        clauses.append(
            exists().where(annotations_table.c.session_id == sessions.c.id).where(annotations_table.c.label == flt.review)
        )
    return clauses


def _has(flag: str):
    """Runs with a retried or errored step, a blocked action or approval, a fallback the agent
    took over, or a loop: read from the rollups (storage/rollups.py has the definitions)."""
    r = run_rollups.c
    conditions = {
        "retry": r.retried_steps > 0,
        "error": r.errored_steps > 0,
        "intervention": r.blocked_steps + r.approvals > 0,
        "fallback": r.fallback_agent > 0,
        "loop": r.loops > 0,
    }
    if flag not in conditions:
        raise ValueError(f"has: expected one of {', '.join(HAS_FLAGS)}, got {flag!r}")
    return exists().where(r.session_id == sessions.c.id, conditions[flag]).correlate(sessions)  # also under a read of run_rollups


def _has_breakdown(condition):
    """Runs with an errored step matching `condition` (a tool, an error class)."""
    b = run_breakdown.c
    return (
        exists().where(b.session_id == sessions.c.id, b.errored > 0, condition).correlate(sessions)
    )  # also under a read of run_breakdown

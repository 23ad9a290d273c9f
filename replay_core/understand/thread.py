"""A conversation: the runs that share a thread_id, oldest first, each with its totals, and the
thread's totals — what the thread page, `agent-replay thread` and `GET /api/v1/threads/{id}` show.

A run's tokens and cost are the Store's run totals (its steps', else the source's), so a thread
adds up to what the runs list shows for the same runs. What-if replays and experiments' runs are
not turns of the conversation and are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..storage.store import SessionFilter, Store

MAX_RUNS = 1000  # a conversation's latest runs at most; `more` says when there were others
RUN_KEYS = (
    "id",
    "name",
    "status",
    "outcome",
    "error_class",
    "user_id",
    "agent_id",
    "model",
    "started_at",
    "ended_at",
    "duration_s",
    "steps",
    "errors",
    "tokens_in",
    "tokens_out",
    "cost_usd",
)


@dataclass(frozen=True)
class Thread:
    thread_id: str
    runs: list[dict[str, Any]]  # oldest first, each RUN_KEYS
    more: bool  # older runs than these exist

    @property
    def users(self) -> list[str]:
        return sorted({r["user_id"] for r in self.runs if r["user_id"]})

    def totals(self) -> dict[str, Any]:
        """Runs by how they ended, steps, errors, tokens, known cost (None when no run's is known, with the
        runs whose cost is unknown counted) and the span from the first start to the last end."""
        runs = self.runs
        costs = [r["cost_usd"] for r in runs if r["cost_usd"] is not None]
        starts = [r["started_at"] for r in runs if r["started_at"] is not None]
        ends = [r["ended_at"] or r["started_at"] for r in runs if (r["ended_at"] or r["started_at"]) is not None]
        return {
            "runs": len(runs),
            **{s: sum(r["status"] == s for r in runs) for s in ("succeeded", "failed", "running", "incomplete", "unknown")},
            "steps": sum(r["steps"] or 0 for r in runs),
            "errors": sum(r["errors"] or 0 for r in runs),
            "tokens_in": sum(r["tokens_in"] for r in runs),
            "tokens_out": sum(r["tokens_out"] for r in runs),
            "cost_usd": sum(costs) if costs else None,
            "runs_cost_unknown": len(runs) - len(costs),
            "first_started_at": min(starts, default=None),
            "last_ended_at": max(ends, default=None),
            "span_s": _span(min(starts, default=None), max(ends, default=None)),
        }

    def to_json(self) -> dict[str, Any]:
        def plain(value: Any) -> Any:
            return value.isoformat() if isinstance(value, datetime) else value

        return {
            "thread_id": self.thread_id,
            "users": self.users,
            "more": self.more,
            "totals": {k: plain(v) for k, v in self.totals().items()},
            "runs": [{k: plain(v) for k, v in r.items()} for r in self.runs],
        }


def _span(start: datetime | None, end: datetime | None) -> float | None:
    return (end - start).total_seconds() if start is not None and end is not None else None


def open_thread(store: Store, thread_id: str, *, limit: int = MAX_RUNS) -> Thread | None:
    """The conversation `thread_id` names, None when no run carries it."""
    rows = store.list_sessions(SessionFilter(thread_id=thread_id), limit=limit + 1)
    if not rows:
        return None
    runs = [{k: r.get(k) for k in RUN_KEYS} for r in rows[:limit]]
    runs.reverse()  # the list is newest first; a conversation reads oldest first
    return Thread(thread_id, runs, more=len(rows) > limit)


def recent_threads(store: Store, flt: SessionFilter | None = None, *, limit: int = 100) -> list[dict[str, Any]]:
    """Conversations, the latest first, with their runs, failures, users and totals (Store.thread_rows)."""
    return store.thread_rows(flt, limit=limit)

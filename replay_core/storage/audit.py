"""The audit log's table: a line per guarded action, written in the transaction of what it
records (`audit_line`) or on its own, and read back newest first (replay_core.team.audit)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import insert, select
from sqlalchemy.engine import Connection

from ..vocabulary import now_utc
from .actor import Actor, PermissionDenied, require
from .bulk import inserted_id
from .engine import StoreBase
from .tables import audit_log
from .widths import holder


def audit_line(
    conn: Connection,
    actor: Actor,
    action: str,
    *,
    outcome: str = "ok",
    target: str | None = None,
    detail: dict | None = None,
    at: datetime | None = None,
) -> int:
    """One line of the audit log in the caller's transaction; returns its id."""
    res = conn.execute(
        insert(audit_log).values(
            at=at or now_utc(),
            who=holder(actor.who),
            role=actor.role[:20],
            origin=(actor.origin or "?")[:200],
            action=action[:50],
            outcome=outcome[:20],
            target=target,
            detail=detail,
        )
    )
    return inserted_id(res)


class Audited(StoreBase):
    """Permission checks whose refusals are logged, and the audit log's own reads and writes."""

    def authorize(self, actor: Actor | None, action: str, target: str | None = None) -> Actor:
        """The actor (the local user when None) if its role allows `action`; else the refusal
        goes in the audit log and PermissionDenied is raised. Every guarded function starts here."""
        try:
            return require(actor, action)
        except PermissionDenied as exc:
            self.record_audit(exc.actor, action, outcome="denied", target=target)
            raise

    def record_audit(
        self,
        actor: Actor,
        action: str,
        *,
        outcome: str = "ok",
        target: str | None = None,
        detail: dict | None = None,
        at: datetime | None = None,
    ) -> int:
        """One line of the audit log, in its own transaction."""
        with self._write_lock, self.engine.begin() as conn:
            return audit_line(conn, actor, action, outcome=outcome, target=target, detail=detail, at=at)

    def audit_entries(
        self,
        *,
        limit: int = 200,
        since: datetime | None = None,
        actions: Sequence[str] = (),
        origin: str | None = None,
        outcomes: Sequence[str] = (),
    ) -> list[dict]:
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

"""Monitors and their alerts (the tables under replay_core.monitors): a rule, when it was last judged
and what it found; an alert opened when a rule fires and resolved once when it stops. Changes made
by people (adding, muting, acknowledging) go in the audit log in the same transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, insert, select, update

from ..vocabulary import now_utc
from .actor import Actor
from .audit import Audited, audit_line
from .bulk import inserted_id
from .filters import SessionFilter, filter_clauses
from .tables import monitor_alerts, monitors, sessions


class Monitors(Audited):
    """Monitor rules and alerts."""

    def create_monitor(
        self, name: str, rule: dict, *, webhook_url: str | None, webhook_secret_env: str | None, actor: Actor
    ) -> int:
        with self._write_lock, self._write_transaction() as conn:
            monitor_id = inserted_id(
                conn.execute(
                    insert(monitors).values(
                        name=name,
                        rule=rule,
                        webhook_url=webhook_url,
                        webhook_secret_env=webhook_secret_env,
                        created_at=now_utc(),
                    )
                )
            )
            audit_line(conn, actor, "manage_monitors", target=f"monitor {monitor_id}", detail={"op": "add", "name": name})
        return monitor_id

    def list_monitors(self) -> list[dict]:
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(select(monitors).order_by(monitors.c.id)).mappings()]

    def get_monitor(self, key: int | str) -> dict | None:
        """By id, or by name."""
        column = monitors.c.id if isinstance(key, int) else monitors.c.name
        with self.engine.connect() as conn:
            row = conn.execute(select(monitors).where(column == key)).mappings().first()
        return dict(row) if row else None

    def delete_monitor(self, monitor_id: int, *, actor: Actor) -> bool:
        with self._write_lock, self._write_transaction() as conn:
            gone = conn.execute(delete(monitors).where(monitors.c.id == monitor_id)).rowcount
            if gone:
                audit_line(conn, actor, "manage_monitors", target=f"monitor {monitor_id}", detail={"op": "delete"})
        return bool(gone)

    def mute_monitor(self, monitor_id: int, until: datetime | None, *, actor: Actor) -> None:
        with self._write_lock, self._write_transaction() as conn:
            conn.execute(update(monitors).where(monitors.c.id == monitor_id).values(muted_until=until))
            detail = {"op": "mute", "until": until.isoformat() if until else None}
            audit_line(conn, actor, "manage_monitors", target=f"monitor {monitor_id}", detail=detail)

    def record_check(self, monitor_id: int, result: dict, at: datetime) -> None:
        with self._write_lock, self._write_transaction() as conn:
            conn.execute(update(monitors).where(monitors.c.id == monitor_id).values(last_checked_at=at, last_result=result))

    def first_seen(self, dimension: str) -> list[tuple[str, datetime]]:
        """Each value of a run column (agent_version, model) with the start of its first run, oldest
        first; replays and experiments' runs left out, as everywhere a run is counted."""
        column, started = sessions.c[dimension], func.min(sessions.c.started_at)
        query = (
            select(column, started)
            .where(column.is_not(None), sessions.c.started_at.is_not(None), *filter_clauses(SessionFilter(), self.dialect))
            .group_by(column)
            .order_by(started, column)
        )
        with self.engine.connect() as conn:
            return [(value, at) for value, at in conn.execute(query)]

    def open_alert(self, monitor_id: int) -> dict | None:
        """The monitor's alert that has not resolved, if any."""
        a = monitor_alerts.c
        query = select(monitor_alerts).where(a.monitor_id == monitor_id, a.resolved_at.is_(None)).order_by(a.id.desc())
        with self.engine.connect() as conn:
            row = conn.execute(query).mappings().first()
        return dict(row) if row else None

    def add_alert(self, monitor_id: int, figure: dict, at: datetime) -> int:
        with self._write_lock, self._write_transaction() as conn:
            return inserted_id(conn.execute(insert(monitor_alerts).values(monitor_id=monitor_id, opened_at=at, figure=figure)))

    def resolve_alert(self, alert_id: int, at: datetime) -> bool:
        """True for the one call that resolves it (an alert resolves once)."""
        a = monitor_alerts.c
        with self._write_lock, self._write_transaction() as conn:
            done = conn.execute(
                update(monitor_alerts).where(a.id == alert_id, a.resolved_at.is_(None)).values(resolved_at=at)
            ).rowcount
        return done == 1

    def note_delivery(self, alert_id: int, event: str, attempts: list[dict]) -> None:
        a = monitor_alerts.c
        with self._write_lock, self._write_transaction() as conn:
            found = conn.execute(select(a.delivered).where(a.id == alert_id)).scalar()
            conn.execute(update(monitor_alerts).where(a.id == alert_id).values(delivered={**(found or {}), event: attempts}))

    def ack_alert(self, alert_id: int, *, actor: Actor) -> bool:
        a = monitor_alerts.c
        with self._write_lock, self._write_transaction() as conn:
            done = conn.execute(
                update(monitor_alerts).where(a.id == alert_id).values(acked_by=actor.who[:200], acked_at=now_utc())
            ).rowcount
            if done:
                audit_line(conn, actor, "manage_monitors", target=f"alert {alert_id}", detail={"op": "ack"})
        return bool(done)

    def alerts(self, monitor_id: int | None = None, *, limit: int = 100) -> list[dict[str, Any]]:
        """Newest first, with the monitor's name."""
        a = monitor_alerts.c
        query = (
            select(monitor_alerts, monitors.c.name.label("monitor"))
            .join(monitors, monitors.c.id == a.monitor_id)
            .order_by(a.id.desc())
            .limit(limit)
        )
        if monitor_id is not None:
            query = query.where(a.monitor_id == monitor_id)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(query).mappings()]

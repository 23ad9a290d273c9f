"""Monitors and their alerts (the tables under replay_core.monitors): a rule, when it was last judged
and what it found; an alert opened when a rule fires and resolved once when it stops. The evaluation
loop's rows: experiment schedules and their runs, and review queues feeding a dataset. Changes made
by people (adding, muting, acknowledging) go in the audit log in the same transaction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Text, and_, bindparam, case, cast, delete, func, insert, literal, select, update

from ..vocabulary import now_utc
from .actor import Actor
from .audit import Audited, audit_line
from .bulk import inserted_id
from .filters import SessionFilter, filter_clauses
from .tables import experiment_schedules, monitor_alerts, monitors, queue_feeds, run_rollups, schedule_runs, sessions
from .widths import holder

METADATA_DIMENSIONS = ("prompt_version",)  # release dimensions read from a run's metadata


def _dimension(name: str):
    """A run column, or a text value of its metadata."""
    return sessions.c["metadata"][name].as_string() if name in METADATA_DIMENSIONS else sessions.c[name]


@dataclass(frozen=True)
class CheckWrite:
    """One monitor's check to store: its result, and the alert it opens (`open_figure`) or resolves (`resolve`)."""

    monitor_id: int
    result: dict
    at: datetime
    open_figure: dict | None = None
    resolve: dict | None = None
    alert_id: int | None = None


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

    def set_monitor_webhook(self, monitor_id: int, url: str | None, secret_env: str | None, *, actor: Actor) -> None:
        with self._write_lock, self._write_transaction() as conn:
            values = {"webhook_url": url, "webhook_secret_env": secret_env}
            conn.execute(update(monitors).where(monitors.c.id == monitor_id).values(**values))
            audit_line(conn, actor, "manage_monitors", target=f"monitor {monitor_id}", detail={"op": "webhook", "set": bool(url)})

    def record_check(self, monitor_id: int, result: dict, at: datetime) -> None:
        self.record_checks([CheckWrite(monitor_id, result, at)])

    def record_checks(self, checks: list[CheckWrite]) -> list[CheckWrite]:
        """A pass's check results and the alerts they open or resolve, in one short write transaction (judged
        beforehand, outside it). Returns them with `alert_id` set for each opened alert and `resolve` cleared
        where another writer resolved the alert first (an alert resolves once)."""
        a = monitor_alerts.c
        done = []
        results = [{"checked": c.monitor_id, "at": c.at, "result": c.result} for c in checks]
        stored = update(monitors).where(monitors.c.id == bindparam("checked"))
        with self._write_lock, self._write_transaction() as conn:
            if results:  # one statement for the pass's results, run for each
                conn.execute(stored.values(last_checked_at=bindparam("at"), last_result=bindparam("result")), results)
            for c in checks:
                if c.open_figure is not None:
                    row = insert(monitor_alerts).values(monitor_id=c.monitor_id, opened_at=c.at, figure=c.open_figure)
                    c = replace(c, alert_id=inserted_id(conn.execute(row)))
                elif c.resolve is not None:
                    resolving = update(monitor_alerts).where(a.id == c.resolve["id"], a.resolved_at.is_(None))
                    if conn.execute(resolving.values(resolved_at=c.at)).rowcount != 1:
                        c = replace(c, resolve=None)
                done.append(c)
        return done

    def window_runs(
        self,
        bounds: Sequence[datetime],
        dimensions: Sequence[str],
        error_classes: Sequence[str] = (),
        *,
        rollups: bool = True,
        times: bool = False,
    ) -> Sequence[tuple]:
        """What the monitors judge of each run started in [bounds[0], bounds[-1]) (replays and experiments'
        runs left out, as wherever runs are counted), in one narrow read: the index of the span between two
        `bounds` it started in, its status, its `dimensions` (run columns), 1 or 0 for each of
        `error_classes` (its own class or an errored step's, as the runs filter says), with `rollups` its
        rollup's tool calls, tool failures, cost, unknown-cost steps and tokens in and out (None: no steps),
        with `times` its start and end as text. The driver's rows as they come: a pass reads every run of
        its widest window, and SQLAlchemy's row objects would be most of its cost."""
        s, r = sessions.c, run_rollups.c
        spans = [(s.started_at >= at, i) for i, at in reversed(list(enumerate(bounds[:-1]))) if i]
        columns: list[Any] = [case(*spans, else_=0) if spans else literal(0), s.status, *(s[d] for d in dimensions)]
        for error_class in error_classes:
            alone = SessionFilter(error_class=error_class, experiments=True, include_replays=True)  # its clause only
            columns.append(case((and_(*filter_clauses(alone, self.dialect)), 1), else_=0))
        query = select(*columns)
        if rollups:
            query = query.add_columns(
                r.tool_calls, r.tool_failures, r.cost_usd, r.cost_unknown_steps, r.tokens_in, r.tokens_out
            ).select_from(sessions.outerjoin(run_rollups, r.session_id == s.id))
        if times:
            query = query.add_columns(cast(s.started_at, Text), cast(func.coalesce(s.ended_at, s.last_event_at), Text))
        window = SessionFilter(since=bounds[0], until=bounds[-1])
        with self.engine.connect() as conn:
            return conn.execute(query.where(*filter_clauses(window, self.dialect))).cursor.fetchall()

    def first_seen(self, dimension: str) -> list[tuple[str, datetime]]:
        """Each value of a run column (agent_version, model) or of its metadata (prompt_version) with the start
        of its first run, oldest first; replays and experiments' runs left out, as everywhere a run is counted."""
        column, started = _dimension(dimension), func.min(sessions.c.started_at)
        query = (
            select(column, started)
            .where(column.is_not(None), sessions.c.started_at.is_not(None), *filter_clauses(SessionFilter(), self.dialect))
            .group_by(column)
            .order_by(started, column)
        )
        with self.engine.connect() as conn:
            return [(value, at) for value, at in conn.execute(query)]

    def runs_with(self, dimension: str, value: str, flt: SessionFilter | None = None, *, newest: int | None = None) -> list[str]:
        """The ids of the runs `flt` picks whose `dimension` (a column, or a metadata key as prompt_version) is
        `value`; with `newest`, only that many, the newest first."""
        query = select(sessions.c.id).where(_dimension(dimension) == value, *filter_clauses(flt, self.dialect))
        if newest is not None:
            query = query.order_by(sessions.c.started_at.desc(), sessions.c.id).limit(newest)
        with self.engine.connect() as conn:
            return list(conn.scalars(query))

    def open_alert(self, monitor_id: int) -> dict | None:
        """The monitor's alert that has not resolved, if any."""
        a = monitor_alerts.c
        query = select(monitor_alerts).where(a.monitor_id == monitor_id, a.resolved_at.is_(None)).order_by(a.id.desc())
        with self.engine.connect() as conn:
            row = conn.execute(query).mappings().first()
        return dict(row) if row else None

    def open_alerts(self) -> dict[int, dict]:
        """Each monitor's alert that has not resolved (the newest, as `open_alert`), in one read."""
        a = monitor_alerts.c
        query = select(monitor_alerts).where(a.resolved_at.is_(None)).order_by(a.id)
        with self.engine.connect() as conn:
            return {row["monitor_id"]: dict(row) for row in conn.execute(query).mappings()}

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

    def set_alert_patterns(self, alert_id: int, patterns: list[str]) -> None:
        """Keep the failure patterns named for an alert in its figure (named once, after it opened)."""
        a = monitor_alerts.c
        with self._write_lock, self._write_transaction() as conn:
            figure = conn.execute(select(a.figure).where(a.id == alert_id)).scalar()
            if figure is not None:
                conn.execute(update(monitor_alerts).where(a.id == alert_id).values(figure={**figure, "patterns": patterns}))

    def note_delivery(self, alert_id: int, event: str, attempts: list[dict]) -> None:
        a = monitor_alerts.c
        with self._write_lock, self._write_transaction() as conn:
            found = conn.execute(select(a.delivered).where(a.id == alert_id)).scalar()
            conn.execute(update(monitor_alerts).where(a.id == alert_id).values(delivered={**(found or {}), event: attempts}))

    def ack_alert(self, alert_id: int, *, actor: Actor) -> bool:
        a = monitor_alerts.c
        with self._write_lock, self._write_transaction() as conn:
            done = conn.execute(
                update(monitor_alerts).where(a.id == alert_id).values(acked_by=holder(actor.who), acked_at=now_utc())
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

    # ------------------------------------------------------------ the evaluation loop

    def create_schedule(
        self, name: str, dataset: str, trigger: str, settings: dict, models_seen: list[str], *, actor: Actor
    ) -> int:
        with self._write_lock, self._write_transaction() as conn:
            schedule_id = inserted_id(
                conn.execute(
                    insert(experiment_schedules).values(
                        name=name,
                        dataset=dataset,
                        trigger=trigger,
                        settings=settings,
                        models_seen=models_seen,
                        created_by=holder(actor.who),
                        created_at=now_utc(),
                    )
                )
            )
            detail = {"op": "schedule", "name": name, "dataset": dataset, "trigger": trigger}
            audit_line(conn, actor, "replay", target=f"schedule {schedule_id}", detail=detail)
        return schedule_id

    def list_schedules(self) -> list[dict]:
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(select(experiment_schedules).order_by(experiment_schedules.c.id)).mappings()]

    def get_schedule(self, key: int | str) -> dict | None:
        """By id, or by name."""
        column = experiment_schedules.c.id if isinstance(key, int) else experiment_schedules.c.name
        with self.engine.connect() as conn:
            row = conn.execute(select(experiment_schedules).where(column == key)).mappings().first()
        return dict(row) if row else None

    def set_models_seen(self, schedule_id: int, models: list[str]) -> None:
        with self._write_lock, self._write_transaction() as conn:
            conn.execute(update(experiment_schedules).where(experiment_schedules.c.id == schedule_id).values(models_seen=models))

    def start_schedule_run(
        self,
        schedule_id: int,
        reason: str,
        dataset_version: int | None,
        at: datetime,
        *,
        model: str | None = None,
        experiment_id: str | None = None,
    ) -> int:
        """A scheduled run begins: its result says `running` (with the model it runs, to run it again if cut)."""
        values = {
            "schedule_id": schedule_id,
            "reason": reason[:300],
            "dataset_version": dataset_version,
            "started_at": at,
            "experiment_id": experiment_id,
            "result": {"status": "running"} | ({"model": model} if model else {}),
        }
        with self._write_lock, self._write_transaction() as conn:
            return inserted_id(conn.execute(insert(schedule_runs).values(**values)))

    def interrupt_schedule_run(self, run_id: int, result: dict, at: datetime) -> bool:
        """End a scheduled run its process left running (it stopped); False if it ended meanwhile."""
        r = schedule_runs.c
        with self._write_lock, self._write_transaction() as conn:
            ended = update(schedule_runs).where(r.id == run_id, r.finished_at.is_(None)).values(result=result, finished_at=at)
            return conn.execute(ended).rowcount == 1

    def finish_schedule_run(self, run_id: int, *, experiment_id: str | None, result: dict) -> None:
        with self._write_lock, self._write_transaction() as conn:
            conn.execute(
                update(schedule_runs)
                .where(schedule_runs.c.id == run_id)
                .values(experiment_id=experiment_id, result=result, finished_at=now_utc())
            )

    def set_schedule_run_experiment(self, run_id: int, experiment_id: str) -> None:
        with self._write_lock, self._write_transaction() as conn:
            conn.execute(update(schedule_runs).where(schedule_runs.c.id == run_id).values(experiment_id=experiment_id))

    def schedule_runs(self, schedule_id: int, *, limit: int = 100) -> list[dict]:
        """Newest first."""
        r = schedule_runs.c
        query = select(schedule_runs).where(r.schedule_id == schedule_id).order_by(r.id.desc()).limit(limit)
        with self.engine.connect() as conn:
            return [dict(row) for row in conn.execute(query).mappings()]

    def set_queue_feed(self, queue_id: int, dataset: str | None, verdicts: list[str], *, actor: Actor) -> None:
        """Feed the queue's bad verdicts to `dataset` (None: stop feeding)."""
        with self._write_lock, self._write_transaction() as conn:
            conn.execute(delete(queue_feeds).where(queue_feeds.c.queue_id == queue_id))
            if dataset is not None:
                conn.execute(
                    insert(queue_feeds).values(
                        queue_id=queue_id, dataset=dataset, verdicts=verdicts, created_by=holder(actor.who), created_at=now_utc()
                    )
                )
            detail = {"op": "feed", "dataset": dataset, "verdicts": verdicts}
            audit_line(conn, actor, "ingest", target=f"queue {queue_id}", detail=detail)

    def queue_feeds(self, queue_id: int | None = None) -> list[dict]:
        query = select(queue_feeds).order_by(queue_feeds.c.queue_id)
        if queue_id is not None:
            query = query.where(queue_feeds.c.queue_id == queue_id)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(query).mappings()]

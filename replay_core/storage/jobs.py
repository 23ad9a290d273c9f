"""Periodic jobs across replicas: which process runs a job this time (`claim_job`), and
PostgreSQL's advisory locks for work only one replica may do at once."""

from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime, timedelta

from sqlalchemy import text, update

from ..vocabulary import now_utc
from .bulk import dialect_module
from .engine import StoreBase
from .tables import job_runs


class Jobs(StoreBase):
    """Advisory locks and job claims."""

    @contextmanager
    def advisory_lock(self, key: int):
        """`with store.advisory_lock(k) as held:` PostgreSQL's session advisory lock, tried (never waited
        for), released at the end; True on SQLite, whose write lock serialises writers already."""
        if self.dialect != "postgresql":
            yield True
            return
        with self.engine.connect() as conn:
            held = conn.scalar(text("SELECT pg_try_advisory_lock(:k)"), {"k": key})
            conn.commit()
            try:
                yield bool(held)
            finally:
                if held:
                    conn.scalar(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
                    conn.commit()

    def claim_job(self, name: str, every: timedelta, *, now: datetime | None = None) -> bool:
        """True for exactly one caller per `every` among all processes on this database: the
        caller that moves `job_runs.last_run_at` forward runs the job (retention sweep)."""
        return name in self.claim_jobs([name], every, now=now)

    def claim_jobs(self, names: list[str], every: timedelta, *, now: datetime | None = None) -> set[str]:
        """The names among `names` this caller claims (as `claim_job`), in one write transaction: a pass over
        many monitors holds SQLite's write lock once, not once per monitor."""
        now = now or now_utc()
        if not names:
            return set()
        with self._write_lock, self._write_transaction() as conn:
            dialect = dialect_module(self.dialect)
            conn.execute(
                dialect.insert(job_runs)
                .values([{"name": name, "last_run_at": now - every * 2} for name in names])
                .on_conflict_do_nothing(index_elements=["name"])
            )
            due = job_runs.c.name.in_(names), job_runs.c.last_run_at <= now - every * 0.9
            return set(conn.scalars(update(job_runs).where(*due).values(last_run_at=now).returning(job_runs.c.name)))

"""Datasets (versioned lists of runs with what each should end in) and experiments (a dataset
replayed under several variants): their rows, and the claim that runs each case × variant once."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.engine import Connection

from ..vocabulary import now_utc
from .bulk import dialect_module, inserted_id
from .engine import StoreBase
from .tables import dataset_cases, datasets, experiment_runs, experiments


class Datasets(StoreBase):
    """Datasets and their cases; experiments and their case × variant runs."""

    def create_dataset(
        self,
        name: str,
        cases: Sequence[tuple[str, str | None]],
        *,
        match: str = "equals",
        description: str | None = None,
        made_from: Any = None,
    ) -> dict:
        """A new dataset (version 1) of (session id, expected outcome or None) cases; ValueError if the name is taken."""
        now = now_utc()
        with self._write_lock, self.engine.begin() as conn:
            if conn.scalar(select(datasets.c.id).where(datasets.c.name == name)) is not None:
                raise ValueError(f"dataset {name!r} exists already (add runs to it with `dataset add`)")
            inserted = conn.execute(
                insert(datasets).values(
                    name=name,
                    version=1,
                    description=description,
                    match=match,
                    made_from=[made_from],
                    created_at=now,
                    updated_at=now,
                )
            )
            dataset_id = inserted_id(inserted)
            self._insert_cases(conn, dataset_id, 1, cases, now)
        return self._written_dataset(dataset_id)

    def _insert_cases(self, conn: Connection, dataset_id: int, version: int, cases, now) -> int:
        have = set(conn.scalars(select(dataset_cases.c.session_id).where(dataset_cases.c.dataset_id == dataset_id)))
        rows, seen = [], set(have)
        for sid, expected in cases:
            if sid not in seen:
                seen.add(sid)
                rows.append(
                    {"dataset_id": dataset_id, "session_id": sid, "expected": expected, "version": version, "created_at": now}
                )
        if rows:
            conn.execute(insert(dataset_cases), rows)
        return len(rows)

    def add_dataset_cases(self, name: str, cases: Sequence[tuple[str, str | None]], *, made_from: Any = None) -> dict:
        """Add cases to a dataset as its next version (cases it holds already are skipped); KeyError if unknown."""
        now = now_utc()
        with self._write_lock, self.engine.begin() as conn:
            row = conn.execute(select(datasets).where(datasets.c.name == name)).first()
            if row is None:
                raise KeyError(name)
            version = row.version + 1
            added = self._insert_cases(conn, row.id, version, cases, now)
            if added:
                conn.execute(
                    update(datasets)
                    .where(datasets.c.id == row.id)
                    .values(version=version, updated_at=now, made_from=[*(row.made_from or []), made_from])
                )
        out = self._written_dataset(row.id)
        out["added"] = added
        return out

    def _written_dataset(self, dataset_id: int) -> dict:
        """The dataset a write just made or changed, by its id (its name may be all digits)."""
        out = self.get_dataset(dataset_id)
        assert out is not None, "datasets are never deleted"
        return out

    def get_dataset(self, name_or_id: str | int) -> dict | None:
        """A dataset with its case count at its current version, by name, or by id (an int, or digits that
        name no dataset)."""
        with self.engine.connect() as conn:
            row = None
            if not isinstance(name_or_id, int):
                row = conn.execute(select(datasets).where(datasets.c.name == str(name_or_id))).first()
            text = str(name_or_id)
            if row is None and text.isascii() and text.isdigit() and int(text) <= 2_147_483_647:
                row = conn.execute(select(datasets).where(datasets.c.id == int(text))).first()
            if row is None:
                return None
            out = dict(row._mapping)
            out["cases"] = conn.scalar(select(func.count()).where(dataset_cases.c.dataset_id == row.id))
        return out

    def list_datasets(self) -> list[dict]:
        counts = select(dataset_cases.c.dataset_id, func.count().label("cases")).group_by(dataset_cases.c.dataset_id).subquery()
        query = (
            select(datasets, func.coalesce(counts.c.cases, 0).label("cases"))
            .outerjoin(counts, counts.c.dataset_id == datasets.c.id)
            .order_by(datasets.c.name)
        )
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def dataset_cases(self, dataset_id: int, *, version: int | None = None) -> list[dict]:
        """Cases in the order they were added (at `version`: those it held then)."""
        query = select(dataset_cases).where(dataset_cases.c.dataset_id == dataset_id)
        if version is not None:
            query = query.where(dataset_cases.c.version <= version)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query.order_by(dataset_cases.c.id))]

    def create_experiment(self, experiment_id: str, dataset_id: int, dataset_version: int, settings: dict) -> None:
        with self._write_lock, self.engine.begin() as conn:
            conn.execute(
                insert(experiments).values(
                    id=experiment_id,
                    dataset_id=dataset_id,
                    dataset_version=dataset_version,
                    settings=settings,
                    status="running",
                    created_at=now_utc(),
                )
            )

    def get_experiment(self, experiment_id: str) -> dict | None:
        query = select(experiments, datasets.c.name.label("dataset")).join(datasets, datasets.c.id == experiments.c.dataset_id)
        with self.engine.connect() as conn:
            row = conn.execute(query.where(experiments.c.id == experiment_id)).first()
            return dict(row._mapping) if row else None

    def list_experiments(self, *, dataset_id: int | None = None, limit: int = 100) -> list[dict]:
        done = (
            select(experiment_runs.c.experiment_id, func.count().label("runs_done"))
            .where(experiment_runs.c.state == "done")
            .group_by(experiment_runs.c.experiment_id)
            .subquery()
        )
        query = (
            select(experiments, datasets.c.name.label("dataset"), func.coalesce(done.c.runs_done, 0).label("runs_done"))
            .join(datasets, datasets.c.id == experiments.c.dataset_id)
            .outerjoin(done, done.c.experiment_id == experiments.c.id)
        )
        if dataset_id is not None:
            query = query.where(experiments.c.dataset_id == dataset_id)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query.order_by(experiments.c.created_at.desc()).limit(limit))]

    def set_experiment_status(
        self, experiment_id: str, status: str, message: str | None = None, *, finished: bool = True
    ) -> None:
        with self._write_lock, self.engine.begin() as conn:
            conn.execute(
                update(experiments)
                .where(experiments.c.id == experiment_id)
                .values(status=status, message=message, finished_at=now_utc() if finished else None)
            )

    def ask_experiment_stop(self, experiment_id: str, message: str) -> bool:
        """Mark a running experiment `stopping`, for whichever process runs it to read before its next case;
        False when it is not running."""
        with self._write_lock, self.engine.begin() as conn:
            return (
                conn.execute(
                    update(experiments)
                    .where(experiments.c.id == experiment_id, experiments.c.status == "running")
                    .values(status="stopping", message=message)
                ).rowcount
                == 1
            )

    def experiment_status(self, experiment_id: str) -> str | None:
        with self.engine.connect() as conn:
            return conn.execute(select(experiments.c.status).where(experiments.c.id == experiment_id)).scalar()

    def update_experiment_settings(self, experiment_id: str, settings: dict) -> None:
        with self._write_lock, self.engine.begin() as conn:
            conn.execute(update(experiments).where(experiments.c.id == experiment_id).values(settings=settings))

    def claim_experiment_run(self, experiment_id: str, case_session: str, variant: int, *, lease_s: float) -> str:
        """Take one case × variant to run, for `lease_s` seconds (renew_experiment_runs keeps it while it runs):
        `claimed`; `done` when it is done already; `held` while another runner's lease on it runs.

        The insert and the take-over are conditional writes, so two processes never both get `claimed` on
        SQLite or PostgreSQL. A row left `running` whose lease lapsed (its runner died) is taken again,
        its `attempts` counting up.
        """
        key = (
            experiment_runs.c.experiment_id == experiment_id,
            experiment_runs.c.case_session == case_session,
            experiment_runs.c.variant == variant,
        )
        now = now_utc()
        until = now + timedelta(seconds=lease_s)
        with self._write_lock, self.engine.begin() as conn:
            fresh = (
                dialect_module(self.dialect)
                .insert(experiment_runs)
                .values(
                    experiment_id=experiment_id,
                    case_session=case_session,
                    variant=variant,
                    state="running",
                    attempts=1,
                    started_at=now,
                    lease_until=until,
                )
                .on_conflict_do_nothing(index_elements=["experiment_id", "case_session", "variant"])
                .returning(experiment_runs.c.id)  # a row back when it was inserted (rowcount is not told alike)
            )
            if conn.execute(fresh).first() is not None:
                return "claimed"
            row = conn.execute(
                select(experiment_runs.c.state, experiment_runs.c.attempts, experiment_runs.c.lease_until).where(*key)
            ).one()
            if row.state == "done":
                return "done"
            if row.lease_until is not None and row.lease_until > now:
                return "held"
            taken = conn.execute(
                update(experiment_runs)
                .where(*key, experiment_runs.c.state == "running", experiment_runs.c.attempts == row.attempts)
                .values(attempts=row.attempts + 1, started_at=now, lease_until=until)
            ).rowcount
            return "claimed" if taken == 1 else "held"

    def renew_experiment_runs(self, experiment_id: str, claimed: Sequence[tuple[str, int]], *, lease_s: float) -> None:
        """Extend the leases of the runs this runner has in flight ((case_session, variant) pairs)."""
        if not claimed:
            return
        until = now_utc() + timedelta(seconds=lease_s)
        r = experiment_runs.c
        with self._write_lock, self.engine.begin() as conn:
            conn.execute(
                update(experiment_runs)
                .where(
                    r.experiment_id == experiment_id,
                    r.state == "running",
                    r.case_session == bindparam("sid"),
                    r.variant == bindparam("v"),
                )
                .values(lease_until=until),
                [{"sid": sid, "v": v} for sid, v in claimed],
            )

    def finish_experiment_run(self, experiment_id: str, case_session: str, variant: int, **values: Any) -> None:
        """Store a case × variant's replay, measures and scores; it is done."""
        with self._write_lock, self.engine.begin() as conn:
            conn.execute(
                update(experiment_runs)
                .where(
                    experiment_runs.c.experiment_id == experiment_id,
                    experiment_runs.c.case_session == case_session,
                    experiment_runs.c.variant == variant,
                )
                .values(state="done", finished_at=now_utc(), lease_until=None, **values)
            )

    def experiment_runs(self, experiment_id: str) -> list[dict]:
        query = select(experiment_runs).where(experiment_runs.c.experiment_id == experiment_id).order_by(experiment_runs.c.id)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

"""The Store: the only code that speaks SQL.

SQLite (WAL, foreign keys, busy timeout) by default, PostgreSQL by URL; the same code
and the same tests run on both. Schema changes go through the alembic migrations in
`replay_core/storage/migrations`, applied when a Store opens.

`Store` is composed of one class per part of its work, each in its own module:
writing.py (the write path), sessions.py (reading and deleting runs), steps.py (a run's
steps, contexts, export), search_reads.py (full-text search), analytics_reads.py,
ingest_state.py (OTLP traces across batches, watch offsets), attachments.py (annotations
and attachments), datasets.py (datasets and experiments), team.py (review queues, share
links), monitors.py (monitor rules and alerts), audit.py, feed.py (the live feed) and jobs.py (periodic jobs across replicas);
filters.py holds `SessionFilter`, engine.py the engine. The names other wings use are
importable from here.
"""

from __future__ import annotations

from sqlalchemy import Engine

from .. import config
from .analytics_reads import AnalyticsReads
from .attachments import REVIEW_LABELS, Attachments
from .columns import STEP_COLUMNS
from .datasets import Datasets
from .engine import WriteLock, make_engine
from .feed import Feed
from .filters import HAS_FLAGS, SessionFilter
from .ingest_state import IngestState
from .jobs import Jobs
from .monitors import Monitors
from .plain import EXPERIMENT_SOURCE
from .search_reads import SearchReads
from .sessions import RETENTION, Sessions
from .steps import Steps, step_events, step_fields_set
from .tables import metadata
from .team import Team
from .writing import StepRow, WriteBatch, WriteRefused, WriteResult, Writing, step_row


class Store(
    Writing, Sessions, Steps, SearchReads, AnalyticsReads, IngestState, Attachments, Datasets, Team, Monitors, Feed, Jobs
):
    """Storage for sessions, steps, contexts, attachments and annotations."""

    def __init__(self, url: str | None = None, *, migrate: bool = True, engine: Engine | None = None):
        self.url = config.database_url(url)
        self.engine = engine or make_engine(self.url)
        self.engine_given = engine is not None  # its connection settings live only in this process
        self._write_lock = WriteLock()
        self._unplanned = 0 if self.dialect == "postgresql" else None  # steps written before statistics were seen
        if migrate:
            self.upgrade()

    def upgrade(self) -> None:
        """Bring the schema to the newest migration (idempotent)."""
        from .migrations import upgrade_to_head

        upgrade_to_head(self.engine)

    def close(self) -> None:
        self.engine.dispose()


def open_store(url: str | None = None, *, migrate: bool = True) -> Store:
    """The Store at `url` (`--db` → `AGENT_REPLAY_DB_URL` → the embedded SQLite file), migrated."""
    return Store(url, migrate=migrate)


__all__ = [
    "EXPERIMENT_SOURCE",
    "HAS_FLAGS",
    "RETENTION",
    "REVIEW_LABELS",
    "STEP_COLUMNS",
    "SessionFilter",
    "StepRow",
    "Store",
    "WriteBatch",
    "WriteRefused",
    "WriteResult",
    "make_engine",
    "metadata",
    "open_store",
    "step_events",
    "step_fields_set",
    "step_row",
]

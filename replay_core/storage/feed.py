"""The live feed (server/stream.py, the Live page): a run's steps in the order they were stored,
from a cursor, so a follower gets each committed step once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import func, select

from .columns import STEP_COLUMNS
from .engine import StoreBase
from .tables import steps

if TYPE_CHECKING:
    from ..events import StepEvent


class Feed(StoreBase):
    """Cursors into a run's steps in storing order, and the steps after one."""

    def feed_cursor(self, session_id: str, after_seq: int | None) -> int:
        """Where the feed resumes after the step with seq `after_seq` (an SSE Last-Event-ID): the
        position of that step in storing order; 0 (from the start) when there is none such."""
        if after_seq is None:
            return 0
        with self.engine.connect() as conn:
            return (
                conn.scalar(select(func.max(steps.c.id)).where(steps.c.session_id == session_id, steps.c.seq == after_seq)) or 0
            )

    def feed_head(self, session_id: str) -> int:
        """The cursor of the run's newest stored step (0 when it has none): a feed from here sends only what comes next."""
        with self.engine.connect() as conn:
            return conn.scalar(select(func.max(steps.c.id)).where(steps.c.session_id == session_id)) or 0

    def step_feed(
        self, session_id: str, after: int = 0, *, limit: int = 500, newest: bool = False
    ) -> list[tuple[int, StepEvent]]:
        """Steps of a run in the order they were stored, after cursor `after`: [(cursor, step)];
        with `newest`, the last `limit` stored (the Live page's tail), still oldest first.

        Storing order, not seq: a step stored late with a lower seq (an SDK's held place for a
        model call) still comes. One run's writes are serialised (its row lock, SQLite's write
        lock), so its row ids grow in commit order and a cursor never skips a committed step."""
        from ..events import StepEvent

        cols = [steps.c.id, *(steps.c[name] for name in STEP_COLUMNS)]
        query = select(*cols).where(steps.c.session_id == session_id, steps.c.id > after)
        query = query.order_by(steps.c.id.desc() if newest else steps.c.id).limit(limit)
        out = []
        with self.engine.connect() as conn:
            for r in conn.execute(query):
                values = dict(zip(STEP_COLUMNS, r[1:], strict=True))
                values["session_id"] = session_id
                out.append((r[0], StepEvent.trusted(values)))
        return out[::-1] if newest else out

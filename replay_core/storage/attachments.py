"""What people and agents add to a run besides its steps: review annotations, and attachments
(images stored once per hash in media_blobs with their thumbnails, other bytes in the row)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, func, insert, select
from sqlalchemy.engine import Connection

from ..vocabulary import now_utc
from .bulk import chunks, dialect_module, inserted_id
from .engine import StoreBase
from .tables import annotations as annotations_table
from .tables import attachments, media_blobs, sessions

REVIEW_LABELS = ("good", "bad", "needs_attention")


def drop_unused_blobs(conn: Connection) -> None:
    """Image bytes no attachment points at any more (their runs were deleted)."""
    used = select(attachments.c.sha256).where(attachments.c.sha256.is_not(None))
    conn.execute(delete(media_blobs).where(media_blobs.c.sha256.not_in(used)))


class Attachments(StoreBase):
    """Annotations and attachments of a run."""

    def annotate(
        self, session_id: str, label: str, text: str = "", *, event_id: str | None = None, author: str | None = None
    ) -> int:
        if label not in REVIEW_LABELS:
            raise ValueError(f"label: expected one of {', '.join(REVIEW_LABELS)}, got {label!r}")
        with self._write_lock, self.engine.begin() as conn:
            if conn.scalar(select(sessions.c.id).where(sessions.c.id == session_id)) is None:
                raise KeyError(session_id)
            res = conn.execute(
                insert(annotations_table).values(
                    session_id=session_id, event_id=event_id, label=label, text=text, author=author, created_at=now_utc()
                )
            )
            return inserted_id(res)

    def annotations(self, session_id: str) -> list[dict]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(annotations_table)
                .where(annotations_table.c.session_id == session_id)
                .order_by(annotations_table.c.created_at, annotations_table.c.id)
            )
            return [dict(r._mapping) for r in rows]

    def add_attachment(
        self, session_id: str, data: bytes, *, event_id: str | None = None, name: str | None = None, mime_type: str | None = None
    ) -> int:
        """Bytes that are not an image (or come from before media_blobs): kept in the row itself."""
        with self._write_lock, self.engine.begin() as conn:
            res = conn.execute(
                insert(attachments).values(
                    session_id=session_id, event_id=event_id, name=name, mime_type=mime_type, data=data, created_at=now_utc()
                )
            )
            return inserted_id(res)

    def has_blob(self, sha256: str) -> bool:
        with self.engine.connect() as conn:
            return conn.scalar(select(media_blobs.c.sha256).where(media_blobs.c.sha256 == sha256)) is not None

    def add_media(
        self,
        session_id: str,
        event_id: str | None,
        blob: dict | None,
        *,
        sha256: str,
        mime_type: str,
        name: str | None = None,
        target: dict | None = None,
    ) -> tuple[int, bool]:
        """Attach an image to a step: its bytes once per hash (`blob` is None when `has_blob` said
        it is stored), the link once per (step, hash). Returns (attachment id, whether it was new)."""
        with self._write_lock, self.engine.begin() as conn:
            if blob is not None:  # another writer may store the same new image at once: then this insert does nothing
                conn.execute(
                    dialect_module(self.dialect)
                    .insert(media_blobs)
                    .values(sha256=sha256, created_at=now_utc(), **blob)
                    .on_conflict_do_nothing(index_elements=["sha256"])
                )
            same = select(attachments.c.id).where(attachments.c.session_id == session_id, attachments.c.sha256 == sha256)
            same = same.where(attachments.c.event_id.is_(None) if event_id is None else attachments.c.event_id == event_id)
            known = conn.scalar(same)
            if known is not None:
                return known, False
            res = conn.execute(
                insert(attachments).values(
                    session_id=session_id,
                    event_id=event_id,
                    name=name,
                    mime_type=mime_type,
                    sha256=sha256,
                    target=target,
                    created_at=now_utc(),
                )
            )
            return inserted_id(res), True

    def list_attachments(self, session_id: str) -> list[dict]:
        """Attachment descriptions without their bytes, in the order they came, with the image's size."""
        cols = [c for c in attachments.c if c.name != "data"]
        query = (
            select(*cols, media_blobs.c.width, media_blobs.c.height, media_blobs.c.size)
            .select_from(attachments.outerjoin(media_blobs, attachments.c.sha256 == media_blobs.c.sha256))
            .where(attachments.c.session_id == session_id)
            .order_by(attachments.c.id)
        )
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def attachment_data(self, attachment_id: int) -> bytes | None:
        query = (
            select(func.coalesce(media_blobs.c.data, attachments.c.data))
            .select_from(attachments.outerjoin(media_blobs, attachments.c.sha256 == media_blobs.c.sha256))
            .where(attachments.c.id == attachment_id)
        )
        with self.engine.connect() as conn:
            return conn.scalar(query)

    def thumbnails(self, sha256s: Sequence[str]) -> dict[str, bytes]:
        """Thumbnails by hash: only the ones asked for, so a filmstrip costs what it shows."""
        out: dict[str, bytes] = {}
        with self.engine.connect() as conn:
            for part in chunks(list(dict.fromkeys(sha256s))):
                rows = conn.execute(select(media_blobs.c.sha256, media_blobs.c.thumbnail).where(media_blobs.c.sha256.in_(part)))
                out.update({sha: thumb for sha, thumb in rows if thumb is not None})
        return out

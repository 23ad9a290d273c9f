"""Review queues (runs frozen into a list, each claimed and reviewed by several people) and
share links (a token's hash, what it opens, until when): the tables under replay_core.team,
each change in the audit log in its own transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, case, delete, exists, func, insert, or_, select, update

from ..vocabulary import now_utc
from .actor import Actor
from .audit import Audited, audit_line
from .bulk import inserted_id
from .tables import queue_items, queue_reviews, review_queues, sessions, share_links
from .widths import fit, holder


class Team(Audited):
    """Review queues and share links."""

    def create_queue(
        self,
        name: str,
        session_ids: Sequence[str],
        *,
        actor: Actor,
        made_from: Any,
        rubric: dict,
        reviews_per_item: int,
        assignees: Sequence[str],
    ) -> int:
        """A queue with its items frozen now (in the order given); the audit line in the same transaction."""
        with self._write_lock, self._write_transaction() as conn:
            inserted = conn.execute(
                insert(review_queues).values(
                    name=name,
                    made_from=made_from,
                    rubric=rubric,
                    reviews_per_item=reviews_per_item,
                    assignees=list(assignees),
                    created_by=holder(actor.who),
                    created_at=now_utc(),
                )
            )
            queue_id = inserted_id(inserted)
            rows = [
                {"queue_id": queue_id, "position": i, "session_id": sid, "reviews": 0} for i, sid in enumerate(session_ids, 1)
            ]
            if rows:
                conn.execute(insert(queue_items), rows)
            audit_line(
                conn,
                actor,
                "manage_queues",
                target=f"queue {queue_id}",
                detail={"op": "create", "name": name, "items": len(rows)},
            )
        return queue_id

    def delete_queue(self, queue_id: int, *, actor: Actor) -> bool:
        with self._write_lock, self._write_transaction() as conn:
            for table in (queue_reviews, queue_items):
                conn.execute(delete(table).where(table.c.queue_id == queue_id))
            gone = conn.execute(delete(review_queues).where(review_queues.c.id == queue_id)).rowcount == 1
            if gone:
                audit_line(conn, actor, "manage_queues", target=f"queue {queue_id}", detail={"op": "delete"})
        return gone

    def _queue_counts(self):
        """Per queue: items, reviews given (verdicts), items with all their reviews."""
        done = case((queue_items.c.reviews >= review_queues.c.reviews_per_item, 1), else_=0)
        return (
            select(
                queue_items.c.queue_id,
                func.count().label("n_items"),
                func.sum(queue_items.c.reviews).label("reviews"),
                func.sum(done).label("items_done"),
            )
            .select_from(queue_items.join(review_queues, review_queues.c.id == queue_items.c.queue_id))
            .group_by(queue_items.c.queue_id)
            .subquery()
        )

    def list_queues(self, queue_id: int | None = None) -> list[dict]:
        """Queues, newest first, with `items`, `reviews` (verdicts given) and `items_done`."""
        counts = self._queue_counts()
        query = (
            select(
                review_queues,
                func.coalesce(counts.c.n_items, 0).label("items"),
                func.coalesce(counts.c.reviews, 0).label("reviews"),
                func.coalesce(counts.c.items_done, 0).label("items_done"),
            )
            .outerjoin(counts, counts.c.queue_id == review_queues.c.id)
            .order_by(review_queues.c.created_at.desc(), review_queues.c.id.desc())
        )
        if queue_id is not None:
            query = query.where(review_queues.c.id == queue_id)
        with self.engine.connect() as conn:
            return [{**dict(r._mapping), "reviews": int(r.reviews), "items_done": int(r.items_done)} for r in conn.execute(query)]

    def queue_items(self, queue_id: int) -> list[dict]:
        """Items in order, each with the run's name and status (None when the run is gone)."""
        query = (
            select(queue_items, sessions.c.name, sessions.c.status, sessions.c.id.label("stored"))
            .outerjoin(sessions, sessions.c.id == queue_items.c.session_id)
            .where(queue_items.c.queue_id == queue_id)
            .order_by(queue_items.c.position)
        )
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def queue_reviews(self, queue_id: int) -> list[dict]:
        query = (
            select(queue_reviews)
            .where(queue_reviews.c.queue_id == queue_id)
            .order_by(queue_reviews.c.item_id, queue_reviews.c.id)
        )
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def claim_queue_item(
        self, queue_id: int, reviewer: str, hold: timedelta, *, now: datetime | None = None, item_id: int | None = None
    ) -> dict | None:
        """Hold the next item `reviewer` may review (or `item_id`) until now + hold: one that still needs
        reviews, that they have not reviewed, that nobody else holds; items they skipped come last.
        Their other holds in the queue are let go. None when nothing is left for them."""
        now = now or now_utc()
        reviewer = fit("reviewer", reviewer, queue_items.c.held_by)
        mine = and_(queue_reviews.c.item_id == queue_items.c.id, queue_reviews.c.reviewer == reviewer)
        free = or_(queue_items.c.held_until.is_(None), queue_items.c.held_until < now, queue_items.c.held_by == reviewer)
        wanted = (
            select(queue_items.c.id)
            .join(review_queues, review_queues.c.id == queue_items.c.queue_id)
            .where(
                queue_items.c.queue_id == queue_id,
                queue_items.c.reviews < review_queues.c.reviews_per_item,
                free,
                ~exists().where(mine, queue_reviews.c.verdict.is_not(None)),
            )
            .order_by(exists().where(mine, queue_reviews.c.skipped.is_(True)), queue_items.c.position)
        )
        if item_id is not None:
            wanted = wanted.where(queue_items.c.id == item_id)
        with self._write_lock, self._write_transaction() as conn:
            for candidate in conn.scalars(wanted.limit(20)).all():
                took = conn.execute(
                    update(queue_items).where(queue_items.c.id == candidate, free).values(held_by=reviewer, held_until=now + hold)
                ).rowcount
                if took == 1:
                    conn.execute(
                        update(queue_items)
                        .where(
                            queue_items.c.queue_id == queue_id, queue_items.c.held_by == reviewer, queue_items.c.id != candidate
                        )
                        .values(held_by=None, held_until=None)
                    )
                    row = conn.execute(select(queue_items).where(queue_items.c.id == candidate)).one()
                    return dict(row._mapping)
        return None

    def release_queue_item(self, item_id: int, reviewer: str) -> None:
        with self._write_lock, self._write_transaction() as conn:
            conn.execute(
                update(queue_items)
                .where(queue_items.c.id == item_id, queue_items.c.held_by == reviewer)
                .values(held_by=None, held_until=None)
            )

    def save_queue_review(
        self,
        queue_id: int,
        item_id: int,
        reviewer: str,
        *,
        verdict: str | None,
        criteria: dict | None = None,
        note: str | None = None,
        should_have: str | None = None,
    ) -> None:
        """A review (or, verdict None, a skip) of one item by one reviewer; saving again replaces it. Lets go of the hold."""
        reviewer = fit("reviewer", reviewer, queue_reviews.c.reviewer)
        values = {
            "verdict": verdict,
            "criteria": criteria or None,
            "note": note or None,
            "should_have": should_have or None,
            "skipped": verdict is None,
            "created_at": now_utc(),
        }
        key = (queue_reviews.c.item_id == item_id, queue_reviews.c.reviewer == reviewer)
        with self._write_lock, self._write_transaction() as conn:
            if (
                conn.scalar(select(queue_items.c.id).where(queue_items.c.id == item_id, queue_items.c.queue_id == queue_id))
                is None
            ):
                raise KeyError(item_id)
            before = conn.execute(select(queue_reviews.c.verdict).where(*key)).first()
            if before is None:
                conn.execute(insert(queue_reviews).values(queue_id=queue_id, item_id=item_id, reviewer=reviewer, **values))
            else:
                conn.execute(update(queue_reviews).where(*key).values(**values))
            counted = (verdict is not None) - (before is not None and before.verdict is not None)
            changes: dict[str, Any] = {"reviews": queue_items.c.reviews + counted} if counted else {}
            if (
                conn.execute(
                    update(queue_items)
                    .where(queue_items.c.id == item_id, queue_items.c.held_by == reviewer)
                    .values(held_by=None, held_until=None, **changes)
                ).rowcount
                == 0
                and changes
            ):
                conn.execute(update(queue_items).where(queue_items.c.id == item_id).values(**changes))

    def create_share(self, token_hash: str, kind: str, target: dict, expires_at: datetime, *, actor: Actor) -> int:
        with self._write_lock, self._write_transaction() as conn:
            inserted = conn.execute(
                insert(share_links).values(
                    token_hash=token_hash,
                    kind=kind,
                    target=target,
                    created_by=holder(actor.who),
                    created_at=now_utc(),
                    expires_at=expires_at,
                    opened=0,
                )
            )
            share_id = inserted_id(inserted)
            audit_line(
                conn,
                actor,
                "share",
                target=f"share {share_id}",
                detail={"op": "create", "kind": kind, **target, "expires_at": expires_at.isoformat()},
            )
        return share_id

    def get_share(self, *, token_hash: str | None = None, share_id: int | None = None) -> dict | None:
        key = share_links.c.token_hash == token_hash if token_hash is not None else share_links.c.id == share_id
        with self.engine.connect() as conn:
            row = conn.execute(select(share_links).where(key)).first()
            return dict(row._mapping) if row else None

    def list_shares(self) -> list[dict]:
        cols = [c for c in share_links.c if c.name != "token_hash"]
        with self.engine.connect() as conn:
            return [
                dict(r._mapping)
                for r in conn.execute(select(*cols).order_by(share_links.c.created_at.desc(), share_links.c.id.desc()))
            ]

    def revoke_share(self, share_id: int, *, actor: Actor) -> bool:
        """False when there is no such link or it was revoked already."""
        with self._write_lock, self._write_transaction() as conn:
            done = (
                conn.execute(
                    update(share_links)
                    .where(share_links.c.id == share_id, share_links.c.revoked_at.is_(None))
                    .values(revoked_at=now_utc(), revoked_by=holder(actor.who))
                ).rowcount
                == 1
            )
            if done:
                audit_line(conn, actor, "share", target=f"share {share_id}", detail={"op": "revoke"})
        return done

    def note_share_opened(self, share_id: int, *, actor: Actor, outcome: str = "ok", detail: dict | None = None) -> None:
        """Count an opening (a refused one too: expired, revoked) and put it in the audit log."""
        with self._write_lock, self._write_transaction() as conn:
            if outcome == "ok":
                conn.execute(
                    update(share_links)
                    .where(share_links.c.id == share_id)
                    .values(opened=share_links.c.opened + 1, last_opened_at=now_utc())
                )
            audit_line(conn, actor, "share", outcome=outcome, target=f"share {share_id}", detail={"op": "open", **(detail or {})})

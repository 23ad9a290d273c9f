"""The audit log: who did what, when and from where.

Written for imports, replays, deletes, replaces, sign-ins (and failed ones) and refused
actions, by the functions that do them (a delete writes its line in the same transaction
as the delete). Read by editors only: `entries()` checks the role, like every other
guarded function. A line holds names and counts, never a body, a password or a token.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..storage.actor import READ_AUDIT, Actor, PermissionDenied
from ..storage.store import Store

# what the log records (the `action` column); refusals are `outcome="denied"` of the action tried
SIGN_IN, DATASET, ATTACH, REVIEW = "sign_in", "dataset", "attach", "review"
ACTIONS = ("import", "ingest", "replay", "delete", "replace", SIGN_IN, "share", "manage_queues", DATASET, ATTACH, REVIEW)
COLUMNS = ("at", "who", "role", "origin", "action", "outcome", "target", "detail")


def record(
    store: Store,
    actor: Actor,
    action: str,
    *,
    outcome: str = "ok",
    target: str | None = None,
    detail: dict | None = None,
    at: datetime | None = None,
) -> int:
    """Add a line; returns its id."""
    return store.record_audit(actor, action, outcome=outcome, target=target, detail=detail, at=at)


def dataset_written(store: Store, actor: Actor, made: dict, op: str) -> None:
    """Note a dataset made or grown (`op`: create, add, import): its name, version and case count."""
    detail = {"op": op, "version": made.get("version"), "cases": made.get("cases")}
    store.record_audit(actor, DATASET, target=f"dataset {made.get('name')}", detail=detail)


def denied(store: Store, exc: PermissionDenied, target: str | None = None) -> None:
    """Note a refused action (who tried what)."""
    store.record_audit(exc.actor, exc.action, outcome="denied", target=target)


def entries(
    store: Store, actor: Actor | None = None, *, limit: int = 200, since: datetime | None = None, actions: Sequence[str] = ()
) -> list[dict]:
    """The newest lines first; editors only."""
    store.authorize(actor, READ_AUDIT)
    return store.audit_entries(limit=limit, since=since, actions=actions)


def as_row(entry: dict) -> dict:
    """A line for a table or JSON: the columns people read, `at` as ISO text."""
    row = {k: entry.get(k) for k in COLUMNS}
    row["at"] = entry["at"].isoformat() if entry.get("at") else None
    return row

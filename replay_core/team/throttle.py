"""Failures in a row from one client address slow it down, then lock it out: wrong passwords
(server.auth) and wrong share-link tokens (team.shares).

The state is the audit log itself: every app replica sees the same counts, a restart does not
wipe them, and the lines an editor reads are the very ones that decide. After `free` failures
in a row each new try waits twice as long as the last (up to MAX_DELAY_S); `lockout` failures in
a row lock the address out for LOCKOUT. The address is the real peer unless it is a trusted
proxy (server.origins), so a client cannot pick a fresh one per try.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from ..events import now_utc
from ..storage.store import Store

MAX_DELAY_S = 60.0
LOCKOUT = timedelta(minutes=15)
WINDOW = timedelta(hours=1)  # failures older than this are forgotten


@dataclass(frozen=True)
class Throttle:
    """Which audit lines count: `action`'s lines with outcome `failed` (in a row, since the last `ok`)."""

    action: str
    free: int
    lockout: int
    failed: str = "failed"


def failures(store: Store, throttle: Throttle, origin: str, now: datetime) -> tuple[int, datetime | None]:
    """Failures from `origin` in a row (since its last success, within WINDOW), and the last one's time."""
    rows = store.audit_entries(
        actions=[throttle.action],
        origin=origin,
        since=now - WINDOW,
        outcomes=("ok", throttle.failed),
        limit=throttle.lockout + 1,
    )
    n = 0
    for row in rows:
        if row["outcome"] != throttle.failed:
            break
        n += 1
    return n, (rows[0]["at"] if n else None)


def wait(store: Store, throttle: Throttle, origin: str, now: datetime | None = None) -> tuple[float, bool]:
    """Seconds `origin` must still wait before its next try, and whether it is locked out."""
    now = now or now_utc()
    n, last = failures(store, throttle, origin, now)
    if last is None or n < throttle.free:
        return 0.0, False
    if n >= throttle.lockout:
        return max(0.0, (last + LOCKOUT - now).total_seconds()), True
    delay = min(MAX_DELAY_S, 2.0 ** (n - throttle.free + 1))
    return max(0.0, (last + timedelta(seconds=delay) - now).total_seconds()), False

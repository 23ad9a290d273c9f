"""Old runs out of the way: the retention policy, applied by the CLI and on a schedule.

The app's server runs `run_periodically` in the background (see streamlit_app.py), so a
deployment with `AGENT_REPLAY_RETENTION_DAYS` set needs no cron job; N replicas on one
database sweep once per period between them (a claim in `job_runs`, a PostgreSQL advisory lock).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from datetime import timedelta

from .. import config
from .store import Store

log = logging.getLogger(__name__)
EVERY_S = float(os.environ.get("AGENT_REPLAY_RETENTION_EVERY_S", "3600"))
SWEEP_LOCK = 7_402_113_902  # the advisory lock key of the retention sweep (migrations use ...901)


def apply_policy(store: Store) -> int:
    """Delete what the configured policy says is too old; 0 when no policy is set."""
    days = config.retention_days()
    if days is None:
        return 0
    return store.delete_older_than(days, keep_annotated=config.retention_keeps_annotated())


def sweep_once(store: Store, every_s: float = EVERY_S) -> int | None:
    """One replica's hourly pass: the sweep when this process wins this period's claim
    (`Store.claim_job`), under the PostgreSQL advisory lock so that two sweeps never overlap;
    None when another replica has it (or had it less than a period ago)."""
    if config.retention_days() is None:
        return 0
    with store.advisory_lock(SWEEP_LOCK) as held:
        if not held or not store.claim_job("retention", timedelta(seconds=every_s)):
            return None
        return apply_policy(store)


async def run_periodically(store_factory: Callable[[], Store], every_s: float = EVERY_S) -> None:
    """Apply the policy now and then every `every_s` seconds, off the event loop's thread; with several
    replicas on one database, one of them sweeps each period."""
    while True:
        try:
            deleted = await asyncio.to_thread(sweep_once, store_factory(), every_s)
            if deleted:
                log.info("retention: deleted %d old runs", deleted)
        except Exception:  # a failed pass must not stop the next one
            log.exception("retention pass failed")
        await asyncio.sleep(every_s)

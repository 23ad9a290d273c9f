"""Old runs out of the way: the retention policy, applied by the CLI and on a schedule.

The app's server runs `run_periodically` in the background (see streamlit_app.py), so a
deployment with `AGENT_REPLAY_RETENTION_DAYS` set needs no cron job.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from .. import config
from .store import Store

log = logging.getLogger(__name__)
EVERY_S = 3600.0


def apply_policy(store: Store) -> int:
    """Delete what the configured policy says is too old; 0 when no policy is set."""
    days = config.retention_days()
    if days is None:
        return 0
    return store.delete_older_than(days, keep_annotated=config.retention_keeps_annotated())


async def run_periodically(store_factory: Callable[[], Store], every_s: float = EVERY_S) -> None:
    """Apply the policy now and then every `every_s` seconds, off the event loop's thread."""
    while True:
        try:
            deleted = await asyncio.to_thread(apply_policy, store_factory())
            if deleted:
                log.info("retention: deleted %d old runs", deleted)
        except Exception:  # a failed pass must not stop the next one
            log.exception("retention pass failed")
        await asyncio.sleep(every_s)

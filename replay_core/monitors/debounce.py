"""Monitors judged after a burst of ingests: each write pokes `INGESTED`, and the server's schedule
(check.run_periodically) judges the monitors once a quiet interval passed since the last poke —
never inside a write's transaction, never once per write. Light to import: the ingest routes use it."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable

QUIET_S = 30.0  # after a burst of ingests, how long without one before the monitors are judged


class Debounce:
    """Ingest pokes it; `due()` says yes once, when `quiet_s` passed since the last poke."""

    def __init__(self, quiet_s: float = QUIET_S, clock: Callable[[], float] = time.monotonic):
        self.quiet_s, self.clock = quiet_s, clock
        self.last: float | None = None
        self.lock = threading.Lock()

    def poke(self) -> None:
        with self.lock:
            self.last = self.clock()

    def due(self) -> bool:
        with self.lock:
            if self.last is None or self.clock() - self.last < self.quiet_s:
                return False
            self.last = None
            return True


INGESTED = Debounce()


def after_ingest(handler: Callable) -> Callable:
    """An ingest route that pokes `INGESTED` once its write is answered (never inside its transaction)."""

    @functools.wraps(handler)  # its role, which the OpenAPI document reads, stays on it
    async def route(request):
        response = await handler(request)
        if response.status_code < 300:
            INGESTED.poke()
        return response

    return route

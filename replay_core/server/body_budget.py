"""Request bodies in flight share one budget, so many uploads at once cannot add up past it.

Each request's limit (AGENT_REPLAY_MAX_BODY_MB) bounds one body; fifty clients sending one each
at the same moment would still hold fifty of them. `BodyBudget` counts every body's bytes as they
arrive, against AGENT_REPLAY_BODY_BUDGET_MB for the whole process (default 64, never under twice
the per-request limit), and gives them back when the request's response is done: that is when its
handler lets go of them. A body that does not fit waits for others to finish; after WAIT_S it is
refused with 503 and a Retry-After, nothing of it stored. A request alone may pass the budget (the
Import page's large file), so a big body is slowed by others, never refused for its size here.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any

import orjson
from starlette.exceptions import HTTPException

from .bodies import max_body_bytes

BUDGET_KEY = "AGENT_REPLAY_BODY_BUDGET_MB"
WAIT_S = 30.0


def budget_bytes(env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    configured = int(float(env.get(BUDGET_KEY) or "64") * 1024 * 1024)
    return max(configured, 2 * max_body_bytes())


class _Pool:
    """Bytes held by bodies in flight; a taker waits until its bytes fit, or until it holds all that is held."""

    def __init__(self, limit: int):
        self.limit, self.used = limit, 0
        self._changed: asyncio.Condition | None = None

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    async def take(self, n: int, held: int, wait_s: float) -> bool:
        changed = self._condition()
        async with changed:
            try:
                await asyncio.wait_for(changed.wait_for(lambda: self.used + n <= self.limit or self.used == held), wait_s)
            except TimeoutError:
                return False
            self.used += n
            return True

    async def give(self, n: int) -> None:
        if not n:
            return
        changed = self._condition()
        async with changed:
            self.used -= n
            changed.notify_all()


class BudgetRefused(HTTPException):
    """Raised from `receive`: a route's exception handling answers it as any HTTP error; where none does, the
    middleware answers it itself."""

    def __init__(self) -> None:
        super().__init__(
            503, "the server is reading too many request bodies at once; try again shortly", headers={"Retry-After": "5"}
        )


class BodyBudget:
    """ASGI middleware: every HTTP request's body counted against the process's budget (see the module)."""

    def __init__(self, app: Any, limit: int | None = None, wait_s: float = WAIT_S):
        self.app, self.wait_s = app, wait_s
        self.pool = _Pool(budget_bytes() if limit is None else limit)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held, started = 0, False

        async def tracked(message: dict) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        async def counted() -> dict:
            nonlocal held
            message = await receive()
            size = len(message.get("body") or b"") if message["type"] == "http.request" else 0
            if size:
                if not await self.pool.take(size, held, self.wait_s):
                    raise BudgetRefused
                held += size
            return message

        try:
            await self.app(scope, counted, tracked)
        except BudgetRefused as refused:
            if started:
                raise
            body = orjson.dumps({"detail": refused.detail})
            headers = [(b"content-type", b"application/json"), (b"retry-after", b"5")]
            await send({"type": "http.response.start", "status": 503, "headers": headers})
            await send({"type": "http.response.body", "body": body})
        finally:
            await self.pool.give(held)

"""Request bodies in flight share one budget (server/body_budget.py): many at once wait for each other
rather than add up, one that waits too long is refused with 503, and every byte is given back."""

from __future__ import annotations

import asyncio

import httpx

from replay_core.server.api import create_app
from replay_core.server.bodies import max_body_bytes
from replay_core.server.body_budget import BodyBudget, budget_bytes


class Holder:
    """An app that reads its whole body, then holds it until told to let go."""

    def __init__(self):
        self.release = asyncio.Event()
        self.read = 0

    async def __call__(self, scope, receive, send):
        more = True
        while more:
            message = await receive()
            self.read += len(message.get("body", b""))
            more = message.get("more_body", False)
        await self.release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def client(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


def test_bodies_over_the_budget_wait_for_the_ones_in_flight_and_all_bytes_come_back():
    async def scenario():
        inner = Holder()
        budget = BodyBudget(inner, limit=1_000, wait_s=5)
        async with client(budget) as http:
            first = asyncio.create_task(http.post("/", content=b"a" * 800))
            while inner.read < 800:
                await asyncio.sleep(0.01)
            second = asyncio.create_task(http.post("/", content=b"b" * 800))
            await asyncio.sleep(0.2)
            waiting = inner.read  # the second body is not taken while the first holds the budget
            held_then = budget.pool.used
            inner.release.set()
            codes = [(await first).status_code, (await second).status_code]
        return waiting, held_then, codes, budget.pool.used

    waiting, held_then, codes, used_after = asyncio.run(scenario())
    assert waiting == 800 and held_then == 800
    assert codes == [200, 200] and used_after == 0


def test_a_body_that_waits_past_its_time_is_refused_with_503_and_a_lone_big_body_passes():
    async def scenario():
        inner = Holder()
        budget = BodyBudget(inner, limit=1_000, wait_s=0.2)
        async with client(budget) as http:
            big = asyncio.create_task(http.post("/", content=b"a" * 5_000))  # alone: passes the budget
            while inner.read < 5_000:
                await asyncio.sleep(0.01)
            refused = await http.post("/", content=b"b" * 10)
            inner.release.set()
            return (await big).status_code, refused, budget.pool.used

    big, refused, used = asyncio.run(scenario())
    assert big == 200 and used == 0
    assert refused.status_code == 503 and refused.headers["retry-after"] == "5"


def test_the_api_app_counts_its_bodies_and_the_budget_is_never_under_two_bodies(monkeypatch):
    monkeypatch.setenv("AGENT_REPLAY_BODY_BUDGET_MB", "1")
    assert budget_bytes() == 2 * max_body_bytes()
    monkeypatch.setenv("AGENT_REPLAY_BODY_BUDGET_MB", "500")
    assert budget_bytes() == 500 * 1024 * 1024
    app = create_app()
    assert any(m.cls is BodyBudget for m in app.user_middleware)

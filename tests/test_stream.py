"""The live stream (`GET /api/v1/sessions/{id}/stream`) on the served app, fed by another process.

A client stays connected while a Python process other than the app's (the test's own) writes steps into
the same database; they arrive in order, one event each, with heartbeats in between; a reconnect with
Last-Event-ID resumes after the last one seen, without a gap or a double.
"""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest
from apptest_helpers import served_app

from replay_core.events import StepEvent
from replay_core.storage.store import Store

TOKEN = "stream-token-7"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def write_elsewhere(store: Store, sid: str, start: int, n: int) -> None:
    """Steps written by this process, not the served app's (no seq: the database allocates it)."""
    for i in range(start, start + n):
        store.write([StepEvent(session_id=sid, type="think", content=f"thought {i}")])
        time.sleep(0.02)


class Listener(threading.Thread):
    """An SSE client in a thread: collects (id, data) events and counts heartbeats."""

    def __init__(self, base: str, sid: str, headers: dict | None = None):
        super().__init__(daemon=True)
        self.url, self.headers = f"{base}/api/v1/sessions/{sid}/stream", {**AUTH, **(headers or {})}
        self.events: list[tuple[int, dict]] = []
        self.heartbeats = 0
        self.status: int | None = None
        self.connected = threading.Event()
        self.stop = threading.Event()

    def run(self) -> None:
        import orjson

        with httpx.Client(timeout=httpx.Timeout(30, read=30)) as http, http.stream("GET", self.url, headers=self.headers) as res:
            self.status = res.status_code
            self.connected.set()
            event_id = None
            for line in res.iter_lines():
                if self.stop.is_set():
                    return
                if line.startswith("id: "):
                    event_id = int(line[4:])
                elif line.startswith("data: "):
                    self.events.append((event_id, orjson.loads(line[6:])))
                elif line.startswith(": heartbeat"):
                    self.heartbeats += 1

    def wait_for(self, n: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while len(self.events) < n and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(self.events) >= n, f"{len(self.events)} events of {n}"

    def wait_for_heartbeat(self, timeout: float = 60) -> None:
        """One more heartbeat: the server had nothing to send for a heartbeat's time."""
        beats, deadline = self.heartbeats, time.monotonic() + timeout
        while self.heartbeats == beats and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.heartbeats > beats, "no heartbeat"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('stream') / 'stream.db'}"
    Store(url).close()
    with served_app(url, AGENT_REPLAY_API_TOKENS=TOKEN, AGENT_REPLAY_STREAM_HEARTBEAT_S="0.5") as base:
        yield base, url


def test_steps_written_by_another_process_arrive_in_order_and_resume_after_last_event_id(served):
    base, url = served
    store = Store(url, migrate=False)
    store.write([StepEvent(session_id="live-1", type="input", content="go")])
    first = Listener(base, "live-1")
    first.start()
    assert first.connected.wait(30) and first.status == 200
    first.wait_for(1)  # the backlog: the step stored before connecting
    first.wait_for_heartbeat()  # nothing to send for 0.5 s: a heartbeat
    write_elsewhere(store, "live-1", 1, 30)
    first.wait_for(31)
    first.stop.set()
    seqs = [i for i, _ in first.events]
    assert seqs == list(range(1, 32))
    assert [d["content"] for _, d in first.events[1:]] == [f"thought {i}" for i in range(1, 31)]
    assert first.events[0][1]["kind"] == "step" and first.events[0][1]["session_id"] == "live-1"

    # disconnected; more steps land; a reconnect after seq 20 gets 21… exactly once each
    write_elsewhere(store, "live-1", 31, 10)
    again = Listener(base, "live-1", {"Last-Event-ID": "20"})
    again.start()
    again.wait_for(21)
    write_elsewhere(store, "live-1", 41, 5)
    again.wait_for(26)
    again.wait_for_heartbeat()  # all sent: nothing more comes, no step twice
    again.stop.set()
    assert [i for i, _ in again.events] == list(range(21, 47))
    store.close()


def test_the_stream_is_a_read_with_the_same_checks(served):
    base, url = served
    Store(url, migrate=False).write([StepEvent(session_id="live-2", type="think", content="x")])
    with httpx.Client(base_url=base, timeout=10) as http:
        assert http.get("/api/v1/sessions/live-2/stream").status_code == 401
        assert http.get("/api/v1/sessions/live-2/stream", headers={"Authorization": "Bearer nope"}).status_code == 401
        assert http.get("/api/v1/sessions/nobody/stream", headers=AUTH).status_code == 404
        res = http.get("/api/v1/sessions/live-2/stream", headers={**AUTH, "Last-Event-ID": "x'; drop"})
        assert res.status_code == 422 and "Last-Event-ID" in res.json()["detail"]
        assert http.get("/api/v1/sessions/live-2/stream", headers={**AUTH, "Last-Event-ID": "9" * 40}).status_code == 422


def test_the_feed_is_in_storing_order_and_resumes_after_a_seq(store):
    """A held place (seq 2, stored after 3 and 4) still comes, after them; resuming after seq 4 gives it."""
    store.write([StepEvent(session_id="held", seq=s, type="think", content=str(s)) for s in (1, 3, 4)])
    store.write([StepEvent(session_id="held", seq=2, type="tool_call", tool_name="slow")])
    store.write([StepEvent(session_id="other", seq=1, type="think")])
    feed = store.step_feed("held")
    assert [s.seq for _, s in feed] == [1, 3, 4, 2]
    assert [c for c, _ in feed] == sorted(c for c, _ in feed)
    assert [s.seq for _, s in store.step_feed("held", store.feed_cursor("held", 4))] == [2]
    assert [s.seq for _, s in store.step_feed("held", store.feed_cursor("held", 2))] == []
    assert store.feed_cursor("held", 99) == 0 and store.feed_cursor("held", None) == 0
    assert [s.seq for _, s in store.step_feed("held", limit=2, newest=True)] == [4, 2]
    assert store.feed_head("held") == feed[-1][0]
    assert [s.seq for _, s in store.step_feed("held", 0, limit=2)] == [1, 3]


def test_a_client_that_stops_reading_is_dropped_past_its_buffer_and_resumes_from_the_database(store):
    """The poller offers each new page to every client; one that sends nothing on holds at most its buffer,
    is then dropped (its buffer freed, its stream ended), and a reconnect after its last event misses nothing."""
    from replay_core.server.stream import StepHub

    store.write([StepEvent(session_id="busy", seq=1, type="think", content="first")])

    async def scenario() -> tuple[list[int], int, list[int]]:
        hub = StepHub(lambda: store, poll_s=0.01, buffer_bytes=20_000)
        stalled = hub.events("busy", 0, heartbeat_s=0.05)
        assert await anext(stalled) == b"retry: 2000\n\n"
        first = await anext(stalled)  # the backlog's one step; then it reads no more
        sent = [int(first.split(b"\n", 1)[0].removeprefix(b"id: "))]
        peak = 0
        for page in range(10):  # 10 pages of 40 steps of ~1 KB: 400 KB, twenty times its buffer
            await asyncio.to_thread(
                store.write,
                [StepEvent(session_id="busy", seq=2 + page * 40 + i, type="think", content="x" * 1000) for i in range(40)],
            )
            await asyncio.sleep(0.05)
            peak = max(peak, hub.buffered())
        async for chunk in stalled:  # it reads again: what was kept, then the end
            if chunk.startswith(b"id: "):
                sent.append(int(chunk.split(b"\n", 1)[0].removeprefix(b"id: ")))
        assert hub.buffered() == 0 and not hub._watches  # dropped and freed, its poller stopped
        resumed = hub.events("busy", store.feed_cursor("busy", sent[-1]), heartbeat_s=0.05)
        await anext(resumed)
        rest = []
        while len(sent) + len(rest) < 401:
            chunk = await anext(resumed)
            if chunk.startswith(b"id: "):
                rest.append(int(chunk.split(b"\n", 1)[0].removeprefix(b"id: ")))
        await resumed.aclose()
        return sent, peak, rest

    sent, peak, rest = asyncio.run(scenario())
    assert peak <= 20_000 + 45_000  # its buffer, and at most the one page that passed it
    assert sent + rest == list(range(1, 402))  # nothing lost, nothing twice


def test_a_client_whose_socket_takes_nothing_is_let_go_after_the_send_timeout(store):
    """A reader that stopped reading leaves every write waiting on its full socket: after the send timeout
    the response ends (the server closes the connection), its generator is closed and its poller stops."""
    from replay_core.server.stream import EventStream, StepHub

    store.write([StepEvent(session_id="stuck", seq=1, type="think", content="first")])

    async def scenario() -> tuple[list[dict], float, int]:
        hub = StepHub(lambda: store, poll_s=0.01)
        sent: list[dict] = []
        never = asyncio.Event()

        async def send(message: dict) -> None:
            if len(sent) >= 3:  # start, retry line, the first step: then the socket takes nothing more
                await never.wait()
            sent.append(message)

        async def receive() -> dict:
            await never.wait()
            return {"type": "http.disconnect"}

        response = EventStream(hub.events("stuck", 0, heartbeat_s=0.05), send_timeout=0.3)
        started = time.monotonic()
        scope = {"type": "http", "asgi": {"spec_version": "2.4"}}
        await asyncio.wait_for(response(scope, receive, send), 10)
        return sent, time.monotonic() - started, len(hub._watches)

    sent, took, watches = asyncio.run(scenario())
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body", "http.response.body"]
    assert not any(m.get("more_body") is False for m in sent)  # never told complete: uvicorn closes the connection
    assert 0.3 <= took < 5 and watches == 0

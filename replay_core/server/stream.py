"""`GET /api/v1/sessions/{id}/stream`: a run's steps as Server-Sent Events, as they are stored.

Across processes by polling the database, which every replica and writer shares (no
LISTEN/NOTIFY: SQLite has none, and a poll of one indexed range is cheap): one poller per
watched run in this process, however many clients watch it, fans new steps out to them.
Each event's `id` is the step's seq; a client that reconnects with `Last-Event-ID` (or
`?last_event_id=`) resumes after that step in storing order, without gaps or doubles (see
`Store.step_feed`). A new client first reads its backlog itself, after joining the poller,
and drops what it already sent, so nothing stored between the two is lost. Every database
read runs in a worker thread; the event loop only sleeps and moves bytes.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Callable

import orjson

from ..events import StepEvent
from ..storage.store import Store

log = logging.getLogger("agent_replay.stream")
POLL_S = float(os.environ.get("AGENT_REPLAY_STREAM_POLL_S", "0.1"))  # how often a watched run is read
HEARTBEAT_S = float(os.environ.get("AGENT_REPLAY_STREAM_HEARTBEAT_S", "15"))  # a comment line when nothing else came
PAGE = 500  # steps per read


def sse_step(step: StepEvent) -> bytes:
    return b"id: %d\nevent: step\ndata: %s\n\n" % (step.stored_seq, orjson.dumps(step.to_json_dict()))


class _Watch:
    """One run's poller and the queues of the clients watching it."""

    def __init__(self, head: int):
        self.head = head
        self.queues: set[asyncio.Queue] = set()
        self.task: asyncio.Task | None = None


class StepHub:
    """The pollers of this process, one per watched run, stopped when its last client leaves."""

    def __init__(self, store: Callable[[], Store], poll_s: float = POLL_S):
        self.store, self.poll_s = store, poll_s
        self._watches: dict[str, _Watch] = {}
        self._lock = asyncio.Lock()

    async def join(self, session_id: str) -> asyncio.Queue:
        """A queue receiving every step stored from now on (lists of (cursor, step))."""
        async with self._lock:
            watch = self._watches.get(session_id)
            if watch is None:
                watch = _Watch(await asyncio.to_thread(self.store().feed_head, session_id))
                self._watches[session_id] = watch
                watch.task = asyncio.create_task(self._poll(session_id, watch))
            queue: asyncio.Queue = asyncio.Queue()
            watch.queues.add(queue)
            return queue

    def leave(self, session_id: str, queue: asyncio.Queue) -> None:
        watch = self._watches.get(session_id)
        if watch is None:
            return
        watch.queues.discard(queue)
        if not watch.queues:
            del self._watches[session_id]
            if watch.task is not None:
                watch.task.cancel()

    async def _poll(self, session_id: str, watch: _Watch) -> None:
        store = self.store()
        while True:
            try:
                batch = await asyncio.to_thread(store.step_feed, session_id, watch.head, limit=PAGE)
            except Exception:  # the database away for a moment: try again next round
                log.exception("stream: reading run %r failed", session_id)
                batch = []
            if batch:
                watch.head = batch[-1][0]
                for queue in watch.queues:
                    queue.put_nowait(batch)
            if len(batch) < PAGE:
                await asyncio.sleep(self.poll_s)

    async def events(self, session_id: str, after: int, heartbeat_s: float = HEARTBEAT_S) -> AsyncIterator[bytes]:
        """The stream's bytes: the backlog after cursor `after`, then each new step, heartbeats between."""
        queue = await self.join(session_id)
        try:
            yield b"retry: 2000\n\n"
            store, sent = self.store(), after
            while True:  # the backlog, read after joining: what lands meanwhile is in both, sent once
                batch = await asyncio.to_thread(store.step_feed, session_id, sent, limit=PAGE)
                for cursor, step in batch:
                    yield sse_step(step)
                    sent = cursor
                if len(batch) < PAGE:
                    break
            while True:
                try:
                    batch = await asyncio.wait_for(queue.get(), heartbeat_s)
                except TimeoutError:
                    yield b": heartbeat\n\n"
                    continue
                for cursor, step in batch:
                    if cursor > sent:
                        yield sse_step(step)
                        sent = cursor
        finally:
            self.leave(session_id, queue)

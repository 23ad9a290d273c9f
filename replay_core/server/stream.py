"""`GET /api/v1/sessions/{id}/stream`: a run's steps as Server-Sent Events, as they are stored.

Across processes by polling the database, which every replica and writer shares (no
LISTEN/NOTIFY: SQLite has none, and a poll of one indexed range is cheap): one poller per
watched run in this process, however many clients watch it, fans new steps out to them.
Each event's `id` is the step's seq; a client that reconnects with `Last-Event-ID` (or
`?last_event_id=`) resumes after that step in storing order, without gaps or doubles (see
`Store.step_feed`). A new client first reads its backlog itself, after joining the poller,
and drops what it already sent, so nothing stored between the two is lost. Every database
read runs in a worker thread; the event loop only sleeps and moves bytes.

Each step is encoded once for all its watchers. A client that reads slower than its run grows
(or stops reading) holds at most AGENT_REPLAY_STREAM_CLIENT_BUFFER_MB (default 4) of events not
yet sent: past that it is dropped, its buffer freed, and its stream ends; the browser's
EventSource reconnects with Last-Event-ID and reads what it missed from the database.

A client that stops reading also stops the server's writes to it, once the socket's buffers are
full: one write waiting longer than AGENT_REPLAY_STREAM_SEND_TIMEOUT_S (default 30) closes the
connection (`EventStream`), so a stalled reader never holds its stream, its poller or its
socket for good.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import deque
from collections.abc import AsyncIterator, Callable

import orjson
from starlette.responses import StreamingResponse
from starlette.types import Message, Send

from ..events import StepEvent
from ..storage.store import Store

log = logging.getLogger("agent_replay.stream")
POLL_S = float(os.environ.get("AGENT_REPLAY_STREAM_POLL_S", "0.1"))  # how often a watched run is read
HEARTBEAT_S = float(os.environ.get("AGENT_REPLAY_STREAM_HEARTBEAT_S", "15"))  # a comment line when nothing else came
PAGE = 500  # steps per read


def client_buffer_bytes() -> int:
    """What one client may have waiting to be sent before it is dropped: AGENT_REPLAY_STREAM_CLIENT_BUFFER_MB (default 4)."""
    return int(float(os.environ.get("AGENT_REPLAY_STREAM_CLIENT_BUFFER_MB", "4")) * 1024 * 1024)


def send_timeout_s() -> float:
    """How long one write to a stream's client may wait on its socket: AGENT_REPLAY_STREAM_SEND_TIMEOUT_S (default 30)."""
    return float(os.environ.get("AGENT_REPLAY_STREAM_SEND_TIMEOUT_S", "30"))


class EventStream(StreamingResponse):
    """An SSE response whose every write has a deadline: a client that has read nothing for that long is
    let go (its generator closed, so it leaves its run's poller) and the server closes the connection."""

    def __init__(self, content, *, send_timeout: float | None = None, **kwargs):
        super().__init__(content, media_type="text/event-stream", **kwargs)
        self.send_timeout = send_timeout_s() if send_timeout is None else send_timeout

    async def stream_response(self, send: Send) -> None:
        async def timed(message: Message) -> None:
            await asyncio.wait_for(send(message), self.send_timeout)

        try:
            await super().stream_response(timed)
        except TimeoutError:
            log.warning("stream: a client read nothing for %g s and was let go", self.send_timeout)
            close = getattr(self.body_iterator, "aclose", None)
            if close is not None:
                await close()


def sse_step(step: StepEvent) -> bytes:
    return b"id: %d\nevent: step\ndata: %s\n\n" % (step.stored_seq, orjson.dumps(step.to_json_dict()))


Batch = list[tuple[int, bytes]]  # (cursor, encoded event) in storing order


class _Client:
    """One watcher's events not yet sent, bounded by `limit` bytes; `dropped` once it fell that far behind."""

    def __init__(self, limit: int):
        self.limit = limit
        self.batches: deque[tuple[Batch, int]] = deque()
        self.buffered = 0
        self.dropped = False
        self.ready = asyncio.Event()

    def offer(self, batch: Batch, size: int) -> bool:
        """Queue a batch; False (and the buffer freed) when it would pass the limit. A batch alone may pass it."""
        if self.batches and self.buffered + size > self.limit:
            self.batches.clear()
            self.buffered = 0
            self.dropped = True
            self.ready.set()
            return False
        self.batches.append((batch, size))
        self.buffered += size
        self.ready.set()
        return True

    async def next(self, timeout: float) -> Batch | None:
        """The next batch, [] when `timeout` passed with none, None once dropped."""
        if not self.batches and not self.dropped:
            self.ready.clear()
            try:
                await asyncio.wait_for(self.ready.wait(), timeout)
            except TimeoutError:
                return []
        if self.dropped:
            return None
        batch, size = self.batches.popleft()
        self.buffered -= size
        return batch


class _Watch:
    """One run's poller and the clients watching it."""

    def __init__(self, head: int):
        self.head = head
        self.clients: set[_Client] = set()
        self.task: asyncio.Task | None = None


class StepHub:
    """The pollers of this process, one per watched run, stopped when its last client leaves."""

    def __init__(self, store: Callable[[], Store], poll_s: float = POLL_S, buffer_bytes: int | None = None):
        self.store, self.poll_s = store, poll_s
        self.buffer_bytes = client_buffer_bytes() if buffer_bytes is None else buffer_bytes
        self._watches: dict[str, _Watch] = {}
        self._lock = asyncio.Lock()

    async def join(self, session_id: str) -> _Client:
        """A client receiving every step stored from now on, until it leaves or falls too far behind."""
        async with self._lock:
            watch = self._watches.get(session_id)
            if watch is None:
                watch = _Watch(await asyncio.to_thread(self.store().feed_head, session_id))
                self._watches[session_id] = watch
                watch.task = asyncio.create_task(self._poll(session_id, watch))
            client = _Client(self.buffer_bytes)
            watch.clients.add(client)
            return client

    def leave(self, session_id: str, client: _Client) -> None:
        watch = self._watches.get(session_id)
        if watch is None:
            return
        watch.clients.discard(client)
        if not watch.clients and self._watches.get(session_id) is watch:
            del self._watches[session_id]
            if watch.task is not None:
                watch.task.cancel()

    def buffered(self) -> int:
        """Bytes waiting to be sent to this process's stream clients, all runs together."""
        return sum(c.buffered for w in self._watches.values() for c in w.clients)

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
                encoded = [(cursor, sse_step(step)) for cursor, step in batch]
                size = sum(len(b) for _, b in encoded)
                for client in list(watch.clients):
                    if not client.offer(encoded, size):
                        log.warning("stream: a client of run %r fell %d bytes behind and was dropped", session_id, size)
                        watch.clients.discard(client)
            if len(batch) < PAGE:
                await asyncio.sleep(self.poll_s)

    async def events(self, session_id: str, after: int, heartbeat_s: float = HEARTBEAT_S) -> AsyncIterator[bytes]:
        """The stream's bytes: the backlog after cursor `after`, then each new step, heartbeats between."""
        client = await self.join(session_id)
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
            while (live := await client.next(heartbeat_s)) is not None:  # None: dropped, the client reconnects
                if not live:
                    yield b": heartbeat\n\n"
                for cursor, event in live:
                    if cursor > sent:
                        yield event
                        sent = cursor
        finally:
            self.leave(session_id, client)

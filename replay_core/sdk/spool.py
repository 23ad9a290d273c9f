"""Delivery of recorded events: batched in memory, sent on a background thread, spooled on failure.

Recording never waits on storage and never fails because of it. A batch the sink
cannot take goes to a spool file and is sent again (oldest first) on a later flush;
the pipeline drops events it already holds (event ids), so sending again is safe and
nothing is stored twice. A spool left behind by a process that ended before it could
deliver is adopted by the next recorder for the same target.
"""

from __future__ import annotations

import atexit
import fcntl
import hashlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import orjson

from ..events import EventError, parse_event
from ..ingest.formats import Event
from .sinks import SinkRejected, SinkUnavailable

log = logging.getLogger("agent_replay.recorder")
MAX_BACKOFF_S = 60.0


def default_spool_dir() -> Path:
    """`AGENT_REPLAY_SPOOL_DIR`, else `~/.cache/agent-replay/spool` (XDG_CACHE_HOME honoured)."""
    explicit = os.environ.get("AGENT_REPLAY_SPOOL_DIR")
    if explicit:
        return Path(explicit).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "agent-replay" / "spool"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


class Spool:
    """Undelivered events as native JSON Lines in `<dir>/<target hash>-<pid>-<nonce>.jsonl`.

    The owner holds an exclusive lock on its file, so a file nobody locks was left by a
    process that has ended. Files are readable by their user only: they hold events
    before redaction. Events refused by the sink go to `<target hash>-rejected.jsonl`.
    """

    def __init__(self, directory: str | Path, key: str):
        self.dir = Path(directory)
        self.prefix = hashlib.sha1(key.encode()).hexdigest()[:12]
        self.path = self.dir / f"{self.prefix}-{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl"
        self.rejected_path = self.dir / f"{self.prefix}-rejected.jsonl"
        self._fd: int | None = None
        self._sent = 0  # bytes at the head of the file already delivered

    def _open(self) -> int:
        if self._fd is None:
            self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self._fd = fd
        return self._fd

    def _size(self) -> int:
        return os.fstat(self._fd).st_size if self._fd is not None else 0

    @property
    def pending(self) -> bool:
        return self._size() > self._sent

    def append(self, events: Sequence[Event]) -> None:
        _write_all(self._open(), b"".join(orjson.dumps(ev.to_json_dict()) + b"\n" for ev in events))

    def batches(self, size: int) -> Iterator[tuple[list[Event], int]]:
        """Undelivered events, oldest first, `size` at a time, each with the offset marking it delivered."""
        if self._fd is None:  # nothing spooled yet
            return
        data = os.pread(self._fd, self._size() - self._sent, self._sent)
        batch: list[Event] = []
        offset = self._sent
        for line in data.splitlines(keepends=True):
            offset += len(line)
            try:
                batch.append(parse_event(orjson.loads(line)))
            except (orjson.JSONDecodeError, EventError) as exc:
                self.reject_raw(line.rstrip(b"\n"), f"unreadable spool line: {exc}")
            if len(batch) >= size:
                yield batch, offset
                batch = []
        if batch or offset > self._sent:
            yield batch, offset

    def delivered(self, offset: int) -> None:
        self._sent = offset
        if self._fd is not None and offset >= self._size():
            os.ftruncate(self._fd, 0)
            self._sent = 0

    def reject(self, events: Sequence[Event], reason: str) -> None:
        for ev in events:
            self.reject_raw(orjson.dumps(ev.to_json_dict()), reason)

    def reject_raw(self, line: bytes, reason: str) -> None:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.rejected_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            _write_all(fd, orjson.dumps({"reason": reason, "event": line.decode(errors="replace")}) + b"\n")
        finally:
            os.close(fd)

    def rejected_count(self) -> int:
        """How many refused events the dead-letter file holds."""
        try:
            with open(self.rejected_path, "rb") as fh:
                return sum(1 for _ in fh)
        except FileNotFoundError:
            return 0

    def rejected_reasons(self, skip: int = 0) -> list[str]:
        """The reasons of the dead-letter file's entries, after the first `skip`."""
        try:
            with open(self.rejected_path, "rb") as fh:
                lines = fh.readlines()[skip:]
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            try:
                out.append(str(orjson.loads(line).get("reason")))
            except (orjson.JSONDecodeError, AttributeError):
                out.append("unreadable dead-letter line")
        return out

    def adopt_orphans(self) -> int:
        """Move the events of spool files no live recorder holds into this one; returns how many."""
        adopted = 0
        for path in sorted(self.dir.glob(f"{self.prefix}-*.jsonl")):
            if path in (self.path, self.rejected_path):
                continue
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if os.fstat(fd).st_ino != os.stat(path).st_ino:
                    continue  # adopted and removed by someone else meanwhile
                data = os.pread(fd, os.fstat(fd).st_size, 0)
                whole = data[: data.rfind(b"\n") + 1]
                if whole:
                    _write_all(self._open(), whole)
                    adopted += whole.count(b"\n")
                if data[len(whole) :].strip():
                    self.reject_raw(data[len(whole) :], "incomplete last line of an abandoned spool")
                os.unlink(path)
            except (BlockingIOError, FileNotFoundError):
                continue  # its owner is alive, or it is gone
            finally:
                os.close(fd)
        return adopted

    def close(self) -> None:
        """Release the file: removed when empty, else kept (undelivered part only) for adoption."""
        if self._fd is None:
            return
        if not self.pending:
            os.unlink(self.path)
        elif self._sent:
            rest = os.pread(self._fd, self._size() - self._sent, self._sent)
            tmp = self.path.with_suffix(".tmp")
            tmp_fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                _write_all(tmp_fd, rest)
            finally:
                os.close(tmp_fd)
            os.replace(tmp, self.path)
        os.close(self._fd)
        self._fd, self._sent = None, 0


class Shipper:
    """Buffers events and sends them every `batch_size` events or `interval` seconds.

    Order is kept: while anything waits in the spool, new batches queue behind it. After
    a failure the background thread waits (1 s doubling to a minute) before trying the
    spool again; an explicit `flush()` always tries.
    """

    def __init__(
        self, sink, spool: Spool, *, batch_size: int = 200, interval: float = 1.0, before_send: Callable[[], None] | None = None
    ):
        self.sink, self.spool = sink, spool
        self.batch_size, self.interval = batch_size, interval
        self.before_send = before_send
        self._buffer: list[Event] = []
        self._cond = threading.Condition()
        self._send_lock = threading.Lock()
        self._stopping = self._closed = False
        self._all_delivered = True  # as of close
        self._failures = 0
        self._retry_at = 0.0
        adopted = self._guarded(spool.adopt_orphans)
        if adopted:
            log.warning("agent-replay: %d undelivered events of an earlier process will be sent now", adopted)
        self._thread = threading.Thread(target=self._run, name="agent-replay-shipper", daemon=True)
        atexit.register(self.close)
        self._thread.start()

    def put(self, events: Sequence[Event]) -> None:
        if not events:
            return
        with self._cond:
            if not self._closed:
                self._buffer.extend(events)
                if len(self._buffer) >= self.batch_size:
                    self._cond.notify()
                return
        with self._send_lock:  # recorded after close: keep it for the next recorder
            self._all_delivered = False
            log.warning("agent-replay: %d events recorded after close were spooled to %s", len(events), self.spool.path)
            self.spool.append(events)
            self.spool.close()

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._stopping and len(self._buffer) < self.batch_size:
                    self._cond.wait(self.interval)
                if self._stopping:
                    return
            self.flush(force=False)

    def flush(self, *, force: bool = True) -> bool:
        """Send what is buffered and spooled; True when nothing is left undelivered."""
        if self._closed:  # nothing to send: what came after close went straight to the spool
            return self._all_delivered
        with self._send_lock:
            if self.before_send is not None:
                self.before_send()
            with self._cond:
                batch, self._buffer = self._buffer, []
            ok = not self.spool.pending
            if not ok and (force or time.monotonic() >= self._retry_at):
                ok = self._attempt(self._send_spooled)
            if batch and not (ok and self._attempt(lambda: self._send(batch))):
                self._keep(batch)
                ok = False
            return ok and not self.spool.pending

    def _attempt(self, send: Callable[[], None]) -> bool:
        try:
            send()
        except SinkUnavailable as exc:
            if self._failures == 0:
                log.warning("agent-replay: storage unavailable, events kept in %s: %s", self.spool.path, exc)
            self._failures += 1
            self._retry_at = time.monotonic() + min(MAX_BACKOFF_S, self.interval * 2 ** (self._failures - 1))
            return False
        if self._failures:
            log.warning("agent-replay: storage available again after %d failed attempts", self._failures)
            self._failures = 0
        return True

    def _send(self, events: list[Event]) -> None:
        """Send; a refused batch is halved until the refused events are alone, and those set aside."""
        try:
            self.sink.send(events)
        except SinkRejected as exc:
            if exc.refused is not None:  # the sink narrowed it down and delivered the rest
                for event, reason in exc.refused:
                    log.error("agent-replay: event refused, kept in %s: %s", self.spool.rejected_path, reason)
                    self.spool.reject([event], reason)
                return
            if len(events) == 1:
                log.error("agent-replay: event refused, kept in %s: %s", self.spool.rejected_path, exc)
                self.spool.reject(events, str(exc))
                return
            half = len(events) // 2
            self._send(events[:half])
            self._send(events[half:])

    def _send_spooled(self) -> None:
        for events, offset in self.spool.batches(self.batch_size):
            if events:
                self._send(events)
            self.spool.delivered(offset)

    def _keep(self, batch: list[Event]) -> None:
        try:
            self.spool.append(batch)
        except OSError as exc:  # no disk either: hold them in memory, in order, and say so
            log.error("agent-replay: cannot write the spool %s (%s): %d events held in memory", self.spool.path, exc, len(batch))
            with self._cond:
                self._buffer[:0] = batch

    def _guarded(self, fn: Callable[[], int]) -> int:
        try:
            return fn()
        except OSError as exc:
            log.error("agent-replay: spool directory %s unusable: %s", self.spool.dir, exc)
            return 0

    def close(self) -> bool:
        """Stop the thread, send what is left (spooling it if that fails); True when all was delivered."""
        with self._cond:
            if self._stopping:
                return self._all_delivered
            self._stopping = True
            self._cond.notify()
        self._thread.join()
        delivered = self.flush()
        with self._cond:
            self._closed = True
            leftover, self._buffer = self._buffer, []
        with self._send_lock:
            if leftover:  # only when the spool could not be written either
                self._keep(leftover)
            self.sink.close()
            self.spool.close()
            self._all_delivered = delivered and not leftover
        atexit.unregister(self.close)
        return self._all_delivered

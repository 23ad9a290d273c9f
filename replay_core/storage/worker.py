"""Work on a Store done in a worker process, on its own Store over the same database URL.

The server is one Python process: whatever CPU-bound work it does in a thread (storing a batch,
receiving a big OTLP body) shares the GIL with the event loop and with every other request, so
it all runs on one of the machine's cores. A worker (`python -m replay_core.storage.worker`: its
own interpreter, no fork of a threaded server, no re-import of the server's main script) runs
one job at a time on another core while the server's thread waits on the pipe, GIL released.

A job is a function `f(store, *args)` named "module:function", resolved in the worker. What it
raises comes back as the same exception (WriteRefused, OtlpError, the database's own errors), so
a route answers as it would in the thread; an exception that does not survive pickling comes
back as ValueError or RuntimeError with its message. The server's `AGENT_REPLAY_*` settings go
with every job (redaction rules may change while the worker runs).

A worker that dies (killed, out of memory) rolled its transaction back: `run` raises WorkerLost
and the caller does the job in its own thread; the next job starts a new worker. A server forked
after starting one (a pre-loading process manager) starts its own. A database only this process
can open (an in-memory SQLite database, or one on an engine the caller made) has no `shared_url`:
its work stays in the thread.
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib
import os
import pickle
import struct
import subprocess
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from .actor import Actor
from .store import Store, WriteBatch, WriteResult

if TYPE_CHECKING:
    from .writing import Arrangement

_ENV_PREFIX = "AGENT_REPLAY_"
_RUNNING: list[StoreWorker] = []  # stopped at exit


class WorkerLost(Exception):
    """The worker died or its pipe broke before answering: its transaction was rolled back."""


def shared_url(store: Store) -> str | None:
    """The URL another process opens the same database by, as this one does; None for a database only
    this process can see, or one opened on an engine of the caller's (its settings would not travel)."""
    if store.engine_given:
        return None
    url = store.engine.url
    if url.get_backend_name() == "sqlite" and (url.database in (None, "", ":memory:") or "memory" in str(url.query)):
        return None
    return url.render_as_string(hide_password=False)


@dataclass
class _Process:
    process: subprocess.Popen
    jobs: IO[bytes]  # its stdin, where jobs go
    answers: IO[bytes]  # its answers come on a pipe of their own: nothing it prints can garble them
    owner: int  # the pid that started it


class StoreWorker:
    """One worker process, started on first use (or by `start`), one job at a time through its pipe.
    `warm` ("module:function", no arguments) runs in the worker before it takes its first job, so the
    first real job does not pay for the imports and the first statements."""

    def __init__(self, warm: str | None = None):
        self.warm = warm
        self.lock = threading.Lock()  # one job at a time through the one pipe
        self.current: _Process | None = None
        self._starting = threading.Event()  # set while `start_soon`'s thread starts it
        _RUNNING.append(self)

    def start(self) -> None:
        """Start the worker now (its imports take a second), so the first job does not wait for them."""
        with self.lock:
            self._process()

    def started(self) -> bool:
        """Whether this process has a worker running (it may still be warming up)."""
        worker = self.current
        return worker is not None and worker.owner == os.getpid() and worker.process.poll() is None

    def start_soon(self) -> None:
        """Start the worker on a thread of its own (one at a time): the caller does its job itself meanwhile."""
        if self._starting.is_set():
            return
        self._starting.set()

        def starting() -> None:
            try:
                self.start()
            finally:
                self._starting.clear()

        threading.Thread(target=starting, name="store-worker-start", daemon=True).start()

    def run(self, url: str, job: str, *args: Any) -> Any:
        """`job(store, *args)` in the worker on its Store for `url`; its value, or its exception raised here."""
        env = {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIX)}
        with self.lock:
            worker = self._process()
            try:
                _send(worker.jobs, (url, job, args, env))
                ok, value = _read(worker.answers)
            except (OSError, EOFError, pickle.UnpicklingError) as exc:
                self._stop()
                raise WorkerLost(str(exc)) from exc
        if ok:
            return value
        raise value

    def stop(self) -> None:
        with self.lock:
            self._stop()

    def _process(self) -> _Process:
        """The running worker (started if there is none); call with the lock held."""
        if self.current is not None and self.current.owner != os.getpid():  # inherited through a fork: the parent's
            for pipe in (self.current.jobs, self.current.answers):
                pipe.close()
            self.current = None
        if self.current is None or self.current.process.poll() is not None:
            if self.current is not None:
                self._stop()
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))  # the server's modules
            read_end, write_end = os.pipe()
            try:
                process = subprocess.Popen(
                    [sys.executable, "-m", __name__, str(write_end), self.warm or ""],
                    stdin=subprocess.PIPE,
                    pass_fds=(write_end,),
                    env=env,
                )
            except BaseException:
                os.close(read_end)
                raise
            finally:
                os.close(write_end)
            jobs = process.stdin
            assert jobs is not None  # started with stdin=PIPE
            self.current = _Process(process, jobs, os.fdopen(read_end, "rb"), os.getpid())
        return self.current

    def _stop(self) -> None:
        """End the worker (its stdin closed: it leaves its loop); call with the lock held, or at exit."""
        worker, self.current = self.current, None
        if worker is None:
            return
        for pipe in (worker.jobs, worker.answers):
            try:
                pipe.close()
            except OSError:
                pass
        if worker.owner != os.getpid():
            return
        try:
            worker.process.wait(5)
        except subprocess.TimeoutExpired:
            worker.process.kill()
            worker.process.wait()


@atexit.register
def _stop_all() -> None:
    for worker in _RUNNING:
        worker._stop()


def _send(pipe: IO[bytes], value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    pipe.write(struct.pack("<Q", len(data)))
    pipe.write(data)
    pipe.flush()


def _read(pipe: IO[bytes]) -> Any:
    head = pipe.read(8)
    if len(head) < 8:
        raise EOFError("the other side closed the pipe")
    size = struct.unpack("<Q", head)[0]
    data = pipe.read(size)
    if len(data) < size:
        raise EOFError("the other side closed the pipe")
    return pickle.loads(data)


# ---------------------------------------------------------------- the HTTP routes' writes

# PostgreSQL takes concurrent writers, and the HTTP routes' writes were bound by one transaction at a time
# (the worker's Python and the database's server waiting on each other: 8 writers 16.4k steps/s on 2 cores,
# two lanes of disjoint runs 35k in the same minutes); SQLite has one writer at a time.
WRITE_LANES = {"postgresql": 2, "sqlite": 1}
WRITES = tuple(StoreWorker(warm=f"{__name__}:warm_writes") for _ in range(max(WRITE_LANES.values())))


class OffloadedWrites:
    """`store` as the HTTP routes' joined writes see it: `write_batches` runs in its lane's WRITES worker when
    it can open the database, so the server's process is left the requests and their validation
    (the two use both cores); in the thread otherwise, when the worker is lost, and until it runs: the
    first write starts it (not the server's start, whose first page it slowed by 0.2 s on 2 cores)."""

    def __init__(self, store: Store, lane: int = 0, lanes: int = 1):
        self.store, self.lanes = store, WRITES[:lanes]
        self.worker = self.lanes[lane]

    def write_batches(self, batches, *, counts: list[tuple[int, int]] | None = None, **options: Any) -> WriteResult:
        batches = list(batches)
        url = shared_url(self.store)
        if url is not None and not self.worker.started():
            for worker in self.lanes:  # the other lanes' with it
                if not worker.started():
                    worker.start_soon()
        elif url is not None:
            try:
                result, got = self.worker.run(url, f"{__name__}:write_batches", batches, options)
            except WorkerLost:
                pass  # rolled back: written here instead (what it may have committed first comes back as duplicates)
            else:
                if counts is not None:
                    counts.extend(got)
                return result
        return self.store.write_batches(batches, counts=counts, **options)


def write_batches(store: Store, batches: list[WriteBatch], options: dict) -> tuple[WriteResult, list[tuple[int, int]]]:
    """The job: `Store.write_batches` with each batch's counts."""
    counts: list[tuple[int, int]] = []
    return store.write_batches(batches, counts=counts, **options), counts


def warm_writes() -> None:
    """What the first write would import while its request waits: the contract's models (a batch's ends travel
    as them; the Store came with this module). Imports only: a run written into a throwaway in-memory database
    cost as much again (migrating it imports alembic) and saved the first real write ~10 ms, as SQLAlchemy
    compiles its statements per engine."""
    from .. import events  # noqa: F401


class JoinedWrites:
    """Concurrent requests' batches written in one transaction: a database takes one writer at a
    time anyway (SQLite's lock, this process's `Store` lock), so while one transaction commits,
    the batches that arrive meanwhile queue, and the next thread to get the lock writes all of
    them at once, paying once for what a write costs whatever its size (BEGIN and commit, the
    daily cells' refresh, the search index). Each caller waits until its own batch is committed
    and gets its own counts; when a joined write fails, each batch is written again alone, so a
    refusal (409, 422) or a failure reaches only the request it belongs to and the others are
    stored as they would have been one by one.

    `lanes()` gives the stores to write with: more than one (PostgreSQL, which takes concurrent
    writers, `WRITE_LANES`) lets that many transactions run at once, each of runs no other lane
    is writing; a batch of a run in flight waits for that write, and so does every later batch
    that shares a run with it, so a run's batches are stored in the order they came."""

    MAX_STEPS = 10_000  # per transaction: a joined write stays short for the writers behind it

    def __init__(self, lanes: Callable[[], Sequence[Any]], *, default_source: str, refuse_conflicts: bool):
        self._lanes = lanes
        self.options = {"default_source": default_source, "refuse_conflicts": refuse_conflicts}
        self._queued: list[tuple[WriteBatch, Future]] = []
        self._state = threading.Condition(threading.Lock())  # guards the queue, the lanes in use and the runs in flight
        self._writing: set[int] = set()  # lanes in use
        self._in_flight: set[str] = set()  # runs being written

    def write(self, batch: WriteBatch) -> WriteResult:
        """Store `batch` (alone or with others queued meanwhile); blocks until it is committed."""
        mine: Future = Future()
        lanes = self._lanes()
        with self._state:
            self._queued.append((batch, mine))
            while not mine.done():  # else a writer before us took ours along
                lane = next((n for n in range(len(lanes)) if n not in self._writing), None)
                group = self._take() if lane is not None else []
                if lane is None or not group:  # every lane busy, or what is queued waits for runs in flight
                    self._state.wait()
                    continue
                runs = {sid for queued, _ in group for sid in queued.order}
                self._writing.add(lane)
                self._in_flight |= runs
                self._state.release()
                try:
                    self._write(lanes[lane], group)
                finally:
                    self._state.acquire()
                    self._writing.discard(lane)
                    self._in_flight -= runs
                    self._state.notify_all()
        return mine.result()

    def _take(self) -> list[tuple[WriteBatch, Future]]:
        """The queued batches of the next write, in order, up to MAX_STEPS; those of runs in flight
        (and any later one sharing a run with them) stay queued. Call with `_state` held."""
        size, group, rest, held = 0, [], [], set(self._in_flight)
        for item in self._queued:
            runs = item[0].order.keys()
            if size >= self.MAX_STEPS or not held.isdisjoint(runs):
                held.update(runs)
                rest.append(item)
                continue
            group.append(item)
            size += sum(map(len, item[0].steps.values()))
        self._queued = rest
        return group

    def _write(self, store: Any, group: list[tuple[WriteBatch, Future]]) -> None:
        if len(group) > 1:
            counts: list[tuple[int, int]] = []
            try:  # on copies: a write drops from its batch what it refused (an ended run's new end), the retry needs it
                store.write_batches([_copy(batch) for batch, _ in group], **self.options, counts=counts)
            except Exception:  # noqa: BLE001 — each batch again alone: its error (or none) is its own
                pass
            else:
                for (batch, done), (stored, dupes) in zip(group, counts, strict=True):
                    done.set_result(WriteResult(sessions=list(batch.order), steps=stored, duplicates=dupes))
                return
        for batch, done in group:
            try:
                done.set_result(store.write_batches([batch], **self.options))
            except Exception as exc:  # noqa: BLE001 — raised in the request's own thread by `write`
                done.set_exception(exc)


def _copy(batch: WriteBatch) -> WriteBatch:
    """`batch` with its own copies of what a write changes in place (the sessions' fields, the ends)."""
    return dataclasses.replace(batch, opened={sid: dict(fields) for sid, fields in batch.opened.items()}, ended=dict(batch.ended))


if TYPE_CHECKING:  # to the type checker a JoiningStore is the Store it stands in for: every call but `write` is the store's
    _StandsInForStore = Store
else:
    _StandsInForStore = object


class JoiningStore(_StandsInForStore):
    """The store as `ingest` sees it on the HTTP routes: a `write` with the joined writes' options goes
    through `JoinedWrites` (any other, e.g. a replace, for editors and audited, is written alone); the
    rest is the store's."""

    def __init__(self, store: Store, joined: JoinedWrites):
        self._store, self._joined = store, joined

    def write(
        self,
        events,
        *,
        default_source: str | None = None,
        replace: bool = False,
        refuse_conflicts: bool = False,
        audit: Actor | None = None,
        arrange: Arrangement | None = None,
    ) -> WriteResult:
        options = {"default_source": default_source, "refuse_conflicts": refuse_conflicts}
        if replace or arrange is not None or options != self._joined.options:  # an arrangement's work is its own write's
            return self._store.write(
                events,
                default_source=default_source,
                replace=replace,
                refuse_conflicts=refuse_conflicts,
                audit=audit,
                arrange=arrange,
            )
        batch = WriteBatch(audit=audit)
        for ev in events:
            batch.add(ev)
        return self._joined.write(batch) if batch.order else WriteResult()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


# ---------------------------------------------------------------- in the worker process

_STORES: OrderedDict[str, Store] = OrderedDict()  # the worker's own Stores by URL, the last few kept open
_STORES_KEPT = 4


def _store(url: str) -> Store:
    store = _STORES.pop(url, None) or Store(url, migrate=False)  # the server migrated it when it opened it
    _STORES[url] = store
    while len(_STORES) > _STORES_KEPT:
        _STORES.popitem(last=False)[1].close()
    return store


def _resolve(name: str):
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module), function)


def _work(url: str, job: str, args: tuple, env: dict[str, str]) -> tuple[bool, Any]:
    """One job under the server's settings; (True, value) or (False, the exception as it can travel)."""
    for key in [k for k in os.environ if k.startswith(_ENV_PREFIX) and k not in env]:
        del os.environ[key]
    os.environ.update(env)
    try:
        return True, _resolve(job)(_store(url), *args)
    except Exception as exc:  # noqa: BLE001 — raised again in the server
        try:
            pickle.loads(pickle.dumps(exc))
        except Exception:  # noqa: BLE001 — lossy to pickle (pydantic's errors): its message travels
            kind = ValueError if isinstance(exc, ValueError) else RuntimeError
            return False, kind(str(exc) if kind is ValueError else f"{type(exc).__name__}: {exc}")
        return False, exc


def main() -> None:
    """The worker's loop: one job in on stdin, its outcome out on the answers' pipe (its file
    descriptor is the first argument, the warm-up the second), until stdin closes."""
    requests, answers = sys.stdin.buffer, os.fdopen(int(sys.argv[1]), "wb")
    if len(sys.argv) > 2 and sys.argv[2]:
        try:
            _resolve(sys.argv[2])()
        except Exception as exc:  # noqa: BLE001 — a warm-up is an optimisation: the jobs still run (and say what fails)
            print(f"agent-replay worker: warm-up {sys.argv[2]} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    while True:
        try:
            call = _read(requests)
        except EOFError:
            return
        _send(answers, _work(*call))


if __name__ == "__main__":
    main()

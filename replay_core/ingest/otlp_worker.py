"""Big OTLP bodies are received in a worker process, so the server's own process stays free.

`otlp_receiver.receive` is CPU-bound Python (reading, mapping, redacting, storing). Run in a
thread it shares the server's GIL with the event loop: every `/healthz` or UI request answered
during a big ingest is time the ingest loses, and the other way round (a 50,000-span body posted
while /healthz was polled: 0.75 s of its 2.5 s went to the polls). One worker process
(`python -m replay_core.ingest.otlp_worker`, its own interpreter: no fork of a threaded server,
no re-import of the server's main script) does the whole receive, on its own Store over the
same database URL, on another core; the server's thread only waits on the pipe. What the worker refuses comes back as the same exception
(OtlpError, WriteRefused, the database's errors), so the route answers as it does in-thread.

Bodies under WORKER_FROM (most SDK batches) stay in the thread: the hand-off (the body copied
to the worker) would cost more than it frees. So do stores the worker cannot open (an in-memory
SQLite database). Batches of one store still go one at a time (the receiver's lock, held here
while the worker works); the worker takes one body at a time. A worker that dies (killed, out of
memory) rolled its transaction back: the body is received in the thread instead, and the next
big one starts a new worker. Writes from the worker and the
server's own are safe together (Store.write is safe across processes).
"""

from __future__ import annotations

import atexit
import os
import pickle
import struct
import subprocess
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import IO, Any

from ..storage.store import Store, WriteRefused
from .formats import otel
from .otlp_receiver import lock_of, receive as receive_here
from .pipeline import IngestReport

WORKER_FROM = 1024 * 1024  # bytes of body from which the worker process takes it
_ENV_PREFIX = "AGENT_REPLAY_"  # the settings the receive reads (redaction, idle time): the server's, per call
_WORKER: _Worker | None = None
_WORKER_LOCK = threading.Lock()  # one body at a time through the one worker (its pipe)


def start() -> None:
    """Start the worker now (it imports the receiver, ~1 s), so the first big body does not wait for it."""
    with _WORKER_LOCK:
        _worker()


def receive(store: Store, data: bytes, content_type: str) -> IngestReport:
    """`otlp_receiver.receive`, in the worker process when the body is big and the worker can open the store."""
    url = _shared_url(store)
    if len(data) < WORKER_FROM or url is None:
        return receive_here(store, data, content_type)
    env = {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIX)}
    with lock_of(store), _WORKER_LOCK:
        worker = _worker()
        try:
            _send(worker.process.stdin, (url, data, content_type, env))
            outcome, value = _read(worker.answers)
        except (OSError, EOFError, pickle.UnpicklingError):  # the worker died: its transaction was rolled back
            _stop()
            outcome = value = None
    if outcome is None:
        return receive_here(store, data, content_type)
    if outcome == "ok":
        return value
    if outcome == "refused":
        reason, field, status = value
        raise WriteRefused(reason, field=field, status=status)
    if outcome == "otlp":
        raise otel.OtlpError(value)
    if outcome == "value":
        raise ValueError(value)
    raise value


def _shared_url(store: Store) -> str | None:
    """The URL another process opens the same database by; None for one only this process can see."""
    url = store.engine.url
    if url.get_backend_name() == "sqlite" and (url.database in (None, "", ":memory:") or "memory" in str(url.query)):
        return None
    return url.render_as_string(hide_password=False)


@dataclass
class _Worker:
    process: subprocess.Popen  # requests go to its stdin
    answers: IO[bytes]  # its answers come on a pipe of their own: nothing it prints can garble them
    owner: int  # the pid that started it: a server forked after (a pre-loading process manager) starts its own


def _worker() -> _Worker:
    """The running worker (started if there is none); call with _WORKER_LOCK held."""
    global _WORKER
    if _WORKER is not None and _WORKER.owner != os.getpid():  # inherited through a fork: the parent's, not ours
        for pipe in (_WORKER.process.stdin, _WORKER.answers):
            pipe.close()
        _WORKER = None
    if _WORKER is None or _WORKER.process.poll() is not None:
        if _WORKER is not None:
            _stop()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))  # the server's modules
        read_end, write_end = os.pipe()
        try:
            process = subprocess.Popen([sys.executable, "-m", __name__, str(write_end)], stdin=subprocess.PIPE,
                                       pass_fds=(write_end,), env=env)
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        _WORKER = _Worker(process, os.fdopen(read_end, "rb"), os.getpid())
    return _WORKER


def _stop() -> None:
    """End the worker (its stdin closed: it leaves its loop); call with _WORKER_LOCK held, or at exit."""
    global _WORKER
    worker, _WORKER = _WORKER, None
    if worker is None:
        return
    for pipe in (worker.process.stdin, worker.answers):
        try:
            pipe.close()
        except OSError:
            pass
    try:
        worker.process.wait(5)
    except subprocess.TimeoutExpired:
        worker.process.kill()
        worker.process.wait()


atexit.register(_stop)


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


# ---------------------------------------------------------------------------- in the worker process

_STORES: OrderedDict[str, Store] = OrderedDict()  # the worker's own Stores by URL, the last few kept open
_STORES_KEPT = 4


def _work(url: str, data: bytes, content_type: str, env: dict[str, str]) -> tuple[str, object]:
    """One receive in the worker; its outcome as plain values (exceptions whose pickling is lossy, like
    WriteRefused's keyword fields or pydantic's errors, travel as their parts)."""
    for key in [k for k in os.environ if k.startswith(_ENV_PREFIX) and k not in env]:
        del os.environ[key]
    os.environ.update(env)
    try:
        return "ok", receive_here(_store(url), data, content_type)
    except WriteRefused as exc:
        return "refused", (exc.reason, exc.field, exc.status)
    except otel.OtlpError as exc:
        return "otlp", str(exc)
    except ValueError as exc:
        return "value", str(exc)
    except Exception as exc:  # noqa: BLE001 — the database's errors: sent whole when they survive pickling
        try:
            pickle.loads(pickle.dumps(exc))
        except Exception:  # noqa: BLE001
            return "raise", RuntimeError(f"{type(exc).__name__}: {exc}")
        return "raise", exc


def _store(url: str) -> Store:
    store = _STORES.pop(url, None) or Store(url, migrate=False)  # the server migrated it when it opened it
    _STORES[url] = store
    while len(_STORES) > _STORES_KEPT:
        _STORES.popitem(last=False)[1].close()
    return store


_WARM_BODY = (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "0123456789abcdef0123456789abcdef",'
              b' "spanId": "0123456789abcdef", "name": "warm", "startTimeUnixNano": "1764000000000000000",'
              b' "endTimeUnixNano": "1764000001000000000"}]}]}]}')


def _warm() -> None:
    """One tiny body received into a throwaway in-memory database, while the worker waits for work:
    the first real body would otherwise pay for the lazy imports, the redaction rules' compile and
    the first statements (a second of a 50,000-span body)."""
    store = Store("sqlite://")
    try:
        receive_here(store, _WARM_BODY, "application/json")
    finally:
        store.close()


def main() -> None:
    """The worker's loop: one request in on stdin, its outcome out on the answers' pipe (its file
    descriptor is the argument), until stdin closes."""
    requests, answers = sys.stdin.buffer, os.fdopen(int(sys.argv[1]), "wb")
    _warm()
    while True:
        try:
            call = _read(requests)
        except EOFError:
            return
        _send(answers, _work(*call))


if __name__ == "__main__":
    main()

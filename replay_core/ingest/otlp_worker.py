"""Big OTLP bodies are received in a worker process, so the server's own process stays free.

`otlp_receiver.receive` is CPU-bound Python (reading, mapping, redacting, storing). Run in a
thread it shares the server's GIL with the event loop: every `/healthz` or UI request answered
during a big ingest is time the ingest loses, and the other way round (a 50,000-span body posted
while /healthz was polled: 0.75 s of its 2.5 s went to the polls). One worker process
(storage.worker: its own interpreter, its own Store over the same database URL) does the whole
receive on another core; the server's thread only waits on the pipe. What the worker refuses
comes back as the same exception (OtlpError, WriteRefused, the database's errors), so the route
answers as it does in-thread.

Bodies under WORKER_FROM (most SDK batches) stay in the thread: the hand-off (the body copied
to the worker) would cost more than it frees. So do stores the worker cannot open (an in-memory
SQLite database). Batches of one store still go one at a time (the receiver's lock, held here
while the worker works); the worker takes one body at a time. A worker that dies (killed, out of
memory) rolled its transaction back: the body is received in the thread instead, and the next
big one starts a new worker. Writes from the worker and the
server's own are safe together (Store.write is safe across processes).
"""

from __future__ import annotations

from ..storage.store import Store
from ..storage.worker import StoreWorker, WorkerLost, shared_url
from .otlp_receiver import lock_of
from .otlp_receiver import receive as receive_here
from .pipeline import IngestReport

WORKER_FROM = 1024 * 1024  # bytes of body from which the worker process takes it
WORKER = StoreWorker(warm=f"{__name__}:warm")


def start() -> None:
    """Start the worker now (it imports the receiver, ~1 s), so the first big body does not wait for it."""
    WORKER.start()


def receive(store: Store, data: bytes, content_type: str) -> IngestReport:
    """`otlp_receiver.receive`, in the worker process when the body is big and the worker can open the store."""
    url = shared_url(store)
    if len(data) < WORKER_FROM or url is None:
        return receive_here(store, data, content_type)
    with lock_of(store):
        try:
            return WORKER.run(url, "replay_core.ingest.otlp_receiver:receive", data, content_type)
        except WorkerLost:  # its transaction was rolled back
            pass
    return receive_here(store, data, content_type)


_WARM_BODY = (
    b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "0123456789abcdef0123456789abcdef",'
    b' "spanId": "0123456789abcdef", "name": "warm", "startTimeUnixNano": "1764000000000000000",'
    b' "endTimeUnixNano": "1764000001000000000"}]}]}]}'
)


def warm() -> None:
    """One tiny body received into a throwaway in-memory database, while the worker waits for work:
    the first real body would otherwise pay for the lazy imports, the redaction rules' compile and
    the first statements (a second of a 50,000-span body)."""
    store = Store("sqlite://")
    try:
        receive_here(store, _WARM_BODY, "application/json")
    finally:
        store.close()

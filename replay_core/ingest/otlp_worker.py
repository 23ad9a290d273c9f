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

The worker starts with the app's first OTLP request, not with the server: its imports took CPU
from the server's first page, and an app that never receives OTLP needs none. A first body under
WORKER_FROM starts it on a thread of its own and is received here meanwhile, so it is ready for
the big bodies that follow; a first body already big waits for its start, on another core, rather
than hold the server's GIL.
"""

from __future__ import annotations

from ..storage.store import Store
from ..storage.worker import StoreWorker, WorkerLost, shared_url
from .otlp_receiver import lock_of
from .otlp_receiver import receive as receive_here
from .pipeline import IngestReport
from .redact import default_redactor

WORKER_FROM = 1024 * 1024  # bytes of body from which the worker process takes it
WORKER = StoreWorker(warm=f"{__name__}:warm")


def receive(store: Store, data: bytes, content_type: str) -> IngestReport:
    """`otlp_receiver.receive`, in the worker process when the body is big and the worker can open the store."""
    url = shared_url(store)
    if url is None:
        return receive_here(store, data, content_type)
    if len(data) < WORKER_FROM:
        if not WORKER.started():
            WORKER.start_soon()
        return receive_here(store, data, content_type)
    with lock_of(store):
        try:
            return WORKER.run(url, "replay_core.ingest.otlp_receiver:receive", data, content_type)
        except WorkerLost:  # its transaction was rolled back
            pass
    return receive_here(store, data, content_type)


def warm() -> None:
    """What the first body would import and build while its request waits: the receiver's modules and the
    redaction rules. Imports only: a tiny body received into a throwaway in-memory database cost as much again
    (migrating it imports alembic) and saved the first real body ~10 ms, as SQLAlchemy compiles its
    statements per engine."""
    default_redactor()

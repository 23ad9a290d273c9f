"""The HTTP API served by uvicorn in a thread of the test's process: a client reaches it over a loopback socket as it
reaches a served app, without a process's start (seconds of imports)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.storage.store import Store


class Served:
    """An app served by uvicorn on 127.0.0.1 (`port`, or a free one) in a thread; `lifespan="auto"` runs its
    start-up and background passes as a served app does."""

    def __init__(self, app, port: int = 0, lifespan: str = "off"):
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan=lifespan))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(30)


@contextmanager
def api_in_thread(db_url: str, token: str) -> Iterator[str]:
    """The API alone, its start-up included, on its own Store on `db_url`; yields its base URL."""
    store = Store(db_url)
    try:
        with Served(create_app(store, access=Access(api_tokens=(token,))), lifespan="auto") as base:
            yield base
    finally:
        store.close()

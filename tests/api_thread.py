"""The HTTP API served by uvicorn in a thread of the test's process, with its own Store: a client reaches
it over a loopback socket as it reaches a served app, without a process's start (seconds of imports)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from replay_core.cli.serve import free_port
from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.storage.store import Store


@contextmanager
def api_in_thread(db_url: str, token: str) -> Iterator[str]:
    """The API alone under uvicorn on a loopback port, its own Store on `db_url`; yields its base URL."""
    store = Store(db_url)
    port = free_port()
    app = create_app(store, access=Access(api_tokens=(token,)))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the served API did not start"
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
        store.close()

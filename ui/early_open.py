"""A link straight to a run starts opening it when the browser asks for the page.

Following `/timeline?session=…&step=…` (a shared link, a bookmark, a reload), the browser spends
~0.2 s loading the app (the page, its scripts, a websocket) before the page's script runs and opens
the run, and the server sits idle meanwhile. `EarlyOpen`, an ASGI middleware in front of the app,
sees the page's request and opens the run then, in a thread, into the caches the page reads: the
opened run (`ui.common.load_run`), its explanation and story, the state at the linked step. The
page then finds them made, or waits on the cache's lock for the same making, never a second one.

Only where there is no door (no password, no single sign-on): behind a door the page's request
comes before any sign-in, and the server would open runs for whoever asks. One opening at a time
(a request meanwhile opens nothing), an id of at most MAX_ID characters; the request itself is
served as it would have been, whatever happens here.
"""

from __future__ import annotations

import logging
import threading
from urllib.parse import parse_qs

MAX_ID = 256  # characters: longer is no run id
THREAD = "early open"
log = logging.getLogger(__name__)
_busy = threading.Lock()


class _NotOurThread(logging.Filter):
    """Streamlit warns of each cached call made outside a page's run ("missing ScriptRunContext"):
    the early open's are meant, and would print a line for every link followed."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.threadName != THREAD


logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(_NotOurThread())


class EarlyOpen:
    """ASGI middleware: a GET of the timeline page starts opening the run it names."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"].rstrip("/").endswith("/timeline"):
            start(scope.get("query_string", b""))
        await self.app(scope, receive, send)


def start(query: bytes) -> threading.Thread | None:
    """Open the run that `query` (the page's `session=…&step=…`) names, in a thread; None when it names
    none or an opening is under way."""
    try:
        params = parse_qs(query.decode("latin-1"), max_num_fields=16)
    except ValueError:  # more fields than a timeline link has
        return None
    session_id = (params.get("session") or [""])[0]
    step = (params.get("step") or [""])[0]
    if not session_id or len(session_id) > MAX_ID or not _busy.acquire(blocking=False):
        return None
    thread = threading.Thread(target=_open, args=(session_id, linked_step(step)), name=THREAD, daemon=True)
    thread.start()
    return thread


def linked_step(raw: str | None) -> int | None:
    """A timeline link's `step=` as a seq; None when it is none (missing, not digits, past 18 of them).
    The page (`timeline_view.cursor`) and the early open read a link alike."""
    return int(raw) if raw and raw.isdecimal() and len(raw) < 19 else None


def _open(session_id: str, step: int | None) -> None:
    try:
        from replay_core.understand.snapshot import state_at
        from ui import timeline_view as tv
        from ui.common import get_store, load_run
        from ui.login import no_door

        if not no_door():
            return
        store = get_store()
        run = load_run(store, session_id)
        if run is None or not run[0].steps:
            return
        tl = run[0]
        tv.explanation_for(store, tl)
        tv.story_of(store, tl)
        first, last = tl.steps[0].seq, tl.steps[-1].seq
        state_at(tl, first if step is None else min(max(step, first), last), store, behind=True)
    except Exception:  # the page opens the run itself and shows what went wrong
        log.exception("opening run %r early", session_id[:MAX_ID])
    finally:
        _busy.release()

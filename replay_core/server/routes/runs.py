"""Reads: the runs list (filters as on the runs page, search), one run with its steps, the agent's
state at a step, why a run failed, its steps live as they are stored, and attachments' bytes.
Blocking work runs in the thread pool so the UI's event loop never waits on the database."""

from __future__ import annotations

import threading

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...events import INT_MAX
from ...storage.actor import READ
from ...storage.filter_params import session_filter
from ...storage.filters import SessionFilter
from ...understand.snapshot import state_at
from ...understand.timeline import open_timeline
from ..context import API_PREFIX, ApiContext
from ..params import int_param, last_event_id, session_id
from ..responses import ApiError, json_response
from ..stream import EventStream, StepHub

MAX_LIMIT = 500


class RunRoutes:
    def __init__(self, api: ApiContext):
        self.api = api
        self._hub: StepHub | None = None  # the stream's pollers (server/stream.py), made on first use
        self._hub_lock = threading.Lock()

    def routes(self) -> list[Route]:
        sid = "{session_id:path}"  # ids may hold "/" (sent URL-encoded); the specific routes come first

        def reads(handler):
            return self.api.guarded(handler, READ)

        return [
            Route(f"{API_PREFIX}/sessions", reads(self.list_sessions), methods=["GET"]),
            Route(f"{API_PREFIX}/attachments/{{attachment_id:int}}", reads(self.get_attachment), methods=["GET"]),
            Route(f"{API_PREFIX}/sessions/{sid}/snapshot", reads(self.snapshot), methods=["GET"]),
            Route(f"{API_PREFIX}/sessions/{sid}/explain", reads(self.explain), methods=["GET"]),
            Route(f"{API_PREFIX}/sessions/{sid}/stream", reads(self.stream), methods=["GET"]),
            Route(f"{API_PREFIX}/sessions/{sid}", reads(self.get_session), methods=["GET"]),
            Route(f"{API_PREFIX}/threads", reads(self.list_threads), methods=["GET"]),
            Route(f"{API_PREFIX}/threads/{{thread_id:path}}", reads(self.get_thread), methods=["GET"]),
        ]

    async def list_sessions(self, request: Request) -> Response:
        """GET /api/v1/sessions: filters as on the runs page, newest first, paged."""
        params = request.query_params
        flt = _filter(params)
        limit = int_param(params, "limit", 50, 1, MAX_LIMIT)
        offset = int_param(params, "offset", 0, 0, INT_MAX)
        store = self.api.store()

        def page() -> dict:
            rows = store.list_sessions(flt, limit=limit, offset=offset)
            if flt.text:  # each run's first matching step: {seq, event_id, type, tool_name, snippet [[text, matched], …]}
                matches = store.search_matches([r["id"] for r in rows], flt.text)
                for row in rows:
                    row["match"] = matches.get(row["id"])
            return {"total": store.count_sessions(flt), "limit": limit, "offset": offset, "sessions": rows}

        return json_response(await run_in_threadpool(page))

    async def get_session(self, request: Request) -> Response:
        """GET /api/v1/sessions/{id}: the run, its steps (without contexts), cycles and gaps."""
        sid = session_id(request)
        await self.api.session_or_404(sid)
        timeline = await run_in_threadpool(open_timeline, self.api.store(), sid)
        body = {
            "session": timeline.session,
            "summary": timeline.summary(),
            "steps": [s.to_json_dict() for s in timeline.steps],
            "cycles": [c.to_dict() for c in timeline.cycles],
            "gaps": [g.to_dict() for g in timeline.gaps],
        }
        return json_response(body)

    async def stream(self, request: Request) -> Response:
        """GET /api/v1/sessions/{id}/stream: Server-Sent Events, one per step as it is stored (id: its seq),
        resumed after `Last-Event-ID` (header, or `?last_event_id=`); heartbeats keep proxies from closing it."""
        sid = session_id(request)
        resume = last_event_id(request, INT_MAX)
        await self.api.session_or_404(sid)
        after = await run_in_threadpool(self.api.store().feed_cursor, sid, resume)
        with self._hub_lock:
            if self._hub is None:
                self._hub = StepHub(self.api.store)
        return EventStream(
            self._hub.events(sid, after),
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def snapshot(self, request: Request) -> Response:
        """GET /api/v1/sessions/{id}/snapshot?step=N: the agent's state at step N."""
        sid = session_id(request)
        seq = int_param(request.query_params, "step", None, 0, INT_MAX)
        await self.api.session_or_404(sid)
        store = self.api.store()

        def snap() -> dict:
            timeline = open_timeline(store, sid)
            if not timeline.steps:
                raise ApiError(404, f"session {sid!r} has no steps yet")
            return state_at(timeline, seq, store).to_dict()

        return json_response(await run_in_threadpool(snap))

    async def explain(self, request: Request) -> Response:
        """GET /api/v1/sessions/{id}/explain[?replays=1]: why a failed, incomplete or unknown-outcome run failed."""
        from ...understand.explain import ExplainError, explain

        sid = request.path_params["session_id"]
        await self.api.session_or_404(sid)
        replays = request.query_params.get("replays", "0") in ("1", "true", "yes")

        def run() -> dict:
            try:
                return explain(self.api.store(), sid, include_replays=replays).to_dict()
            except ExplainError as exc:
                raise ApiError(409, str(exc)) from None

        return json_response(await run_in_threadpool(run))

    async def list_threads(self, request: Request) -> Response:
        """GET /api/v1/threads: conversations of the runs a filter picks, the latest first, with their totals."""
        from ...understand.thread import recent_threads

        flt = _filter(request.query_params)
        limit = int_param(request.query_params, "limit", 50, 1, MAX_LIMIT)
        rows = await run_in_threadpool(recent_threads, self.api.store(), flt, limit=limit)
        return json_response({"threads": rows})

    async def get_thread(self, request: Request) -> Response:
        """GET /api/v1/threads/{id}: a conversation's runs in order, each with its totals, and the thread's."""
        from ...understand.thread import open_thread

        tid = request.path_params["thread_id"]
        thread = await run_in_threadpool(open_thread, self.api.store(), tid)
        if thread is None:
            raise ApiError(404, f"no run has thread_id {tid!r}")
        return json_response(thread.to_json())

    async def get_attachment(self, request: Request) -> Response:
        """GET /api/v1/attachments/{id}: the bytes, with their media type."""
        attachment_id = request.path_params["attachment_id"]
        data = await run_in_threadpool(self.api.store().attachment_data, attachment_id)
        if data is None:
            raise ApiError(404, f"no attachment {attachment_id}")
        return Response(data, media_type=_sniff_media_type(data), headers={"x-content-type-options": "nosniff"})


def _filter(params) -> SessionFilter:
    """The runs a request's filter parameters pick; a bad one is a 422 naming it."""
    try:
        return session_filter(params)
    except ValueError as exc:
        loc = str(exc).split(":", 1)[0]
        raise ApiError(422, str(exc), [{"loc": loc, "msg": str(exc).split(": ", 1)[-1]}]) from None


def _sniff_media_type(data: bytes) -> str:
    """From the bytes, not from what a trace declared: a stored "image" is never served as HTML."""
    for magic, kind in ((b"\x89PNG", "image/png"), (b"\xff\xd8", "image/jpeg"), (b"GIF8", "image/gif")):
        if data.startswith(magic):
            return kind
    return "image/webp" if data[:4] == b"RIFF" and data[8:12] == b"WEBP" else "application/octet-stream"

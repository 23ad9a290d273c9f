"""The HTTP API: ingest and read runs over HTTP, through the same pipeline as file import.

Mounted beside the UI by `streamlit_app.py` (one process, one port); `create_app`
serves the same routes alone. Bodies are native contract objects (design.md §3);
every write needs a bearer token, is validated whole before anything is stored
(one bad item refuses the batch, naming `steps[3].type`), then redacted and stored
in one transaction. Blocking work runs in the thread pool so the UI's event loop
never waits on the database.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
import zlib
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .auth import Access
from ..events import SessionEndEvent, SessionEvent, SessionStatus, StepEvent
from ..ingest.pipeline import IngestReport, ingest
from ..understand.snapshot import state_at
from ..storage.actor import INGEST, READ, PermissionDenied
from ..storage.store import HAS_FLAGS, REVIEW_LABELS, SessionFilter, Store
from ..understand.timeline import open_timeline

API_PREFIX = "/api/v1"
SOURCE = "http"
MAX_LIMIT = 500
MAX_LISTED_ERRORS = 50
FILTER_FIELDS = ("model", "agent_id", "workflow", "environment", "agent_version", "tag", "source", "replay_of", "failed_tool", "error_class")
REVIEW_STATES = (*REVIEW_LABELS, "unreviewed")
OTLP_MEDIA = ("application/x-protobuf", "application/protobuf", "application/json")


def max_body_bytes() -> int:
    """The body size limit: AGENT_REPLAY_MAX_BODY_MB megabytes (default 10)."""
    return int(float(os.environ.get("AGENT_REPLAY_MAX_BODY_MB", "10")) * 1024 * 1024)


class ApiError(Exception):
    """An answer other than 200; `errors` lists every field at fault as {loc, msg}."""

    def __init__(self, status: int, detail: str, errors: list[dict] | None = None, headers: dict | None = None):
        super().__init__(detail)
        self.status, self.detail, self.errors, self.headers = status, detail, errors, headers


def json_response(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    data = orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS)
    return Response(data, status_code=status, media_type="application/json", headers=headers)


# ---------------------------------------------------------------- query parameters


def _parse_when(name: str, value: str, *, end: bool) -> datetime:
    """A day (whole day: `until` includes it) or an ISO date-time."""
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            return datetime.combine(day + timedelta(days=1) if end else day, time(), UTC)
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"{name}: expected a date (2026-05-01) or an ISO date-time, got {value!r}") from None


def session_filter(params: Mapping[str, str], *, strict: bool = True) -> SessionFilter:
    """A SessionFilter from query parameters (the runs list's deep links and `GET /api/v1/sessions`).

    `q` searches names and step content. Strict: a bad value raises ValueError naming
    the parameter; lenient (links typed by people): a bad value is ignored.
    """
    values: dict[str, Any] = {}

    def checked(name: str, parse: Callable[[str], Any]) -> None:
        raw = (params.get(name) or "").strip()
        if not raw:
            return
        try:
            values[name] = parse(raw)
        except ValueError:
            if strict:
                raise

    def one_of(name: str, allowed: tuple[str, ...]) -> Callable[[str], str]:
        def parse(raw: str) -> str:
            if raw not in allowed:
                raise ValueError(f"{name}: expected one of {', '.join(allowed)}, got {raw!r}")
            return raw

        return parse

    for name in FILTER_FIELDS:
        checked(name, str)
    checked("status", one_of("status", tuple(s.value for s in SessionStatus)))
    checked("review", one_of("review", REVIEW_STATES))
    checked("has", one_of("has", HAS_FLAGS))
    checked("since", lambda raw: _parse_when("since", raw, end=False))
    checked("until", lambda raw: _parse_when("until", raw, end=True))
    text = (params.get("q") or "").strip()
    return SessionFilter(**values, text=text or None)


def _int_param(params: Mapping[str, str], name: str, default: int | None, low: int, high: int | None = None) -> int | None:
    raw = params.get(name)
    if raw is None or raw == "":
        if default is None:
            raise ApiError(422, f"{name}: required query parameter", [{"loc": name, "msg": "required"}])
        return default
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        msg = f"expected an integer {bound}, got {raw!r}"
        raise ApiError(422, f"{name}: {msg}", [{"loc": name, "msg": msg}])
    return value


# ---------------------------------------------------------------- bodies

_MODELS = {"session": SessionEvent, "step": StepEvent, "session_end": SessionEndEvent}


def _validation_failed(errors: list[dict]) -> ApiError:
    shown = errors[:MAX_LISTED_ERRORS]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return ApiError(422, f"{errors[0]['loc']}: {errors[0]['msg']}{more}", shown)


def _event(obj: Any, where: str, implied: Mapping[str, str], errors: list[dict]):
    """Validate one object; fields the route implies are filled in, and must agree when given."""
    loc = (lambda name: f"{where}.{name}") if where else (lambda name: name)
    if not isinstance(obj, dict):
        errors.append({"loc": where or "body", "msg": f"expected a JSON object, got {type(obj).__name__}"})
        return None
    clash = False
    for name, value in implied.items():
        given = obj.get(name)
        if given is not None and given != value:
            errors.append({"loc": loc(name), "msg": f"this route takes {value!r}, the body says {given!r}"})
            clash = True
    if clash:
        return None
    kind = implied.get("kind") or obj.get("kind")
    model = _MODELS.get(kind)
    if model is None:
        errors.append({"loc": loc("kind"), "msg": f"expected one of {', '.join(_MODELS)}, got {kind!r}"})
        return None
    try:
        return model.model_validate({**obj, **implied})
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            path = ".".join(str(p) for p in err["loc"])
            errors.append({"loc": loc(path) if path else (where or "body"), "msg": err["msg"]})
        return None


def parse_events(items: list[Any], name: str, implied: Mapping[str, str]) -> list:
    """Validate a batch whole: every bad item is listed as `name[i].field`, nothing is kept."""
    errors: list[dict] = []
    events = [_event(obj, f"{name}[{i}]", implied, errors) for i, obj in enumerate(items)]
    if errors:
        raise _validation_failed(errors)
    return events


def parse_event(obj: Any, implied: Mapping[str, str]):
    errors: list[dict] = []
    event = _event(obj, "", implied, errors)
    if errors:
        raise _validation_failed(errors)
    return event


def step_items(body: Any) -> list[Any]:
    """A steps body: one step object, a JSON array of them, or {"steps": [...]}."""
    if isinstance(body, dict) and set(body) == {"steps"}:
        body = body["steps"]
        if not isinstance(body, list):
            raise ApiError(422, "steps: expected a JSON array", [{"loc": "steps", "msg": "expected a JSON array"}])
    return body if isinstance(body, list) else [body]


# ---------------------------------------------------------------- the routes


class IngestAPI:
    """The routes with what they share: the store (opened on first use), the access settings, the body limit."""

    def __init__(self, store: Store | None = None, *, access: Access | None = None, max_body: int | None = None):
        self._store = store
        self._store_lock = threading.Lock()
        self.access = access if access is not None else Access.load()
        self.max_body = max_body if max_body is not None else max_body_bytes()

    def store(self) -> Store:
        with self._store_lock:
            if self._store is None:
                self._store = Store()
            return self._store

    def routes(self) -> list[Route]:
        sid = "{session_id:path}"  # ids may hold "/" (sent URL-encoded); the specific routes come first

        def reads(handler):
            return self._guarded(handler, READ)

        def writes(handler):
            return self._guarded(handler, INGEST)

        return [
            Route("/healthz", self._wrap(self.healthz), methods=["GET"]),
            Route(f"{API_PREFIX}/sessions", writes(self.create_session), methods=["POST"]),
            Route(f"{API_PREFIX}/sessions", reads(self.list_sessions), methods=["GET"]),
            Route(f"{API_PREFIX}/sessions/{sid}/steps", writes(self.add_steps), methods=["POST"]),
            Route(f"{API_PREFIX}/sessions/{sid}/end", writes(self.end_session), methods=["POST"]),
            Route(f"{API_PREFIX}/sessions/{sid}/snapshot", reads(self.snapshot), methods=["GET"]),
            Route(f"{API_PREFIX}/sessions/{sid}", reads(self.get_session), methods=["GET"]),
            Route("/v1/traces", writes(self.otlp_traces), methods=["POST"]),
        ]

    # -- plumbing

    def _wrap(self, handler: Callable[[Request], Awaitable[Response]]):
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except ApiError as exc:
                body: dict[str, Any] = {"detail": exc.detail}
                if exc.errors:
                    body["errors"] = exc.errors
                return json_response(body, exc.status, exc.headers)

        return endpoint

    def _guarded(self, handler: Callable[[Request], Awaitable[Response]], action: str):
        """A route that needs a bearer token whose role allows `action` (401 without one, 403 when the role is short)."""

        async def checked(request: Request) -> Response:
            if not self.access.api_tokens:
                raise ApiError(401, "the API is closed: no API tokens are configured (set AGENT_REPLAY_API_TOKENS)",
                               headers={"WWW-Authenticate": "Bearer"})
            origin = request.client.host if request.client else "api"
            actor = self.access.token_actor(request.headers.get("authorization"), origin)
            if actor is None:
                raise ApiError(401, "missing or invalid bearer token", headers={"WWW-Authenticate": "Bearer"})
            if not actor.may(action):
                try:
                    await run_in_threadpool(self.store().authorize, actor, action, request.url.path)
                except PermissionDenied as exc:
                    raise ApiError(403, str(exc)) from None
            request.state.actor = actor
            return await handler(request)

        return self._wrap(checked)

    async def body_bytes(self, request: Request) -> bytes:
        """The request body, refused with 413 as soon as it passes the limit (gzip is unpacked)."""
        too_big = ApiError(413, f"body larger than {self.max_body / 1024 / 1024:g} MB (AGENT_REPLAY_MAX_BODY_MB)")
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body:
            raise too_big
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body:
                raise too_big
            chunks.append(chunk)
        data = b"".join(chunks)
        encoding = request.headers.get("content-encoding", "identity").lower()
        if encoding == "gzip":
            unpacker = zlib.decompressobj(wbits=31)
            try:
                data = unpacker.decompress(data, self.max_body + 1)
            except zlib.error as exc:
                raise ApiError(400, f"body: not valid gzip ({exc})") from None
            if len(data) > self.max_body or unpacker.unconsumed_tail:
                raise too_big
        elif encoding != "identity":
            raise ApiError(415, f"content-encoding {encoding!r} is not supported (use gzip or none)")
        return data

    async def json_body(self, request: Request, *, empty: Any = None) -> Any:
        data = await self.body_bytes(request)
        if not data.strip():
            if empty is not None:
                return empty
            raise ApiError(400, "body: empty, expected JSON", [{"loc": "body", "msg": "empty"}])
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ApiError(400, f"body: invalid JSON ({exc.args[0]})", [{"loc": "body", "msg": "invalid JSON"}]) from None

    async def _ingest(self, events: list) -> Response:
        report: IngestReport = await run_in_threadpool(ingest, self.store(), events, source=SOURCE)
        body = report.to_dict()
        body.pop("files", None)
        return json_response(body)

    async def _session_or_404(self, session_id: str) -> dict:
        row = await run_in_threadpool(self.store().get_session, session_id)
        if row is None:
            raise ApiError(404, f"no session {session_id!r}")
        return row

    # -- endpoints

    async def healthz(self, request: Request) -> Response:
        sessions = await run_in_threadpool(self.store().count_sessions)
        return json_response({"status": "ok", "sessions": sessions})

    async def create_session(self, request: Request) -> Response:
        """POST /api/v1/sessions: open a run (or update its dimensions)."""
        event = parse_event(await self.json_body(request), {"kind": "session"})
        return await self._ingest([event])

    async def add_steps(self, request: Request) -> Response:
        """POST /api/v1/sessions/{id}/steps: one step or a batch, stored whole or not at all."""
        sid = request.path_params["session_id"]
        items = step_items(await self.json_body(request))
        events = parse_events(items, "steps", {"kind": "step", "session_id": sid})
        return await self._ingest(events)

    async def end_session(self, request: Request) -> Response:
        """POST /api/v1/sessions/{id}/end: close a run (an empty body means it succeeded)."""
        sid = request.path_params["session_id"]
        event = parse_event(await self.json_body(request, empty={}), {"kind": "session_end", "session_id": sid})
        await self._session_or_404(sid)
        return await self._ingest([event])

    async def list_sessions(self, request: Request) -> Response:
        """GET /api/v1/sessions: filters as on the runs page, newest first, paged."""
        params = request.query_params
        try:
            flt = session_filter(params)
        except ValueError as exc:
            loc = str(exc).split(":", 1)[0]
            raise ApiError(422, str(exc), [{"loc": loc, "msg": str(exc).split(": ", 1)[-1]}]) from None
        limit = _int_param(params, "limit", 50, 1, MAX_LIMIT)
        offset = _int_param(params, "offset", 0, 0)
        store = self.store()

        def page() -> dict:
            return {"total": store.count_sessions(flt), "limit": limit, "offset": offset,
                    "sessions": store.list_sessions(flt, limit=limit, offset=offset)}

        return json_response(await run_in_threadpool(page))

    async def get_session(self, request: Request) -> Response:
        """GET /api/v1/sessions/{id}: the run, its steps (without contexts), cycles and gaps."""
        sid = request.path_params["session_id"]
        await self._session_or_404(sid)
        timeline = await run_in_threadpool(open_timeline, self.store(), sid)
        body = {
            "session": timeline.session,
            "summary": timeline.summary(),
            "steps": [s.to_json_dict() for s in timeline.steps],
            "cycles": [c.to_dict() for c in timeline.cycles],
            "gaps": [g.to_dict() for g in timeline.gaps],
        }
        return json_response(body)

    async def snapshot(self, request: Request) -> Response:
        """GET /api/v1/sessions/{id}/snapshot?step=N: the agent's state at step N."""
        sid = request.path_params["session_id"]
        seq = _int_param(request.query_params, "step", None, 0)
        await self._session_or_404(sid)
        store = self.store()

        def snap() -> dict:
            timeline = open_timeline(store, sid)
            if not timeline.steps:
                raise ApiError(404, f"session {sid!r} has no steps yet")
            return state_at(timeline, seq, store).to_dict()

        return json_response(await run_in_threadpool(snap))

    async def otlp_traces(self, request: Request) -> Response:
        """POST /v1/traces: OTLP/HTTP (protobuf or JSON) from any OpenTelemetry exporter."""
        from ..ingest.formats.otel import events_from_otlp

        content_type = request.headers.get("content-type", "")
        media = content_type.split(";", 1)[0].strip().lower()
        if media not in OTLP_MEDIA:
            raise ApiError(415, f"Content-Type {content_type!r}: expected application/x-protobuf or application/json")
        data = await self.body_bytes(request)
        try:
            events = events_from_otlp(data, content_type)
        except ValueError as exc:
            raise ApiError(400, f"body: {exc}", [{"loc": "body", "msg": str(exc)}]) from None
        await run_in_threadpool(ingest, self.store(), events, source="otlp-json" if media == "application/json" else "otlp-proto")
        # An empty ExportTraceServiceResponse: full success, in the encoding of the request.
        if media == "application/json":
            return Response(b"{}", media_type="application/json")
        return Response(b"", media_type="application/x-protobuf")


def tcp_nodelay_on_listening_sockets() -> int:
    """Set TCP_NODELAY on this process's listening TCP sockets (Linux); returns how many.

    Streamlit binds its server socket itself, without TCP_NODELAY, and asyncio only sets
    it on sockets whose protocol says TCP, so every keep-alive response waited ~40 ms on
    Nagle's algorithm and the client's delayed ACK. Accepted connections inherit the
    option from the listening socket.
    """
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        return 0
    done = 0
    for entry in fds.iterdir():
        try:
            fd = int(entry.name)
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            for family in (socket.AF_INET, socket.AF_INET6):
                with socket.fromfd(fd, family, socket.SOCK_STREAM) as sock:  # a duplicate: closing it leaves fd open
                    if sock.family == family and sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
                        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        done += 1
                    break
        except OSError:
            continue
    return done


def routes(store: Store | None = None, *, access: Access | None = None, max_body: int | None = None) -> list[Route]:
    """The API's routes, for `st.App(routes=...)`."""
    return IngestAPI(store, access=access, max_body=max_body).routes()


def create_app(store: Store | None = None, *, access: Access | None = None, max_body: int | None = None) -> Starlette:
    """The API alone as an ASGI app (tests, or serving it without the UI)."""
    return Starlette(routes=routes(store, access=access, max_body=max_body))

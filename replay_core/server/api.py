"""The HTTP API: ingest and read runs over HTTP, through the same pipeline as file import.

Mounted beside the UI by `streamlit_app.py` (one process, one port); `create_app`
serves the same routes alone. Bodies are native contract objects (design.md §3);
every write needs a bearer token, is validated whole before anything is stored
(one bad item refuses the batch, naming `steps[3].type`), then redacted and stored
in one transaction. Blocking work runs in the thread pool so the UI's event loop
never waits on the database. Concurrent requests' batches are written together, in one
transaction (`JoinedWrites`); each request is still answered only once its own batch is
committed, with its own counts or its own error.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import os
import socket
import stat
import threading
import zlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Future
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from sqlalchemy import exc as sa_exc

from . import openapi
from .auth import Access
from .stream import StepHub
from ..events import ID_MAX, INT_MAX, AttachmentEvent, SessionEndEvent, SessionEvent, SessionStatus, StepEvent, error_message, fast_step
from ..ingest import otlp_worker
from ..ingest.pipeline import IngestReport, ingest
from ..ingest.step_rows import step_row_of
from ..ingest.redact import Redactor, default_redactor
from ..understand.snapshot import state_at
from ..storage.actor import INGEST, MANAGE_QUEUES, READ, REPLAY, SHARE, WORK_QUEUE, PermissionDenied
from ..storage.store import HAS_FLAGS, REVIEW_LABELS, SessionFilter, Store, WriteBatch, WriteRefused, WriteResult
from ..storage.worker import WRITE_LANES, OffloadedWrites
from ..understand.timeline import open_timeline

API_PREFIX = "/api/v1"
SOURCE = "http"
MAX_LIMIT = 500
MAX_LISTED_ERRORS = 50
FILTER_FIELDS = ("model", "agent_id", "workflow", "environment", "agent_version", "tag", "source", "replay_of", "failed_tool", "error_class")
REVIEW_STATES = (*REVIEW_LABELS, "unreviewed")
OTLP_MEDIA = ("application/x-protobuf", "application/protobuf", "application/json")
RETRY_AFTER_S = 30  # told to clients when the database cannot take writes (disk full, read-only, locked)
log = logging.getLogger("agent_replay.api")


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

    `q` searches names and step content; `replays=1` also counts what-if replays and experiments'
    runs (originals only otherwise). Strict: a bad value raises ValueError naming
    the parameter; lenient (links typed by people): a bad value is ignored.
    """
    values: dict[str, Any] = {}

    def checked(name: str, parse: Callable[[str], Any]) -> None:
        raw = (params.get(name) or "").strip()
        if not raw:
            return
        try:
            values[name] = parse(_no_nul(name, raw))
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
    checked("replays", lambda raw: one_of("replays", ("1", "true", "yes", "0", "false", "no"))(raw.lower()) in ("1", "true", "yes"))
    if values.pop("replays", False):  # originals only unless asked: replays and experiments' runs are not the agent's runs
        values |= {"include_replays": True, "experiments": True}
    text = (params.get("q") or "").strip()
    if "\x00" in text:
        if strict:
            _no_nul("q", text)
        text = ""
    return SessionFilter(**values, text=text or None)


def _no_nul(name: str, raw: str) -> str:
    if "\x00" in raw:
        raise ValueError(f"{name}: NUL character (\\x00) is not allowed")
    return raw


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

_MODELS = {"session": SessionEvent, "step": StepEvent, "session_end": SessionEndEvent, "attachment": AttachmentEvent}


def _validation_failed(errors: list[dict]) -> ApiError:
    shown = errors[:MAX_LISTED_ERRORS]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return ApiError(422, f"{errors[0]['loc']}: {errors[0]['msg']}{more}", shown)


def _event(obj: Any, where: str, implied: Mapping[str, str], errors: list[dict], redactor: Redactor | None = None):
    """Validate one object; fields the route implies are filled in, and must agree when given. With
    `redactor`, a step the contract's fast path vouches for comes back as its redacted row (StepRow)."""
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
    body = {**obj, **implied}
    if kind == "step":  # the contract's fast path (events.fast_step): the model still judges what it cannot vouch for
        if redactor is not None:  # straight into the row `ingest` stores, no StepEvent made (ingest.step_rows)
            row = step_row_of(body, redactor)
            if row is not None:
                return row
        step = fast_step(body)
        if step is not None:
            return step
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            path = ".".join(str(p) for p in err["loc"])
            errors.append({"loc": loc(path) if path else (where or "body"), "msg": error_message(err)})
        return None


def parse_events(items: list[Any], name: str, implied: Mapping[str, str]) -> list:
    """Validate a batch whole: every bad item is listed as `name[i].field`, nothing is kept. Steps come
    back validated and redacted as rows where the fast path vouches for them (`ingest` stores them as they are)."""
    errors: list[dict] = []
    redactor = default_redactor()
    events = [_event(obj, f"{name}[{i}]", implied, errors, redactor) for i, obj in enumerate(items)]
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


# ---------------------------------------------------------------- writes joined


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
        self._lanes, self._options = lanes, {"default_source": default_source, "refuse_conflicts": refuse_conflicts}
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
                if not group:  # every lane busy, or what is queued waits for runs in flight
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
                store.write_batches([_copy(batch) for batch, _ in group], **self._options, counts=counts)
            except Exception:  # noqa: BLE001 — each batch again alone: its error (or none) is its own
                pass
            else:
                for (batch, done), (stored, dupes) in zip(group, counts, strict=True):
                    done.set_result(WriteResult(sessions=list(batch.order), steps=stored, duplicates=dupes))
                return
        for batch, done in group:
            try:
                done.set_result(store.write_batches([batch], **self._options))
            except Exception as exc:  # noqa: BLE001 — raised in the request's own thread by `write`
                done.set_exception(exc)


def _copy(batch: WriteBatch) -> WriteBatch:
    """`batch` with its own copies of what a write changes in place (the sessions' fields, the ends)."""
    return dataclasses.replace(batch, opened={sid: dict(fields) for sid, fields in batch.opened.items()}, ended=dict(batch.ended))


class _JoiningStore:
    """The store as `ingest` sees it on the HTTP routes: its `write` goes through `JoinedWrites`
    (a replace, for editors and audited, is written alone); the rest is the store's."""

    def __init__(self, store: Store, joined: JoinedWrites):
        self._store, self._joined = store, joined

    def write(self, events, *, default_source: str | None = None, replace: bool = False, refuse_conflicts: bool = False) -> WriteResult:
        if replace or default_source != SOURCE or not refuse_conflicts:
            return self._store.write(events, default_source=default_source, replace=replace, refuse_conflicts=refuse_conflicts)
        batch = WriteBatch()
        for ev in events:
            batch.add(ev)
        return self._joined.write(batch) if batch.order else WriteResult()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


# ---------------------------------------------------------------- the routes


class IngestAPI:
    """The routes with what they share: the store (opened on first use), the access settings, the body limit."""

    def __init__(self, store: Store | None = None, *, access: Access | None = None, max_body: int | None = None):
        self._store = store
        self._store_lock = threading.Lock()
        self.access = access if access is not None else Access.load()
        self.max_body = max_body if max_body is not None else max_body_bytes()
        self.degraded: str | None = None  # why the last write failed, until one succeeds
        self._hub: StepHub | None = None  # the stream's pollers (server/stream.py), made on first use
        self._document: dict | None = None
        # the joined writes run in a worker process (storage.worker), this one left the requests
        self._joined = JoinedWrites(self._write_lanes, default_source=SOURCE, refuse_conflicts=True)
        otlp_worker.start()  # ready before the first big body (spawning it takes a second); the write worker starts at the first write

    def store(self) -> Store:
        with self._store_lock:
            if self._store is None:
                self._store = Store()
            return self._store

    def _write_lanes(self) -> list[OffloadedWrites]:
        """The joined writes' lanes: one per write worker PostgreSQL takes at once, one on SQLite."""
        store = self.store()
        lanes = WRITE_LANES.get(store.dialect, 1)
        return [OffloadedWrites(store, lane, lanes) for lane in range(lanes)]

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
            Route(f"{API_PREFIX}/sessions/{sid}/steps/{{event_id}}/attachments", writes(self.add_attachment), methods=["POST"]),
            Route(f"{API_PREFIX}/sessions/{sid}/steps", writes(self.add_steps), methods=["POST"]),
            Route(f"{API_PREFIX}/attachments/{{attachment_id:int}}", reads(self.get_attachment), methods=["GET"]),
            Route(f"{API_PREFIX}/sessions/{sid}/end", writes(self.end_session), methods=["POST"]),
            Route(f"{API_PREFIX}/sessions/{sid}/snapshot", reads(self.snapshot), methods=["GET"]),
            Route(f"{API_PREFIX}/sessions/{sid}/explain", reads(self.explain), methods=["GET"]),
            Route(f"{API_PREFIX}/sessions/{sid}/stream", reads(self.stream), methods=["GET"]),
            Route(f"{API_PREFIX}/sessions/{sid}", reads(self.get_session), methods=["GET"]),
            Route("/v1/traces", writes(self.otlp_traces), methods=["POST"]),
            *self.experiment_routes(),
            *self.team_routes(),
            Route(f"{API_PREFIX}/openapi.json", self._wrap(self.openapi_json), methods=["GET"]),
            Route(f"{API_PREFIX}/docs", self._wrap(self.api_docs), methods=["GET"]),
        ]

    # -- the API's own description (server/openapi.py), built from the route table above once

    def document(self) -> dict:
        if self._document is None:
            self._document = openapi.document(self.routes())
        return self._document

    async def openapi_json(self, request: Request) -> Response:
        return json_response(self.document())

    async def api_docs(self, request: Request) -> Response:
        return Response(openapi.page(self.document()), media_type="text/html",
                        headers={"content-security-policy": "default-src 'none'; style-src 'unsafe-inline'"})

    # -- plumbing

    def _wrap(self, handler: Callable[[Request], Awaitable[Response]]):
        """Every answer JSON, whatever went wrong: a response (not an exception reaching the
        server) also keeps the client's keep-alive connection open."""

        async def endpoint(request: Request) -> Response:
            try:
                for name, value in request.path_params.items():  # an id no table can hold (both databases)
                    if isinstance(value, int) and value > INT_MAX:
                        raise ApiError(404, f"{name}: no object has the id {value}", [{"loc": name, "msg": f"at most {INT_MAX}"}])
                return await handler(request)
            except Exception as exc:  # noqa: BLE001 — turned into an answer below, never a bare 500
                exc = self._as_api_error(exc)
                body: dict[str, Any] = {"detail": exc.detail}
                if exc.errors:
                    body["errors"] = exc.errors
                return json_response(body, exc.status, exc.headers)

        return endpoint

    def _as_api_error(self, exc: Exception) -> ApiError:
        if isinstance(exc, ApiError):
            return exc
        if isinstance(exc, HTTPException):  # starlette's own refusals, e.g. a multipart body with too many fields
            return ApiError(exc.status_code, f"body: {exc.detail}", [{"loc": "body", "msg": str(exc.detail)}])
        if isinstance(exc, PermissionDenied):  # a role checked inside the library (e.g. ?replace=true: editors)
            return ApiError(403, str(exc))
        if isinstance(exc, WriteRefused):
            return ApiError(exc.status, exc.reason, [{"loc": exc.field, "msg": exc.reason}])
        if _cannot_write_now(exc):  # disk full, read-only file or server, locked, server gone
            reason = _db_reason(exc)
            self.degraded = reason
            log.error("database cannot take the request: %s", reason)
            return ApiError(503, f"the database cannot take this now ({reason}); try again later",
                            headers={"Retry-After": str(RETRY_AFTER_S)})
        if isinstance(exc, (sa_exc.DataError, sa_exc.IntegrityError)):
            log.error("database refused values: %s", _db_reason(exc))
            return ApiError(422, f"the database refused these values ({_db_reason(exc)})")
        log.exception("unexpected error answering %s", type(exc).__name__)
        return ApiError(500, f"internal error ({type(exc).__name__}); the request was not stored")

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

        endpoint = self._wrap(checked)
        endpoint.action = action  # the role it needs, for the OpenAPI document
        return endpoint

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
                data = await run_in_threadpool(unpacker.decompress, data, self.max_body + 1)
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
            return await run_in_threadpool(orjson.loads, data)  # a big body must not hold the event loop
        except orjson.JSONDecodeError as exc:
            raise ApiError(400, f"body: invalid JSON ({exc.args[0]})", [{"loc": "body", "msg": "invalid JSON"}]) from None

    async def _ingest(self, events: list, request: Request) -> Response:
        replace = _flag(request.query_params, "replace")
        store = _JoiningStore(self.store(), self._joined)
        report: IngestReport = await run_in_threadpool(
            lambda: ingest(store, events, source=SOURCE, replace=replace, refuse_conflicts=True,
                           actor=getattr(request.state, "actor", None)))
        self.degraded = None
        body = report.to_dict()
        body.pop("files", None)
        body.pop("conflicts", None)  # refused above (409), so always empty here
        return json_response(body)

    async def _session_or_404(self, session_id: str) -> dict:
        row = await run_in_threadpool(self.store().get_session, session_id)
        if row is None:
            raise ApiError(404, f"no session {session_id!r}")
        return row

    # -- endpoints

    async def healthz(self, request: Request) -> Response:
        sessions = await run_in_threadpool(self.store().count_sessions)
        if self.degraded:
            return json_response({"status": "degraded", "reason": f"writes fail: {self.degraded}", "sessions": sessions})
        return json_response({"status": "ok", "sessions": sessions})

    async def create_session(self, request: Request) -> Response:
        """POST /api/v1/sessions: open a run (or update its dimensions)."""
        event = await run_in_threadpool(parse_event, await self.json_body(request), {"kind": "session"})
        return await self._ingest([event], request)

    async def add_steps(self, request: Request) -> Response:
        """POST /api/v1/sessions/{id}/steps: one step or a batch, stored whole or not at all."""
        sid = _session_id(request)
        items = step_items(await self.json_body(request))
        events = await run_in_threadpool(parse_events, items, "steps", {"kind": "step", "session_id": sid})
        return await self._ingest(events, request)

    async def add_attachment(self, request: Request) -> Response:
        """POST /api/v1/sessions/{id}/steps/{event_id}/attachments: a screenshot of a step, as the raw image
        (content-type image/*), multipart (field `file`, optional `target` JSON), or JSON {media_type, data (base64), target}."""
        sid, event_id = _session_id(request), request.path_params["event_id"]
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind.startswith("image/"):
            body = {"media_type": kind, "data": base64.b64encode(await self.body_bytes(request)).decode()}
        elif kind == "multipart/form-data":
            body = await self._multipart_image(request)
        else:
            body = await self.json_body(request)
            if not isinstance(body, dict):
                raise ApiError(422, "body: expected a JSON object {media_type, data, target}")
        event = parse_event(body, {"kind": "attachment", "session_id": sid, "event_id": event_id})
        await self._session_or_404(sid)
        report: IngestReport = await run_in_threadpool(ingest, self.store(), [event], source=SOURCE)
        if report.media_refused:
            raise ApiError(422, report.media_refused[0], [{"loc": "body.data", "msg": r} for r in report.media_refused])
        return json_response({"session_id": sid, "event_id": event_id, "stored": True})

    async def _multipart_image(self, request: Request) -> dict:
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body:
            raise ApiError(413, f"body larger than {self.max_body / 1024 / 1024:g} MB (AGENT_REPLAY_MAX_BODY_MB)")
        async with request.form(max_files=1, max_fields=4, max_part_size=self.max_body) as form:
            upload = form.get("file")
            if upload is None or isinstance(upload, str):
                raise ApiError(422, "multipart: expected a `file` part holding the image")
            data = await upload.read()
            target = form.get("target")
        body = {"media_type": upload.content_type, "data": base64.b64encode(data).decode(), "name": upload.filename}
        if isinstance(target, str) and target.strip():
            try:
                body["target"] = orjson.loads(target)
            except orjson.JSONDecodeError:
                raise ApiError(422, "multipart: `target` is JSON: {\"x\", \"y\"} or {\"box\": [x, y, w, h]}") from None
        return body

    async def get_attachment(self, request: Request) -> Response:
        """GET /api/v1/attachments/{id}: the bytes, with their media type."""
        attachment_id = request.path_params["attachment_id"]
        data = await run_in_threadpool(self.store().attachment_data, attachment_id)
        if data is None:
            raise ApiError(404, f"no attachment {attachment_id}")
        return Response(data, media_type=_sniff_media_type(data), headers={"x-content-type-options": "nosniff"})

    async def end_session(self, request: Request) -> Response:
        """POST /api/v1/sessions/{id}/end: close a run (an empty body means it succeeded)."""
        sid = _session_id(request)
        event = await run_in_threadpool(parse_event, await self.json_body(request, empty={}), {"kind": "session_end", "session_id": sid})
        await self._session_or_404(sid)
        return await self._ingest([event], request)

    async def list_sessions(self, request: Request) -> Response:
        """GET /api/v1/sessions: filters as on the runs page, newest first, paged."""
        params = request.query_params
        try:
            flt = session_filter(params)
        except ValueError as exc:
            loc = str(exc).split(":", 1)[0]
            raise ApiError(422, str(exc), [{"loc": loc, "msg": str(exc).split(": ", 1)[-1]}]) from None
        limit = _int_param(params, "limit", 50, 1, MAX_LIMIT)
        offset = _int_param(params, "offset", 0, 0, INT_MAX)
        store = self.store()

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
        sid = _session_id(request)
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

    async def stream(self, request: Request) -> Response:
        """GET /api/v1/sessions/{id}/stream: Server-Sent Events, one per step as it is stored (id: its seq),
        resumed after `Last-Event-ID` (header, or `?last_event_id=`); heartbeats keep proxies from closing it."""
        sid = _session_id(request)
        raw = request.headers.get("last-event-id") or request.query_params.get("last_event_id") or ""
        if raw.strip() and not (raw.strip().isdigit() and int(raw) <= INT_MAX):
            raise ApiError(422, f"Last-Event-ID: expected a step's seq (a whole number), got {raw[:50]!r}",
                           [{"loc": "Last-Event-ID", "msg": "expected a whole number"}])
        await self._session_or_404(sid)
        after = await run_in_threadpool(self.store().feed_cursor, sid, int(raw) if raw.strip() else None)
        with self._store_lock:
            if self._hub is None:
                self._hub = StepHub(self.store)
        return StreamingResponse(self._hub.events(sid, after), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def snapshot(self, request: Request) -> Response:
        """GET /api/v1/sessions/{id}/snapshot?step=N: the agent's state at step N."""
        sid = _session_id(request)
        seq = _int_param(request.query_params, "step", None, 0, INT_MAX)
        await self._session_or_404(sid)
        store = self.store()

        def snap() -> dict:
            timeline = open_timeline(store, sid)
            if not timeline.steps:
                raise ApiError(404, f"session {sid!r} has no steps yet")
            return state_at(timeline, seq, store).to_dict()

        return json_response(await run_in_threadpool(snap))

    async def explain(self, request: Request) -> Response:
        """GET /api/v1/sessions/{id}/explain[?replays=1]: why a failed, incomplete or unknown-outcome run failed."""
        from ..understand.explain import ExplainError, explain

        sid = request.path_params["session_id"]
        await self._session_or_404(sid)
        replays = request.query_params.get("replays", "0") in ("1", "true", "yes")

        def run() -> dict:
            try:
                return explain(self.store(), sid, include_replays=replays).to_dict()
            except ExplainError as exc:
                raise ApiError(409, str(exc)) from None

        return json_response(await run_in_threadpool(run))

    async def otlp_traces(self, request: Request) -> Response:
        """POST /v1/traces: OTLP/HTTP (protobuf or JSON) from any OpenTelemetry exporter."""
        content_type = request.headers.get("content-type", "")
        media = content_type.split(";", 1)[0].strip().lower()
        if media not in OTLP_MEDIA:
            raise ApiError(415, f"Content-Type {content_type!r}: expected application/x-protobuf or application/json")
        data = await self.body_bytes(request)
        try:  # reading, mapping and storing off the event loop (a big body in the worker process): /healthz keeps answering
            await run_in_threadpool(otlp_worker.receive, self.store(), data, content_type)
        except ValueError as exc:
            raise ApiError(400, f"body: {exc}", [{"loc": "body", "msg": str(exc)}]) from None
        # An empty ExportTraceServiceResponse: full success, in the encoding of the request.
        if media == "application/json":
            return Response(b"{}", media_type="application/json")
        return Response(b"", media_type="application/x-protobuf")

    # -- datasets and experiments (whatif.experiment): long work runs on a background thread, polled by GET

    def experiment_routes(self) -> list[Route]:
        guarded = self._guarded  # launching costs money: editors; making a dataset writes: editors; reading: any role
        return [
            Route(f"{API_PREFIX}/datasets", guarded(self.create_dataset, INGEST), methods=["POST"]),
            Route(f"{API_PREFIX}/datasets", guarded(self.list_datasets, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/datasets/{{name:path}}", guarded(self.get_dataset, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/experiments", guarded(self.create_experiment, REPLAY), methods=["POST"]),
            Route(f"{API_PREFIX}/experiments", guarded(self.list_experiments, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/experiments/{{experiment_id}}", guarded(self.get_experiment, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/experiments/{{a}}/compare/{{b}}", guarded(self.compare_experiments, READ), methods=["GET"]),
        ]

    async def _object_body(self, request: Request) -> dict:
        body = await self.json_body(request)
        if not isinstance(body, dict):
            raise ApiError(422, "body: expected a JSON object", [{"loc": "body", "msg": "expected a JSON object"}])
        return body

    async def create_dataset(self, request: Request) -> Response:
        """POST /api/v1/datasets {name, runs | filter {status, workflow, since, search}, expected?, match?, description?}."""
        from ..whatif import dataset as ds

        body = await self._object_body(request)
        store = self.store()

        def make() -> dict:
            flt = None
            if not body.get("runs"):
                given = body.get("filter") or {}
                if not isinstance(given, dict):
                    raise ds.DatasetError("filter: expected an object")
                unknown = sorted(set(given) - set(ds.FILTER_KEYS))
                if unknown:
                    raise ds.DatasetError(f"filter.{unknown[0]}: not a dataset filter ({', '.join(ds.FILTER_KEYS)})")
                if given:
                    flt = ds.parse_filter(given)
            runs = body.get("runs")
            if runs is not None and not (isinstance(runs, list) and all(isinstance(r, str) for r in runs)):
                raise ds.DatasetError("runs: expected a list of run ids")
            cases, made_from = ds.resolve(store, runs=runs, flt=flt, expected=body.get("expected"))
            made = ds.create(store, str(body.get("name") or ""), cases, match=body.get("match") or "equals",
                             description=body.get("description"), made_from=made_from)
            return {k: made[k] for k in ("id", "name", "version", "cases")}

        try:
            return json_response(await run_in_threadpool(make), 201)
        except ds.DatasetError as exc:
            raise ApiError(422, str(exc), [{"loc": str(exc).split(":", 1)[0], "msg": str(exc)}]) from None

    async def list_datasets(self, request: Request) -> Response:
        rows = await run_in_threadpool(self.store().list_datasets)
        return json_response({"datasets": [{k: r[k] for k in ("id", "name", "version", "cases", "match", "description", "updated_at")}
                                           for r in rows]})

    async def get_dataset(self, request: Request) -> Response:
        from ..whatif import dataset as ds

        try:
            return json_response(await run_in_threadpool(ds.show, self.store(), request.path_params["name"]))
        except ds.DatasetError as exc:
            raise ApiError(404, str(exc)) from None

    async def create_experiment(self, request: Request) -> Response:
        """POST /api/v1/experiments {dataset, models | variants, api_base?, from?, scorers?, scorer_options?, concurrency?,
        budget_usd?, budget_tokens?} → 202 with the id; it runs in the background, GET it for progress then results."""
        from ..whatif import experiment as ex
        from ..whatif.replay_config import ConfigError, ReplayConfig

        body = await self._object_body(request)
        store = self.store()

        def start() -> dict:
            shared = {"api_base": body["api_base"]} if body.get("api_base") else {}
            variants = [{"model": m} for m in body.get("models") or []] + list(body.get("variants") or [])
            if not all(isinstance(v, dict) for v in variants):
                raise ConfigError("variants: expected objects of replay settings")
            configs = [ReplayConfig.from_json({**shared, **v}) for v in variants]
            experiment_id, plan = ex.start(
                store, str(body.get("dataset") or ""), configs, start=body.get("from"), scorers=body.get("scorers"),
                scorer_options=body.get("scorer_options"), concurrency=int(body.get("concurrency") or 4),
                budget_usd=body.get("budget_usd"), budget_tokens=body.get("budget_tokens"))
            ex.launch(store, experiment_id)
            return {"experiment": experiment_id, "status": "running", "estimates": [e.to_dict() for e in plan.estimates],
                    "poll": f"{API_PREFIX}/experiments/{experiment_id}"}

        try:
            return json_response(await run_in_threadpool(start), 202)
        except (ex.ExperimentError, ConfigError, TypeError, ValueError) as exc:
            raise ApiError(422, str(exc), [{"loc": str(exc).split(":", 1)[0], "msg": str(exc)}]) from None

    async def list_experiments(self, request: Request) -> Response:
        rows = await run_in_threadpool(self.store().list_experiments)
        return json_response({"experiments": [{"experiment": r["id"], "dataset": r["dataset"], "status": r["status"],
                                               "variants": r["settings"]["names"], "runs_done": r["runs_done"],
                                               "created_at": r["created_at"]} for r in rows]})

    async def get_experiment(self, request: Request) -> Response:
        """GET /api/v1/experiments/{id}: status and progress while it runs; the results (so far, then whole)."""
        from ..whatif.results import summarise

        try:
            return json_response(await run_in_threadpool(summarise, self.store(), request.path_params["experiment_id"]))
        except KeyError:
            raise ApiError(404, f"no experiment {request.path_params['experiment_id']!r}") from None


    # -- review queues and share links (team.queues, team.shares)

    def team_routes(self) -> list[Route]:
        guarded, qid = self._guarded, "{queue_id:int}"
        return [
            Route(f"{API_PREFIX}/queues", guarded(self.list_queues, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/queues", guarded(self.create_queue, MANAGE_QUEUES), methods=["POST"]),
            Route(f"{API_PREFIX}/queues/{qid}", guarded(self.get_queue, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/queues/{qid}", guarded(self.delete_queue, MANAGE_QUEUES), methods=["DELETE"]),
            Route(f"{API_PREFIX}/queues/{qid}/export.csv", guarded(self.export_queue, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/queues/{qid}/next", guarded(self.next_queue_item, WORK_QUEUE), methods=["POST"]),
            Route(f"{API_PREFIX}/queues/{qid}/items/{{item_id:int}}/{{verb}}", guarded(self.work_queue_item, WORK_QUEUE),
                  methods=["POST"]),
            Route(f"{API_PREFIX}/shares", guarded(self.create_share, SHARE), methods=["POST"]),
            Route(f"{API_PREFIX}/shares", guarded(self.list_shares, SHARE), methods=["GET"]),
            Route(f"{API_PREFIX}/shares/{{share_id:int}}", guarded(self.revoke_share, SHARE), methods=["DELETE"]),
            Route(f"{API_PREFIX}/share/{{token}}", self._wrap(self.open_share), methods=["GET"]),  # no bearer token: the token is the key
        ]

    async def _team_call(self, fn: Callable[[], Any], status: int = 200) -> Response:
        from ..team.queues import QueueError
        from ..team.shares import ShareError

        try:
            return json_response(await run_in_threadpool(fn), status)
        except (QueueError, ShareError) as exc:
            missing = str(exc).startswith(("no queue", "no run", "no link")) and status == 200
            raise ApiError(404 if missing else 422, str(exc), [{"loc": str(exc).split(":", 1)[0], "msg": str(exc)}]) from None

    async def list_queues(self, request: Request) -> Response:
        from ..team import queues

        return await self._team_call(lambda: {"queues": queues.list_queues(self.store())})

    async def create_queue(self, request: Request) -> Response:
        """POST /api/v1/queues {name, runs | filter (the runs list's parameters), rubric?, reviews_per_item?, assign?} → {id, items}."""
        from ..team import queues

        body = await self._object_body(request)
        actor = request.state.actor

        def make() -> dict:
            runs, given = body.get("runs"), body.get("filter")
            if runs is not None and not (isinstance(runs, list) and all(isinstance(r, str) for r in runs)):
                raise queues.QueueError("runs: expected a list of run ids")
            if runs is None and not (isinstance(given, dict) and given):
                raise queues.QueueError("filter: name the runs (runs) or a filter (status, model, agent_id, workflow, since, q…)")
            try:
                flt = None if runs is not None else session_filter({k: str(v) for k, v in given.items()})
            except ValueError as exc:
                raise queues.QueueError(f"filter.{exc}") from None
            assign = body.get("assign") or []
            if not isinstance(assign, list):
                raise queues.QueueError("assign: expected a list of reviewer names")
            return queues.create(self.store(), body.get("name"), flt=flt, ids=runs, rubric=body.get("rubric"),
                                 reviews_per_item=body.get("reviews_per_item", 1), assignees=assign, actor=actor)

        return await self._team_call(make, 201)

    async def get_queue(self, request: Request) -> Response:
        """GET /api/v1/queues/{id}: progress, items with their verdicts, per reviewer, agreement."""
        from ..team import queues

        def show() -> dict:
            queues.get(self.store(), request.path_params["queue_id"])
            return queues.results(self.store(), request.path_params["queue_id"])

        return await self._team_call(show)

    async def delete_queue(self, request: Request) -> Response:
        from ..team import queues

        qid = request.path_params["queue_id"]
        if not await run_in_threadpool(lambda: queues.delete(self.store(), qid, actor=request.state.actor)):
            raise ApiError(404, f"no queue {qid}")
        return json_response({"id": qid, "deleted": True})

    async def export_queue(self, request: Request) -> Response:
        from ..team import queues

        qid = request.path_params["queue_id"]

        def text() -> str:
            queues.get(self.store(), qid)
            return queues.to_csv(queues.results(self.store(), qid))

        try:
            data = await run_in_threadpool(text)
        except queues.QueueError as exc:
            raise ApiError(404, str(exc)) from None
        return Response(data, media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="queue-{qid}.csv"'})

    async def next_queue_item(self, request: Request) -> Response:
        """POST /api/v1/queues/{id}/next {reviewer} → {item} held for them (null: nothing left for them)."""
        from ..team import queues

        body = await self._object_body(request)
        qid = request.path_params["queue_id"]
        return await self._team_call(lambda: {"item": queues.next_item(self.store(), qid, body.get("reviewer"),
                                                                        actor=request.state.actor)})

    async def work_queue_item(self, request: Request) -> Response:
        """POST /api/v1/queues/{id}/items/{item}/review {reviewer, verdict, criteria?, note?, should_have?} or …/skip {reviewer}."""
        from ..team import queues

        body = await self._object_body(request)
        qid, item, verb = request.path_params["queue_id"], request.path_params["item_id"], request.path_params["verb"]
        if verb not in ("review", "skip"):
            raise ApiError(404, f"no action {verb!r} on a queue item (review, skip)")

        def act() -> dict:
            if verb == "skip":
                queues.skip(self.store(), qid, item, body.get("reviewer"), actor=request.state.actor)
            else:
                criteria = body.get("criteria")
                if criteria is not None and not isinstance(criteria, dict):
                    raise queues.QueueError("criteria: expected an object of criterion: pass | fail")
                queues.save_review(self.store(), qid, item, body.get("reviewer"), body.get("verdict"), criteria=criteria,
                                   note=body.get("note"), should_have=body.get("should_have"), actor=request.state.actor)
            return {"queue": qid, "item": item, "saved": verb}

        return await self._team_call(act)

    async def create_share(self, request: Request) -> Response:
        """POST /api/v1/shares {session, other?} | {queue}, expires? ("7d") → {id, token, url, expires_at}; the token only here."""
        from ..team import shares

        body = await self._object_body(request)

        def make() -> dict:
            kind = shares.QUEUE if body.get("queue") is not None else shares.COMPARE if body.get("other") else shares.RUN
            queue = body.get("queue")
            if queue is not None and not isinstance(queue, int):
                raise shares.ShareError("queue: expected a queue id")
            return shares.make(self.store(), kind, session=body.get("session"), other=body.get("other"), queue=queue,
                               expires=shares.parse_expiry(body.get("expires")), actor=request.state.actor)

        return await self._team_call(make, 201)

    async def list_shares(self, request: Request) -> Response:
        from ..team import shares

        return await self._team_call(lambda: {"shares": shares.list_links(self.store(), actor=request.state.actor)})

    async def revoke_share(self, request: Request) -> Response:
        from ..team import shares

        sid = request.path_params["share_id"]
        if not await run_in_threadpool(lambda: shares.revoke(self.store(), sid, actor=request.state.actor)):
            raise ApiError(404, f"no link {sid} that still opens")
        return json_response({"id": sid, "revoked": True})

    async def open_share(self, request: Request) -> Response:
        """GET /api/v1/share/{token}: the one object the link was made for (404 unknown, 410 expired, revoked or deleted)."""
        from ..team import shares
        from .shared import shared_object

        origin = request.client.host if request.client else "api"
        store = self.store()
        private = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
        try:
            body = await run_in_threadpool(lambda: shared_object(store, shares.open_link(store, request.path_params["token"], origin=origin)))
        except shares.ShareNotFound:
            raise ApiError(404, "no such link", headers=private) from None
        except shares.ShareGone as exc:
            return json_response({"detail": str(exc), "reason": exc.reason}, 410, private)
        return json_response(body, headers=private)

    async def compare_experiments(self, request: Request) -> Response:
        """GET /api/v1/experiments/{a}/compare/{b}[?by=position]: per variant and scorer, what B improved or regressed."""
        from ..whatif.experiment_compare import CompareError, compare_experiments

        a, b = request.path_params["a"], request.path_params["b"]
        by = request.query_params.get("by", "name")
        if by not in ("name", "position"):
            raise ApiError(422, "by: expected name or position", [{"loc": "by", "msg": "expected name or position"}])
        try:
            return json_response(await run_in_threadpool(compare_experiments, self.store(), a, b, by_position=by == "position"))
        except CompareError as exc:
            raise ApiError(404 if str(exc).startswith("no experiment") else 422, str(exc)) from None


def _session_id(request: Request) -> str:
    """The session id in the path, refused (422) when no stored run could have it."""
    sid = request.path_params["session_id"]
    msg = None
    if "\x00" in sid:
        msg = "NUL character (\\x00) is not allowed"
    elif len(sid) > ID_MAX:
        msg = f"at most {ID_MAX} characters"
    if msg:
        raise ApiError(422, f"session_id: {msg}", [{"loc": "session_id", "msg": msg}])
    return sid


def _flag(params: Mapping[str, str], name: str) -> bool:
    raw = (params.get(name) or "").strip().lower()
    if raw in ("", "0", "false", "no"):
        return False
    if raw in ("1", "true", "yes"):
        return True
    raise ApiError(422, f"{name}: expected true or false, got {raw!r}", [{"loc": name, "msg": "expected true or false"}])


# PostgreSQL SQLSTATEs that say "not now" rather than "not this": read-only transaction,
# and class 53 (insufficient resources: disk full, out of memory, too many connections).
_NOT_NOW_STATES = ("25006", "53")


def _cannot_write_now(exc: Exception) -> bool:
    if isinstance(exc, sa_exc.OperationalError):
        return True
    state = getattr(getattr(exc, "orig", None), "sqlstate", None) or ""
    return isinstance(exc, sa_exc.DBAPIError) and state.startswith(_NOT_NOW_STATES)


def _db_reason(exc: sa_exc.DBAPIError) -> str:
    """The driver's first line (e.g. "attempt to write a readonly database"), never the SQL."""
    orig = getattr(exc, "orig", None) or exc
    return (str(orig).strip().splitlines() or [type(orig).__name__])[0][:200]


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


def _sniff_media_type(data: bytes) -> str:
    """From the bytes, not from what a trace declared: a stored "image" is never served as HTML."""
    for magic, kind in ((b"\x89PNG", "image/png"), (b"\xff\xd8", "image/jpeg"), (b"GIF8", "image/gif")):
        if data.startswith(magic):
            return kind
    return "image/webp" if data[:4] == b"RIFF" and data[8:12] == b"WEBP" else "application/octet-stream"


def create_app(store: Store | None = None, *, access: Access | None = None, max_body: int | None = None) -> Starlette:
    """The API alone as an ASGI app (tests, or serving it without the UI); its own 404s and
    405s are JSON too."""

    async def http_error(request: Request, exc: HTTPException) -> Response:
        return json_response({"detail": exc.detail}, exc.status_code, exc.headers)

    return Starlette(routes=routes(store, access=access, max_body=max_body), exception_handlers={HTTPException: http_error})

"""The LangSmith SDK pointed here (`LANGSMITH_ENDPOINT=<app>`, `LANGSMITH_API_KEY=<token>`, `LANGSMITH_TRACING=true`).

The SDK first asks `GET /info` how to send (answered: multipart, zstd allowed), then posts runs in
batches to `/runs/multipart` (zstd-compressed when zstandard is installed beside it), or, told so, JSON
`{"post": [...], "patch": [...]}` to `/runs/batch`; without batching, `POST /runs` and `PATCH /runs/{id}`.
A run's start (`post`) and end (`patch`) often travel in different requests, and a trace's root ends
last; so the runs of a trace are held here, merged by id, until its root and every run held have ended
(no end waiting for its start), then stored at once as the `langchain` reader reads a run tree (one
session per trace); a run of a stored trace that comes later still waits for the trace to be idle. A trace idle for
AGENT_REPLAY_IDLE_MINUTES, or the oldest when more than MAX_HELD_RUNS runs wait, is stored as it stands
(its run left open). A patch whose post never came is named in the answer (`patches_without_post`) and
the log, not dropped silently. Held runs live in this process's memory: a restart loses the traces
still open.
"""

from __future__ import annotations

import io
import logging
import threading
import time
from collections.abc import Iterable
from typing import Any

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ... import config
from ...ingest.formats import langchain
from ...ingest.formats.reader import BadRecord
from ...ingest.pipeline import IngestReport, ingest
from ...storage.actor import INGEST
from ...storage.store import Store
from ..bodies import body_bytes
from ..context import ApiContext
from ..responses import ApiError, json_response

SOURCE = "langsmith"
MAX_HELD_RUNS = 100_000
_FIELDS = ("inputs", "outputs", "events", "extra", "serialized", "error")
log = logging.getLogger(__name__)

# what the SDK reads from /info: it reads every batch key, so all are given
INFO = {
    "version": "agent-replay",
    "batch_ingest_config": {
        "use_multipart_endpoint": True,
        "size_limit": 100,
        "size_limit_bytes": 20_971_520,
        "scale_up_nthreads_limit": 16,
        "scale_up_qsize_trigger": 1000,
        "scale_down_nempty_trigger": 4,
    },
    "instance_flags": {"zstd_compression_enabled": True},
}


class HeldTraces:
    """The runs of unfinished traces, merged by run id, and the traces already stored (for late patches)."""

    def __init__(self, store: Store):
        self.store = store
        self.lock = threading.Lock()
        self.runs: dict[str, dict[str, dict]] = {}  # trace id -> run id -> the run's fields so far
        self.patches: dict[str, dict[str, dict]] = {}  # trace id -> run id -> a patch that came before its post
        self.touched: dict[str, float] = {}
        self.stored: dict[str, float] = {}  # trace ids stored, when (forgotten after the idle time)

    def receive(self, posts: Iterable[Any], patches: Iterable[Any]) -> dict:
        """Hold `posts` and `patches`, store every trace whose root has ended; what happened, for the answer."""
        report, late, refused = IngestReport(), [], []
        now = time.monotonic()
        with self.lock:
            touched: set[str] = set()
            for half, items in (("post", posts), ("patch", patches)):
                for run in items:
                    tid = _trace_of(run)
                    if tid is None:
                        refused.append(f"{half}: a run without an id")
                        continue
                    if half == "patch" and tid in self.stored and not self._holds(tid, str(run["id"])):
                        late.append(str(run["id"]))
                        continue
                    self._hold(tid, str(run["id"]), run, half)
                    touched.add(tid)
            for tid in touched:
                self.touched[tid] = now
            done = [t for t in touched if self._complete(t)]
            done += self._overdue(now, exclude=set(done))
            for tid in done:
                late += self._store(tid, report, now)
        for rid in late:
            log.warning("LangSmith: a patch of run %s whose post never came; not stored", rid)
        return report.to_dict() | {
            "held_runs": sum(len(r) for r in self.runs.values()),
            "patches_without_post": late,
            "refused": refused,
        }

    def _complete(self, tid: str) -> bool:
        """Whether a trace can be stored: its root (the run whose id is the trace's) has ended, and so has every
        run held, and no end waits for its start (requests of one trace may arrive out of order)."""
        runs = self.runs.get(tid, {})
        return _ended(runs.get(tid)) and not self.patches.get(tid) and all(_ended(r) for r in runs.values())

    def _holds(self, tid: str, rid: str) -> bool:
        return rid in self.runs.get(tid, {})

    def _hold(self, tid: str, rid: str, run: dict, half: str) -> None:
        runs = self.runs.setdefault(tid, {})
        if half == "post":
            runs[rid] = {**runs.get(rid, {}), **run}
            early = self.patches.get(tid, {}).pop(rid, None)
            if early is not None:
                runs[rid].update({k: v for k, v in early.items() if v is not None})
        elif rid in runs:
            runs[rid].update({k: v for k, v in run.items() if v is not None})
        else:
            self.patches.setdefault(tid, {})[rid] = run

    def _overdue(self, now: float, exclude: set[str]) -> list[str]:
        idle = config.idle_timeout().total_seconds()
        out = [t for t, at in self.touched.items() if now - at > idle and t not in exclude]
        held = sum(len(r) for r in self.runs.values())
        for tid in sorted(self.touched, key=self.touched.__getitem__):
            if held <= MAX_HELD_RUNS:
                break
            if tid not in out and tid not in exclude:
                out.append(tid)
                held -= len(self.runs.get(tid, {}))
        self.stored = {t: at for t, at in self.stored.items() if now - at <= idle}
        return out

    def _store(self, tid: str, report: IngestReport, now: float) -> list[str]:
        """Store one trace's runs (the lock held: a trace is stored once); the ids of its patches without a post.
        A store that fails (the database down) raises with the trace still held, for the SDK's retry."""
        runs = list(self.runs.get(tid, {}).values())
        if runs:
            items = list(langchain.run_events(runs, f"trace {tid}"))
            done = ingest(self.store, [e for e in items if not isinstance(e, BadRecord)], source=SOURCE)
            done.errors += [e for e in items if isinstance(e, BadRecord)]
            report.add(done)
        self.runs.pop(tid, None)
        self.touched.pop(tid, None)
        self.stored[tid] = now
        return list(self.patches.pop(tid, {}))


def _trace_of(run: Any) -> str | None:
    if not isinstance(run, dict) or not run.get("id"):
        return None
    return str(run.get("trace_id") or run["id"])


def _ended(run: dict | None) -> bool:
    return run is not None and bool(run.get("end_time") or run.get("error"))


def multipart_halves(fields: Iterable[tuple[str, Any]]) -> tuple[list[dict], list[dict], int]:
    """The runs of a `/runs/multipart` body: `post.<id>` / `patch.<id>` parts with `.<field>` parts beside
    them (inputs, outputs, extra…); attachments and feedback parts are counted, not read."""
    halves: dict[tuple[str, str], dict] = {}
    ignored = 0
    for name, value in fields:
        half, _, rest = name.partition(".")
        if half not in ("post", "patch") or not isinstance(value, str):
            ignored += 1
            continue
        rid, _, field = rest.partition(".")
        try:
            data = orjson.loads(value)
        except orjson.JSONDecodeError:
            raise ApiError(400, f"multipart part {name!r}: not JSON") from None
        run = halves.setdefault((half, rid), {"id": rid})
        if not field:
            if not isinstance(data, dict):
                raise ApiError(422, f"multipart part {name!r}: expected a run object")
            run.update(data)
        elif field in _FIELDS:
            run[field] = data
        else:
            ignored += 1
    posts = [r for (half, _), r in halves.items() if half == "post"]
    return posts, [r for (half, _), r in halves.items() if half == "patch"], ignored


class LangSmithRoutes:
    def __init__(self, api: ApiContext):
        self.api = api
        self._held: HeldTraces | None = None
        self._held_lock = threading.Lock()

    def held(self) -> HeldTraces:
        with self._held_lock:
            if self._held is None:
                self._held = HeldTraces(self.api.store())
            return self._held

    def routes(self) -> list[Route]:
        def writes(handler):
            return _api_key_as_bearer(self.api.guarded(handler, INGEST))

        return [
            Route("/info", self.api.answered(self.info), methods=["GET"]),
            Route("/runs/batch", writes(self.batch), methods=["POST"]),
            Route("/runs/multipart", writes(self.multipart), methods=["POST"]),
            Route("/runs", writes(self.create_run), methods=["POST"]),
            Route("/runs/{run_id}", writes(self.update_run), methods=["PATCH"]),
        ]

    async def info(self, request: Request) -> Response:
        """GET /info: how the SDK is to send its runs."""
        return json_response(INFO)

    async def _json(self, request: Request) -> Any:
        data = await body_bytes(request, self.api.max_body)
        try:
            return await run_in_threadpool(orjson.loads, data)
        except orjson.JSONDecodeError as exc:
            raise ApiError(400, f"body: invalid JSON ({exc.args[0]})", [{"loc": "body", "msg": "invalid JSON"}]) from None

    async def _receive(self, posts: list, patches: list, ignored: int = 0) -> Response:
        answer = await run_in_threadpool(self.held().receive, posts, patches)
        return json_response(answer | ({"ignored_parts": ignored} if ignored else {}))

    async def batch(self, request: Request) -> Response:
        """POST /runs/batch: `{"post": [runs], "patch": [runs]}`."""
        body = await self._json(request)
        if not isinstance(body, dict) or not all(isinstance(body.get(k, []), list) for k in ("post", "patch")):
            raise ApiError(422, 'body: expected {"post": [runs], "patch": [runs]}')
        return await self._receive(body.get("post", []), body.get("patch", []))

    async def multipart(self, request: Request) -> Response:
        """POST /runs/multipart: one part per run half and per large field of it; zstd-compressed (as the SDK
        sends when /info offers it and zstandard is installed beside it) or not."""
        encoding = request.headers.get("content-encoding", "identity").lower()
        if encoding == "zstd":
            request = await self._unpacked(request)
        elif encoding != "identity":
            raise ApiError(415, f"content-encoding {encoding!r}: send runs as zstd or uncompressed")
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.api.max_body:
            raise _too_big(self.api.max_body)
        async with request.form(max_files=1000, max_fields=100_000, max_part_size=self.api.max_body) as form:
            posts, patches, ignored = multipart_halves(form.multi_items())
        return await self._receive(posts, patches, ignored)

    async def _unpacked(self, request: Request) -> Request:
        """The request with its zstd body unpacked (refused past the body limit, packed or not)."""
        limit = self.api.max_body
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _too_big(limit)
            chunks.append(chunk)
        data = await run_in_threadpool(_unzstd, b"".join(chunks), limit)
        headers = [(k, v) for k, v in request.scope["headers"] if k not in (b"content-encoding", b"content-length")]
        scope = dict(request.scope, headers=[*headers, (b"content-length", str(len(data)).encode())])
        sent = False

        async def receive() -> dict:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": data, "more_body": False}

        return Request(scope, receive)

    async def create_run(self, request: Request) -> Response:
        """POST /runs: one run's start (the SDK without batching)."""
        body = await self._json(request)
        if not isinstance(body, dict):
            raise ApiError(422, "body: expected a run object")
        return await self._receive([body], [])

    async def update_run(self, request: Request) -> Response:
        """PATCH /runs/{run_id}: one run's end (the SDK without batching)."""
        body = await self._json(request)
        if not isinstance(body, dict):
            raise ApiError(422, "body: expected a run object")
        return await self._receive([], [body | {"id": request.path_params["run_id"]}])


def _too_big(limit: int) -> ApiError:
    return ApiError(413, f"body larger than {limit / 1024 / 1024:g} MB (AGENT_REPLAY_MAX_BODY_MB)")


def _unzstd(data: bytes, limit: int) -> bytes:
    import zstandard

    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
            out = reader.read(limit + 1)
    except zstandard.ZstdError as exc:
        raise ApiError(400, f"body: not valid zstd ({exc})") from None
    if len(out) > limit:
        raise _too_big(limit)
    return out


def _api_key_as_bearer(endpoint):
    """The SDK sends its key as `x-api-key`: read as the bearer token the other routes take."""

    async def keyed(request: Request) -> Response:
        key = request.headers.get("x-api-key")
        if key and "authorization" not in request.headers:
            scope = dict(request.scope)
            scope["headers"] = [*request.scope["headers"], (b"authorization", b"Bearer " + key.encode("latin-1"))]
            request = Request(scope, request.receive)
        return await endpoint(request)

    vars(keyed).update(vars(endpoint))  # the role it needs, for the OpenAPI document
    return keyed

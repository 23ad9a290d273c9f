"""Writes: open a run, add steps, end it, attach a screenshot, and OTLP/HTTP traces (`/v1/traces`, and the
Langfuse SDK's own path for them, `/api/public/otel/v1/traces`, where it sends its key pair as Basic auth).

Bodies are native contract objects; every write needs a bearer token, is validated whole before
anything is stored (one bad item refuses the batch, naming `steps[3].type`), then redacted and
stored in one transaction. Concurrent requests' batches are written together, in one transaction
(`JoinedWrites`); each request is still answered only once its own batch is committed, with its
own counts or its own error.
"""

from __future__ import annotations

import base64

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...ingest import otlp_worker
from ...ingest.otlp_logs import receive_logs
from ...ingest.pipeline import IngestReport, ingest
from ...monitors.debounce import after_ingest
from ...storage.actor import INGEST
from ...storage.worker import WRITE_LANES, JoinedWrites, JoiningStore, OffloadedWrites
from ...team.audit import ATTACH
from ..bodies import body_bytes, json_body, multipart_image
from ..context import API_PREFIX, ApiContext
from ..params import flag, session_id
from ..responses import ApiError, json_response
from ..validation import parse_event, parse_events, step_items

SOURCE = "http"
OTLP_MEDIA = ("application/x-protobuf", "application/protobuf", "application/json")
LANGFUSE_TRACES = "/api/public/otel/v1/traces"  # where the Langfuse SDK exports to, under LANGFUSE_HOST


class IngestRoutes:
    def __init__(self, api: ApiContext):
        self.api = api
        # the joined writes run in a worker process (storage.worker), this one left the requests
        self._joined = JoinedWrites(self._write_lanes, default_source=SOURCE, refuse_conflicts=True)

    def _write_lanes(self) -> list[OffloadedWrites]:
        """The joined writes' lanes: one per write worker PostgreSQL takes at once, one on SQLite."""
        store = self.api.store()
        lanes = WRITE_LANES.get(store.dialect, 1)
        return [OffloadedWrites(store, lane, lanes) for lane in range(lanes)]

    def routes(self) -> list[Route]:
        sid = "{session_id:path}"  # ids may hold "/" (sent URL-encoded); the specific routes come first

        def writes(handler):  # a burst of writes gets the monitors judged once it quiets down
            return after_ingest(self.api.guarded(handler, INGEST))

        return [
            Route(f"{API_PREFIX}/sessions", writes(self.create_session), methods=["POST"]),
            Route(f"{API_PREFIX}/sessions/{sid}/steps/{{event_id}}/attachments", writes(self.add_attachment), methods=["POST"]),
            Route(f"{API_PREFIX}/sessions/{sid}/steps", writes(self.add_steps), methods=["POST"]),
            Route(f"{API_PREFIX}/sessions/{sid}/end", writes(self.end_session), methods=["POST"]),
            Route("/v1/traces", writes(self.otlp_traces), methods=["POST"]),
            Route(LANGFUSE_TRACES, writes(self.otlp_traces), methods=["POST"]),
            Route("/v1/logs", writes(self.otlp_logs), methods=["POST"]),
        ]

    async def _ingest(self, events: list, request: Request) -> Response:
        replace = flag(request.query_params, "replace")
        store, actor = JoiningStore(self.api.store(), self._joined), request.state.actor
        report: IngestReport = await run_in_threadpool(
            lambda: ingest(store, events, source=SOURCE, replace=replace, refuse_conflicts=True, actor=actor, audit=actor)
        )
        self.api.degraded = None
        body = report.to_dict()
        body.pop("files", None)
        body.pop("conflicts", None)  # refused above (409), so always empty here
        return json_response(body)

    async def create_session(self, request: Request) -> Response:
        """POST /api/v1/sessions: open a run (or update its dimensions)."""
        event = await run_in_threadpool(parse_event, await json_body(request, self.api.max_body), {"kind": "session"})
        return await self._ingest([event], request)

    async def add_steps(self, request: Request) -> Response:
        """POST /api/v1/sessions/{id}/steps: one step or a batch, stored whole or not at all."""
        sid = session_id(request)
        items = step_items(await json_body(request, self.api.max_body))
        events = await run_in_threadpool(parse_events, items, "steps", {"kind": "step", "session_id": sid})
        return await self._ingest(events, request)

    async def add_attachment(self, request: Request) -> Response:
        """POST /api/v1/sessions/{id}/steps/{event_id}/attachments: a screenshot of a step, as the raw image
        (content-type image/*), multipart (field `file`, optional `target` JSON), or JSON {media_type, data (base64), target}."""
        sid, event_id = session_id(request), request.path_params["event_id"]
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind.startswith("image/"):
            body = {"media_type": kind, "data": base64.b64encode(await body_bytes(request, self.api.max_body)).decode()}
        elif kind == "multipart/form-data":
            body = await multipart_image(request, self.api.max_body)
        else:
            body = await json_body(request, self.api.max_body)
            if not isinstance(body, dict):
                raise ApiError(422, "body: expected a JSON object {media_type, data, target}")
        event = parse_event(body, {"kind": "attachment", "session_id": sid, "event_id": event_id})
        await self.api.session_or_404(sid)
        report: IngestReport = await run_in_threadpool(ingest, self.api.store(), [event], source=SOURCE)
        if report.media_refused:
            raise ApiError(422, report.media_refused[0], [{"loc": "body.data", "msg": r} for r in report.media_refused])
        await self.api.audit(request, ATTACH, f"{sid} {event_id}", media_type=event.media_type)
        return json_response({"session_id": sid, "event_id": event_id, "stored": True})

    async def end_session(self, request: Request) -> Response:
        """POST /api/v1/sessions/{id}/end: close a run (an empty body means it succeeded)."""
        sid = session_id(request)
        body = await json_body(request, self.api.max_body, empty={})
        event = await run_in_threadpool(parse_event, body, {"kind": "session_end", "session_id": sid})
        await self.api.session_or_404(sid)
        return await self._ingest([event], request)

    async def _otlp_body(self, request: Request) -> tuple[str, str, bytes]:
        """(content type, its media type, the body unpacked) of an OTLP/HTTP request; 415 for another encoding."""
        content_type = request.headers.get("content-type", "")
        media = content_type.split(";", 1)[0].strip().lower()
        if media not in OTLP_MEDIA:
            raise ApiError(415, f"Content-Type {content_type!r}: expected application/x-protobuf or application/json")
        return content_type, media, await body_bytes(request, self.api.max_body)

    async def otlp_traces(self, request: Request) -> Response:
        """POST /v1/traces: OTLP/HTTP (protobuf or JSON) from any OpenTelemetry exporter; the Langfuse SDK's too."""
        content_type, media, data = await self._otlp_body(request)
        try:  # reading, mapping and storing off the event loop (a big body in the worker process): /healthz keeps answering
            report = await run_in_threadpool(otlp_worker.receive, self.api.store(), data, content_type)
        except ValueError as exc:
            raise ApiError(400, f"body: {exc}", [{"loc": "body", "msg": str(exc)}]) from None
        await self.api.audit(request, INGEST, ",".join(report.sessions), sessions=len(report.sessions), steps=report.steps)
        return _traces_response(report.set_up, media, report.warnings)

    async def otlp_logs(self, request: Request) -> Response:
        """POST /v1/logs: OTLP/HTTP logs; GenAI events (message content in events mode) joined to their spans."""
        content_type, media, data = await self._otlp_body(request)
        try:
            account = await run_in_threadpool(receive_logs, self.api.store(), data, content_type)
        except ValueError as exc:
            raise ApiError(400, f"body: {exc}", [{"loc": "body", "msg": str(exc)}]) from None
        return _logs_response(account, media)


def _traces_response(set_up: list[str], media: str, warnings: list[str]) -> Response:
    """An ExportTraceServiceResponse in the encoding of the request: empty (full success), or, when the batch held
    a framework's set-up traces (an agent being built: no model call, no tool) or the import warned (a user id
    kept cut), a partial success that rejects nothing and says so (OTLP's way to warn)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    answer = ExportTraceServiceResponse()
    said = list(warnings)
    if set_up:
        said.insert(
            0,
            f"{len(set_up)} set-up trace{'s' if len(set_up) != 1 else ''} with no model call or tool (an agent being "
            f"built) kept out of the runs: {', '.join(set_up[:10])}" + (" …" if len(set_up) > 10 else ""),
        )
    if said:
        answer.partial_success.error_message = "; ".join(said)
    return _encoded(answer, media)


def _encoded(answer, media: str) -> Response:
    """An OTLP answer message in the encoding of the request."""
    from google.protobuf.json_format import MessageToJson

    if media == "application/json":
        return Response(MessageToJson(answer, indent=None).encode(), media_type="application/json")
    return Response(answer.SerializeToString(), media_type="application/x-protobuf")


def _logs_response(account: dict, media: str) -> Response:
    """An ExportLogsServiceResponse in the encoding of the request: records not read (not GenAI events naming a
    span) are told as OTLP's partial success, rejected, with the reason by kind."""
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse

    answer = ExportLogsServiceResponse()
    ignored = account["ignored"]
    if ignored:
        answer.partial_success.rejected_log_records = sum(ignored.values())
        answer.partial_success.error_message = "not read: " + ", ".join(f"{n} {kind}" for kind, n in sorted(ignored.items()))
    return _encoded(answer, media)

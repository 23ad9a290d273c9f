"""The OpenAPI 3.1 document of the HTTP API (its readable page: openapi_page.py).

Built from the route table itself (paths, methods, the role each guarded route needs) and
from the pydantic models that validate the bodies (`events.py`), so it cannot drift from
what the server does: a route with no entry in OPERATIONS makes `document()` raise (and the
test fail). Answers are described by the small models below; every 4xx/5xx is the JSON
error shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema
from starlette.routing import Route

from ..events import ID_MAX, INT_MAX, AttachmentEvent, SessionEndEvent, SessionEvent, SessionStatus, StepEvent
from ..storage.actor import MAY, ROLES
from .openapi_loop import loop_operations

TITLE = "Agent Replay HTTP API"
REF = "#/components/schemas/{model}"


# ---------------------------------------------------------------- what the routes answer


class _Answer(BaseModel):
    model_config = ConfigDict(extra="allow")  # answers may grow a field; clients ignore what they do not know


class FieldError(BaseModel):
    loc: str = Field(description="the field at fault: `steps[3].type`, `limit`, `body`")
    msg: str


class ErrorBody(BaseModel):
    """Every answer other than 2xx."""

    detail: str = Field(description="one line: what was refused and why")
    errors: list[FieldError] | None = Field(None, description="every field at fault, when a body or parameter was")


class IngestAnswer(_Answer):
    """What a write stored: runs touched, steps stored, duplicates skipped (re-sent event ids), values redacted."""

    sessions: list[str]
    steps: int
    duplicates: int
    redacted: int
    errors: list[str]
    media_refused: list[str] | None = None
    warnings: list[str] | None = None


class Health(_Answer):
    status: str = Field(description="`ok`, or `degraded` while writes fail (disk full, read-only database)")
    sessions: int
    reason: str | None = None


class SessionsPage(_Answer):
    total: int
    limit: int
    offset: int
    sessions: list[dict[str, Any]]


class SessionView(_Answer):
    """A run, its steps (without contexts), cycles and gaps."""

    session: dict[str, Any]
    summary: str = Field(description="one line: how the run went")
    steps: list[dict[str, Any]]
    cycles: list[dict[str, Any]]
    gaps: list[dict[str, Any]]


class AttachmentStored(_Answer):
    session_id: str
    event_id: str
    stored: bool


class Datasets(_Answer):
    datasets: list[dict[str, Any]]


class Experiments(_Answer):
    experiments: list[dict[str, Any]]


class ExperimentStarted(_Answer):
    experiment: str
    status: str
    estimates: list[dict[str, Any]]
    poll: str


class ExperimentStopping(_Answer):
    experiment: str
    status: str = Field(description="`stopping`: it becomes `stopped` once its runner has seen the request")
    poll: str


class Steps(BaseModel):
    """A batch of steps as `{"steps": [...]}`."""

    steps: list[StepEvent]


ANSWERS = (
    ErrorBody,
    IngestAnswer,
    Health,
    SessionsPage,
    SessionView,
    AttachmentStored,
    Datasets,
    Experiments,
    ExperimentStarted,
    ExperimentStopping,
)
BODIES = (SessionEvent, StepEvent, Steps, SessionEndEvent, AttachmentEvent)


# ---------------------------------------------------------------- operations


@dataclass(frozen=True)
class Op:
    """What the route table cannot say about one operation."""

    summary: str
    answer: str | None = None  # a component name, or None for a body described in `media`
    status: int = 200
    body: dict | None = None  # a requestBody object
    query: tuple[dict, ...] = ()
    media: dict = field(default_factory=dict)  # answer content other than JSON
    tag: str = "runs"
    errors: dict | None = None  # the errors' content when not the JSON error shape (a protocol's own)


def _q(name: str, schema: dict, description: str, required: bool = False) -> dict:
    return {"name": name, "in": "query", "required": required, "schema": schema, "description": description}


def _json(ref: str | dict) -> dict:
    return {"application/json": {"schema": {"$ref": REF.format(model=ref)} if isinstance(ref, str) else ref}}


def _ref(name: str) -> dict:
    return {"$ref": REF.format(model=name)}


_TEXT = {"type": "string", "maxLength": 500}
_REPLACE = _q(
    "replace",
    {"type": "string", "enum": ["true", "false", "1", "0", "yes", "no"]},
    "let this write change the end, status, name and outcome of a finished run (editors; in the audit log)",
)
_FILTERS = (
    *(
        _q(name, _TEXT, f"only runs whose {name} is this")
        for name in (
            "model",
            "agent_id",
            "workflow",
            "environment",
            "agent_version",
            "user_id",
            "thread_id",
            "tag",
            "source",
            "replay_of",
            "failed_tool",
            "error_class",
        )
    ),
    _q("status", {"type": "string", "enum": [s.value for s in SessionStatus]}, "only runs in this state"),
    _q("review", {"type": "string", "enum": ["good", "bad", "needs_review", "unreviewed"]}, "only runs reviewed so"),
    _q("has", {"type": "string"}, "only runs that have this (errors, loops, replays, notes…)"),
    _q("since", {"type": "string"}, "a day (2026-05-01) or an ISO date-time"),
    _q("until", {"type": "string"}, "a day (included) or an ISO date-time"),
    _q("q", _TEXT, "search names and step content"),
    _q(
        "replays",
        {"type": "string", "enum": ["1", "true", "yes", "0", "false", "no"]},
        "also list what-if replays and experiments' runs (original runs only by default)",
    ),
    _q("limit", {"type": "integer", "minimum": 1, "maximum": 500, "default": 50}, "page size"),
    _q("offset", {"type": "integer", "minimum": 0, "maximum": INT_MAX, "default": 0}, "rows to skip"),
)
_IMAGE = {"type": "string", "contentMediaType": "image/png", "contentEncoding": "binary"}
_OTLP_JSON = {
    "type": "object",
    "description": "ExportTraceServiceRequest, OTLP/JSON encoding",
    "properties": {"resourceSpans": {"type": "array", "items": {"type": "object"}}},
}
_OBJECT = {"type": "object", "additionalProperties": True}
_JSONRPC_ERROR = {
    "type": "object",
    "required": ["jsonrpc", "error"],
    "properties": {"jsonrpc": {"const": "2.0"}, "id": {}, "error": {"type": "object", "required": ["code", "message"]}},
}
_LANGSMITH_BATCH = {
    "type": "object",
    "properties": {"post": {"type": "array", "items": _OBJECT}, "patch": {"type": "array", "items": _OBJECT}},
}
_LANGSMITH_ANSWER = {
    "type": "object",
    "description": "what was stored (as IngestAnswer), the runs still held for their trace's end, and the ids of "
    "patches whose post never came",
    "properties": {
        "held_runs": {"type": "integer"},
        "patches_without_post": {"type": "array", "items": {"type": "string"}},
    },
    "additionalProperties": True,
}
_OTLP_ANSWER = {"application/json": {"schema": _OBJECT}, "application/x-protobuf": {"schema": {"type": "string"}}}


def _otlp_body(json_schema: dict) -> dict:
    """An OTLP/HTTP export request: protobuf or its JSON encoding."""
    return {
        "required": True,
        "content": {
            "application/x-protobuf": {"schema": {"type": "string", "contentEncoding": "binary"}},
            "application/json": {"schema": json_schema},
        },
    }


OPERATIONS: dict[tuple[str, str], Op] = {
    ("GET", "/healthz"): Op("Is the app up, and can it write?", "Health", tag="service"),
    ("GET", "/api/v1/openapi.json"): Op("This document.", None, media={"application/json": {"schema": _OBJECT}}, tag="service"),
    ("GET", "/api/v1/docs"): Op(
        "This document as a page.", None, media={"text/html": {"schema": {"type": "string"}}}, tag="service"
    ),
    ("POST", "/api/v1/sessions"): Op(
        "Open a run, or update its dimensions.",
        "IngestAnswer",
        body={"required": True, "content": _json("SessionEvent")},
        query=(_REPLACE,),
    ),
    ("GET", "/api/v1/sessions"): Op(
        "List runs, newest first, with the filters of the runs page.", "SessionsPage", query=_FILTERS
    ),
    ("GET", "/api/v1/sessions/{session_id}/stream"): Op(
        "Server-Sent Events: every step stored so far, then each as it is stored (`id:` its seq, `event: step`, `data:` the "
        "step as native JSON), heartbeats every 15 s; resume with the `Last-Event-ID` header.",
        None,
        media={"text/event-stream": {"schema": {"type": "string"}}},
        query=(
            _q("last_event_id", {"type": "string", "pattern": "^[0-9]*$"}, "resume after this seq (as the Last-Event-ID header)"),
        ),
    ),
    ("POST", "/api/v1/sessions/{session_id}/steps/{event_id}/attachments"): Op(
        "Attach a screenshot to a step: the raw image, multipart (`file`, optional `target` JSON) or JSON.",
        "AttachmentStored",
        body={
            "required": True,
            "content": {
                **_json("AttachmentEvent"),
                "image/png": {"schema": _IMAGE},
                "image/jpeg": {"schema": _IMAGE},
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "required": ["file"],
                        "properties": {
                            "file": {"type": "string", "contentMediaType": "application/octet-stream"},
                            "target": {"type": "string"},
                        },
                    }
                },
            },
        },
    ),
    ("POST", "/api/v1/sessions/{session_id}/steps"): Op(
        "Add one step or a batch, stored whole or not at all.",
        "IngestAnswer",
        query=(_REPLACE,),
        body={
            "required": True,
            "content": _json({"oneOf": [_ref("StepEvent"), {"type": "array", "items": _ref("StepEvent")}, _ref("Steps")]}),
        },
    ),
    ("GET", "/api/v1/attachments/{attachment_id}"): Op(
        "An attachment's bytes, with the media type read from them.",
        None,
        media={"application/octet-stream": {"schema": {"type": "string"}}, "image/png": {"schema": _IMAGE}},
    ),
    ("POST", "/api/v1/sessions/{session_id}/end"): Op(
        "Close a run (an empty body: it succeeded).",
        "IngestAnswer",
        body={"required": False, "content": _json("SessionEndEvent")},
        query=(_REPLACE,),
    ),
    ("GET", "/api/v1/sessions/{session_id}/snapshot"): Op(
        "The agent's state at a step: its real context.",
        None,
        media=_json(_OBJECT),
        query=(_q("step", {"type": "integer", "minimum": 0, "maximum": INT_MAX}, "the step's seq", required=True),),
    ),
    ("GET", "/api/v1/sessions/{session_id}/explain"): Op(
        "Why a failed, incomplete or unknown-outcome run failed.",
        None,
        media=_json(_OBJECT),
        query=(_q("replays", {"type": "string", "enum": ["0", "1", "true", "false", "yes", "no"]}, "weigh in its replays"),),
    ),
    ("GET", "/api/v1/sessions/{session_id}"): Op("A run with its steps, cycles and gaps.", "SessionView"),
    ("GET", "/api/v1/threads"): Op(
        "Conversations (runs sharing a thread_id) of the runs the filters pick, the latest first: runs, failed runs, "
        "first and last start, users, tokens and cost.",
        None,
        media=_json(_OBJECT),
        query=tuple(q for q in _FILTERS if q["name"] != "offset"),
    ),
    ("GET", "/api/v1/threads/{thread_id}"): Op(
        "A conversation: its runs oldest first, each with its totals, and the thread's totals.", None, media=_json(_OBJECT)
    ),
    ("POST", "/v1/traces"): Op(
        "OTLP/HTTP traces from any OpenTelemetry exporter: a trace is one run whatever batches it comes in.",
        None,
        body=_otlp_body(_OTLP_JSON),
        media=_OTLP_ANSWER,
        tag="otlp",
    ),
    ("POST", "/mcp"): Op(
        "Model Context Protocol over streamable HTTP (stateless, JSON answers): tools that search runs, read the state "
        "at a step, explain a failure, compare two runs, replay, review and share (docs/mcp.md). Each tool needs its own role.",
        None,
        body={"required": True, "content": {"application/json": {"schema": _OBJECT}}},
        media=_json(_OBJECT),
        tag="mcp",
        # past the token check, a malformed call is answered by the protocol: a JSON-RPC error object
        errors={"application/json": {"schema": {"anyOf": [_ref("ErrorBody"), _JSONRPC_ERROR]}}},
    ),
    ("POST", "/api/public/otel/v1/traces"): Op(
        "The Langfuse SDK's traces (LANGFUSE_HOST set to this app): OTLP/HTTP, gzipped or not, read as /v1/traces "
        "reads them; its key pair as Basic auth (the secret key is an API token).",
        None,
        body=_otlp_body(_OTLP_JSON),
        media=_OTLP_ANSWER,
        tag="otlp",
    ),
    ("POST", "/v1/logs"): Op(
        "OTLP/HTTP logs: GenAI events (a model call's messages sent as log records, events mode) joined to the spans "
        "they name, whichever arrives first; other records counted and ignored.",
        None,
        body=_otlp_body({"type": "object", "description": "ExportLogsServiceRequest, OTLP/JSON encoding"}),
        media=_OTLP_ANSWER,
        tag="otlp",
    ),
    ("GET", "/info"): Op(
        "For the LangSmith SDK (LANGSMITH_ENDPOINT set to this app): how to send runs (multipart, zstd allowed).",
        None,
        media=_json(_OBJECT),
        tag="langsmith",
    ),
    ("POST", "/runs/multipart"): Op(
        "The LangSmith SDK's runs: `post.<id>` / `patch.<id>` parts (and their `.inputs`, `.outputs`, `.extra`… parts); "
        "a trace's runs are merged by id and stored once its root has ended. The key as `x-api-key` or a bearer token.",
        None,
        body={"required": True, "content": {"multipart/form-data": {"schema": _OBJECT}}},
        media=_json(_LANGSMITH_ANSWER),
        tag="langsmith",
    ),
    ("POST", "/runs/batch"): Op(
        "The LangSmith SDK's runs as JSON: `{post: [runs], patch: [runs]}`, held and stored as /runs/multipart.",
        None,
        body={"required": True, "content": _json(_LANGSMITH_BATCH)},
        media=_json(_LANGSMITH_ANSWER),
        tag="langsmith",
    ),
    ("POST", "/runs"): Op(
        "One LangSmith run's start (the SDK without batching).",
        None,
        body={"required": True, "content": _json(_OBJECT)},
        media=_json(_LANGSMITH_ANSWER),
        tag="langsmith",
    ),
    ("PATCH", "/runs/{run_id}"): Op(
        "One LangSmith run's end (the SDK without batching).",
        None,
        body={"required": True, "content": _json(_OBJECT)},
        media=_json(_LANGSMITH_ANSWER),
        tag="langsmith",
    ),
    ("POST", "/api/v1/datasets"): Op(
        "Make a dataset from runs (by id, or by a filter).",
        None,
        status=201,
        tag="experiments",
        media=_json(_OBJECT),
        body={
            "required": True,
            "content": _json(
                {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "runs": {"type": "array", "items": {"type": "string"}},
                        "filter": {
                            "type": "object",
                            "properties": {k: {"type": "string"} for k in ("status", "workflow", "since", "search")},
                            "additionalProperties": False,
                        },
                        "expected": {},
                        "match": {"type": "string"},
                        "description": {"type": "string"},
                    },
                }
            ),
        },
    ),
    ("GET", "/api/v1/datasets"): Op("List datasets.", "Datasets", tag="experiments"),
    ("GET", "/api/v1/datasets/{name}"): Op("A dataset and its cases.", None, media=_json(_OBJECT), tag="experiments"),
    ("POST", "/api/v1/experiments"): Op(
        "Launch an experiment: replay a dataset under models or variants (runs in the background; costs money).",
        "ExperimentStarted",
        status=202,
        tag="experiments",
        body={
            "required": True,
            "content": _json(
                {
                    "type": "object",
                    "properties": {
                        "dataset": {"type": "string"},
                        "models": {"type": "array", "items": {"type": "string"}},
                        "variants": {"type": "array", "items": {"type": "object"}},
                        "api_base": {"type": "string"},
                        "from": {"type": "integer"},
                        "scorers": {"type": "array", "items": {"type": "string"}},
                        "scorer_options": {"type": "object"},
                        "concurrency": {"type": "integer"},
                        "budget_usd": {"type": "number"},
                        "budget_tokens": {"type": "integer"},
                    },
                }
            ),
        },
    ),
    ("GET", "/api/v1/experiments"): Op("List experiments.", "Experiments", tag="experiments"),
    ("GET", "/api/v1/queues"): Op("List review queues.", None, media=_json(_OBJECT), tag="team"),
    ("POST", "/api/v1/queues"): Op(
        "Make a review queue from runs (by id, or by the runs list's filter).",
        None,
        status=201,
        media=_json(_OBJECT),
        tag="team",
        body={
            "required": True,
            "content": _json(
                {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "runs": {"type": "array", "items": {"type": "string"}},
                        "filter": {"type": "object", "additionalProperties": {"type": "string"}},
                        "rubric": {},
                        "reviews_per_item": {"type": "integer"},
                        "assign": {"type": "array", "items": {"type": "string"}},
                    },
                }
            ),
        },
    ),
    ("GET", "/api/v1/queues/{queue_id}"): Op(
        "A queue's progress, items, verdicts per reviewer and agreement.", None, media=_json(_OBJECT), tag="team"
    ),
    ("DELETE", "/api/v1/queues/{queue_id}"): Op("Delete a queue.", None, media=_json(_OBJECT), tag="team"),
    ("GET", "/api/v1/queues/{queue_id}/export.csv"): Op(
        "A queue's results as CSV.", None, media={"text/csv": {"schema": {"type": "string"}}}, tag="team"
    ),
    ("POST", "/api/v1/queues/{queue_id}/next"): Op(
        "The next item held for the token's holder (null: nothing left); a `reviewer` naming anyone else is refused (422).",
        None,
        media=_json(_OBJECT),
        tag="team",
        body={"required": True, "content": _json({"type": "object", "properties": {"reviewer": {"type": "string"}}})},
    ),
    ("POST", "/api/v1/queues/{queue_id}/items/{item_id}/{verb}"): Op(
        "Review an item (`review`: verdict, criteria, note, should_have) or skip it (`skip`), as the token's holder.",
        None,
        media=_json(_OBJECT),
        tag="team",
        body={
            "required": True,
            "content": _json(
                {
                    "type": "object",
                    "properties": {
                        "reviewer": {"type": "string"},
                        "verdict": {"type": "string"},
                        "criteria": {"type": "object"},
                        "note": {"type": "string"},
                        "should_have": {"type": "string"},
                    },
                }
            ),
        },
    ),
    ("POST", "/api/v1/shares"): Op(
        "Make a share link to a run, a comparison or a queue; the token is shown only here.",
        None,
        status=201,
        media=_json(_OBJECT),
        tag="team",
        body={
            "required": True,
            "content": _json(
                {
                    "type": "object",
                    "properties": {
                        "session": {"type": "string"},
                        "other": {"type": "string"},
                        "queue": {"type": "integer"},
                        "expires": {"type": "string", "description": "e.g. 7d"},
                    },
                }
            ),
        },
    ),
    ("GET", "/api/v1/shares"): Op("List share links (without their tokens).", None, media=_json(_OBJECT), tag="team"),
    ("DELETE", "/api/v1/shares/{share_id}"): Op("Revoke a share link.", None, media=_json(_OBJECT), tag="team"),
    ("GET", "/api/v1/share/{token}"): Op(
        "The one object a share link was made for (no bearer token: the link's token is the key; 410 once expired or "
        "revoked; 429 after too many wrong tokens from one address).",
        None,
        media=_json(_OBJECT),
        tag="team",
    ),
    ("GET", "/api/v1/experiments/{experiment_id}"): Op(
        "An experiment's progress, then its results.", None, media=_json(_OBJECT), tag="experiments"
    ),
    ("POST", "/api/v1/experiments/{experiment_id}/stop"): Op(
        "Stop a running experiment: no more cases are launched, those in flight finish, and resuming runs the rest "
        "(404: no such experiment; 409: it is not running).",
        "ExperimentStopping",
        status=202,
        tag="experiments",
    ),
    ("GET", "/api/v1/experiments/{a}/compare/{b}"): Op(
        "Two experiments compared: per variant and scorer, pass rates with Wilson intervals, the cases B improved or "
        "regressed, and what cannot be compared.",
        None,
        media=_json(_OBJECT),
        tag="experiments",
        query=(
            _q("by", {"type": "string", "enum": ["name", "position"], "default": "name"}, "pair variants by name or position"),
        ),
    ),
    **loop_operations(Op, _json, _OBJECT),
    ("GET", "/api/v1/monitors"): Op(
        "Every monitor: its rule in a sentence, its last verdict, whether an alert is open.",
        None,
        media=_json(_OBJECT),
        tag="monitors",
    ),
    ("POST", "/api/v1/monitors"): Op(
        "Add a monitor; its rule is checked field by field first (422 naming the field). See docs/monitors.md.",
        None,
        status=201,
        media=_json(_OBJECT),
        tag="monitors",
        body={
            "required": True,
            "content": _json(
                {
                    "type": "object",
                    "required": ["name", "rule"],
                    "properties": {
                        "name": {"type": "string", "maxLength": 200},
                        "rule": {
                            "type": "object",
                            "properties": {
                                "metric": {"type": "string"},
                                "threshold": {"type": "number"},
                                "change": {"type": "boolean"},
                                "window_hours": {"type": "number"},
                                "min_runs": {"type": "integer"},
                                "error_class": {"type": "string"},
                                "filters": {"type": "object", "additionalProperties": {"type": "string"}},
                            },
                        },
                        "webhook_url": {"type": "string"},
                        "webhook_secret_env": {"type": "string", "description": "the NAME of the variable holding the secret"},
                    },
                }
            ),
        },
    ),
    ("GET", "/api/v1/monitors/{monitor_id}"): Op(
        "A monitor: its rule, its last judgement, its open alert.", None, media=_json(_OBJECT), tag="monitors"
    ),
    ("POST", "/api/v1/monitors/{monitor_id}/check"): Op(
        "Judge a monitor now, as the schedule does: open or resolve its alert and send what changed.",
        None,
        media=_json(_OBJECT),
        tag="monitors",
    ),
    ("POST", "/api/v1/monitors/{monitor_id}/mute"): Op(
        "Mute a monitor for some hours (0 unmutes): still judged, nothing sent.",
        None,
        media=_json(_OBJECT),
        tag="monitors",
        body={"required": True, "content": _json({"type": "object", "properties": {"hours": {"type": "number"}}})},
    ),
    ("GET", "/api/v1/alerts"): Op(
        "Alerts, newest first: opened, resolved, acknowledged by, what each said.",
        None,
        media=_json(_OBJECT),
        tag="monitors",
        query=(
            _q("monitor", {"type": "integer", "minimum": 1}, "one monitor's alerts only"),
            _q("limit", {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}, "at most this many"),
        ),
    ),
    ("POST", "/api/v1/alerts/{alert_id}/ack"): Op(
        "Acknowledge an alert: someone is on it.", None, media=_json(_OBJECT), tag="monitors"
    ),
    ("GET", "/api/v1/releases/compare"): Op(
        "One release against another on every metric with an interval, overall and per workflow: better, worse "
        "(95 % intervals apart) or no evidence yet.",
        None,
        media=_json(_OBJECT),
        tag="monitors",
        query=(
            _q("a", {"type": "string"}, "the earlier value (e.g. 1.5.0)", required=True),
            _q("b", {"type": "string"}, "the later value (e.g. 1.6.0)", required=True),
            _q("workflow", {"type": "string"}, "one workflow only"),
            _q("min_runs", {"type": "integer", "minimum": 1, "default": 20}, "fewer runs on a side: no evidence yet"),
            _q(
                "dimension",
                {"type": "string", "enum": ["agent_version", "model", "prompt_version"], "default": "agent_version"},
                "what differs",
            ),
        ),
    ),
}

_PATH_PARAMS = {
    "run_id": ({"type": "string", "minLength": 1}, "the LangSmith run's id"),
    "session_id": ({"type": "string", "minLength": 1, "maxLength": ID_MAX}, "the run's id (URL-encoded; it may hold `/`)"),
    "event_id": ({"type": "string", "minLength": 1, "maxLength": ID_MAX}, "the step's event id"),
    "thread_id": ({"type": "string", "minLength": 1, "maxLength": ID_MAX}, "the conversation's id (URL-encoded)"),
    "attachment_id": ({"type": "integer", "minimum": 0, "maximum": INT_MAX}, "the attachment's id"),
    "name": ({"type": "string", "minLength": 1}, "the dataset's name"),
    "experiment_id": ({"type": "string", "minLength": 1}, "the experiment's id"),
    "a": ({"type": "string", "minLength": 1}, "the first experiment's id"),
    "b": ({"type": "string", "minLength": 1}, "the experiment compared with it"),
    "queue_id": ({"type": "integer", "minimum": 0, "maximum": INT_MAX}, "the queue's id"),
    "item_id": ({"type": "integer", "minimum": 0, "maximum": INT_MAX}, "the item's id in the queue"),
    "monitor_id": ({"type": "integer", "minimum": 0, "maximum": INT_MAX}, "the monitor's id"),
    "alert_id": ({"type": "integer", "minimum": 0, "maximum": INT_MAX}, "the alert's id"),
    "schedule_id": ({"type": "integer", "minimum": 0, "maximum": INT_MAX}, "the experiment schedule's id"),
    "verb": ({"type": "string", "enum": ["review", "skip"]}, "what to do with the item"),
    "share_id": ({"type": "integer", "minimum": 0, "maximum": INT_MAX}, "the link's id"),
    "token": ({"type": "string", "minLength": 1}, "the share link's token"),
}
_ERRORS = {
    "400": "the body cannot be read",
    "401": "no valid bearer token",
    "403": "the token's role may not do this",
    "404": "no such run, step or object",
    "410": "a share link expired, revoked or whose object is gone",
    "409": "a different end for a run that already ended (without replace)",
    "413": "body over the size limit",
    "415": "a content type or encoding the route does not take",
    "429": "too many wrong share-link tokens from this address lately (see Retry-After)",
    "422": "a field or parameter is out of the contract (each named in `errors`)",
    "503": "the database cannot take writes now (see Retry-After)",
}


class MissingDocs(LookupError):
    """A route of the table with no entry in OPERATIONS."""


def _template(path: str) -> str:
    """Starlette's `{session_id:path}` → OpenAPI's `{session_id}`."""
    return re.sub(r"\{(\w+)(?::\w+)?\}", r"{\1}", path)


def operations(route_table: list[Route]) -> list[tuple[str, str, str | None]]:
    """(method, path, action needing a role or None) for every route: what the document must cover."""
    out = []
    for route in route_table:
        action = getattr(route.endpoint, "action", None)
        for method in sorted((route.methods or set()) - {"HEAD"}):
            out.append((method, _template(route.path), action))
    return out


def _roles(action: str) -> list[str]:
    return [r for r in ROLES if action in MAY[r]]


def _components() -> dict:
    _, defs = models_json_schema(
        [(m, "validation") for m in BODIES] + [(m, "serialization") for m in ANSWERS], ref_template=REF, by_alias=True
    )
    schemas = defs["$defs"]
    for name in ("SessionEvent", "StepEvent", "SessionEndEvent", "AttachmentEvent"):
        schema = schemas[name]
        # unknown fields are kept in `metadata`, never refused: the models' `extra="forbid"` comes after that
        schema.pop("additionalProperties", None)
    for name in ("StepEvent", "SessionEndEvent", "AttachmentEvent"):  # the path says which run (and step)
        implied = {"session_id", "event_id"} if name == "AttachmentEvent" else {"session_id"}
        schemas[name]["required"] = [r for r in schemas[name].get("required", []) if r not in implied]
    return schemas


def document(route_table: list[Route]) -> dict:
    """The OpenAPI 3.1 document of these routes; MissingDocs names a route OPERATIONS lacks."""
    paths: dict[str, dict] = {}
    for method, path, action in operations(route_table):
        op = OPERATIONS.get((method, path))
        if op is None:
            raise MissingDocs(f"{method} {path}: no entry in replay_core/server/openapi.py OPERATIONS")
        answer = {"description": "done", "content": _json(op.answer) if op.answer else op.media}
        item: dict[str, Any] = {
            "summary": op.summary,
            "tags": [op.tag],
            "operationId": re.sub(r"\W+", "_", f"{method.lower()}{path}").strip("_"),
            "responses": {
                str(op.status): answer,
                **{code: {"description": why, "content": op.errors or _json("ErrorBody")} for code, why in _ERRORS.items()},
                "default": {
                    "description": "any other answer: the same JSON error shape",
                    "content": op.errors or _json("ErrorBody"),
                },
            },
        }
        names = re.findall(r"\{(\w+)\}", path)
        params = [
            {"name": n, "in": "path", "required": True, "schema": _PATH_PARAMS[n][0], "description": _PATH_PARAMS[n][1]}
            for n in names
        ]
        if params or op.query:
            item["parameters"] = params + list(op.query)
        if op.body:
            item["requestBody"] = op.body
        if action:
            roles = _roles(action)
            item["security"] = [{"bearer": roles}]
            item["description"] = f"Needs a bearer token whose role is {' or '.join(roles)}."
        else:
            item["security"] = []
        paths.setdefault(path, {})[method.lower()] = item
    return {
        "openapi": "3.1.0",
        "info": {
            "title": TITLE,
            "version": "1",
            "description": "Record, read and replay AI-agent runs. Writes are validated whole before anything is "
            "stored, then redacted. Tokens carry a role (viewer, reviewer, editor): AGENT_REPLAY_API_TOKENS.",
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": _components(),
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An API token; its role (viewer, reviewer, editor) is the list each operation names.",
                }
            },
        },
    }

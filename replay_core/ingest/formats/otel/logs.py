"""OTLP logs carrying GenAI events: the message content an instrumentation sends beside its spans.

With `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental` and content capture set to events,
opentelemetry-instrumentation-openai-v2 (and other GenAI instrumentations) keep the model call's
messages off the span and send them as log records on `/v1/logs`, each naming its span by trace and
span id: one `gen_ai.client.inference.operation.details` event holding `gen_ai.input.messages` /
`gen_ai.output.messages` (the same attributes a span would carry), or, in the older convention, one
event per message (`gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message`,
`gen_ai.tool.message`, with the message in the body, and `gen_ai.choice` for the answer).

`span_contents` reads a request into what each span should have carried, as span attributes, so the
OTLP reader reads them as it reads a span that carried them itself; what is not a GenAI event is
counted, never dropped silently.
"""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .calls import Ledger, PriorCall
from .otlp_json import key_values
from .otlp_proto import _proto_kvs, _proto_value
from .spans import Span
from .values import span_hex, to_ns

# attributes an event carries exactly as a span would
CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.tool.definitions")
MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
CHOICE_EVENT = "gen_ai.choice"
INPUT, OUTPUT = "gen_ai.input.messages", "gen_ai.output.messages"
HELD = "log"  # the side of an otlp_open_calls row holding a span's events until the span comes


@dataclass(slots=True)
class LogRecord:
    trace_id: str | None
    span_id: str | None
    name: str | None
    time_ns: int | None
    attributes: dict[str, Any]
    body: Any


@dataclass
class SpanContents:
    """Per span ((trace id, span id)): the attributes its events say it carried; and the account of the request."""

    spans: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    records: int = 0
    used: int = 0
    ignored: Counter = field(default_factory=Counter)  # kind -> records not read: "not a GenAI event", "no span id"

    def account(self) -> dict[str, Any]:
        return {"log_records": self.records, "used": self.used, "ignored": dict(self.ignored)}


def _proto_records(data: bytes) -> Iterator[LogRecord]:
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    try:
        request = ExportLogsServiceRequest.FromString(data)
    except DecodeError:
        raise ValueError("not a valid OTLP protobuf ExportLogsServiceRequest") from None
    for group in request.resource_logs:
        for scope in group.scope_logs:
            for raw in scope.log_records:
                yield LogRecord(
                    raw.trace_id.hex() if any(raw.trace_id) else None,
                    raw.span_id.hex() if any(raw.span_id) else None,
                    raw.event_name or None,
                    to_ns(raw.time_unix_nano or raw.observed_time_unix_nano),
                    _proto_kvs(raw.attributes),
                    _proto_value(raw.body) if raw.HasField("body") else None,
                )


def _json_records(doc: Any) -> Iterator[LogRecord]:
    from .otlp_json import any_value

    if not isinstance(doc, dict) or not isinstance(doc.get("resourceLogs", doc.get("resource_logs")), list):
        raise ValueError("expected an OTLP/JSON object with resourceLogs")
    for group in doc.get("resourceLogs", doc.get("resource_logs")) or []:
        for scope in (group or {}).get("scopeLogs", (group or {}).get("scope_logs")) or []:
            for raw in (scope or {}).get("logRecords", (scope or {}).get("log_records")) or []:
                if not isinstance(raw, dict):
                    raise ValueError("a log record is not an object")
                trace, span = raw.get("traceId", raw.get("trace_id")), raw.get("spanId", raw.get("span_id"))
                yield LogRecord(
                    span_hex(_hex_of(trace), 16) if trace else None,
                    span_hex(_hex_of(span), 8) if span else None,
                    raw.get("eventName", raw.get("event_name")) or None,
                    to_ns(raw.get("timeUnixNano") or raw.get("observedTimeUnixNano")),
                    key_values(raw.get("attributes")),
                    any_value(raw.get("body")) if raw.get("body") else None,
                )


def _hex_of(value: Any) -> Any:
    """OTLP/JSON ids are hex; protobuf's own JSON printer writes base64."""
    if isinstance(value, str) and len(value) not in (16, 32):
        try:
            return base64.b64decode(value, validate=True).hex()
        except ValueError:
            return value
    return value


def log_records(data: bytes, content_type: str) -> list[LogRecord]:
    """The records of one OTLP/HTTP logs request; ValueError says why a body cannot be read."""
    import orjson

    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media == "application/json":
        try:
            return list(_json_records(orjson.loads(data)))
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"invalid JSON ({exc.args[0]})") from None
    if media in ("application/x-protobuf", "application/protobuf"):
        return list(_proto_records(data))
    raise ValueError(f"Content-Type {content_type!r}: expected application/json or application/x-protobuf")


def span_contents(records: list[LogRecord]) -> SpanContents:
    """What each span's GenAI events say it carried, as span attributes (per-message events in time order)."""
    out = SpanContents(records=len(records))
    for record in sorted(records, key=lambda r: r.time_ns or 0):
        name = record.name or record.attributes.get("event.name")
        found = {k: record.attributes[k] for k in CONTENT_KEYS if record.attributes.get(k) is not None}
        message = _message(name, record.body)
        if not found and message is None:
            out.ignored["not a GenAI event" if record.span_id else "no span id"] += 1
            continue
        if record.trace_id is None or record.span_id is None:
            out.ignored["no span id"] += 1
            continue
        attrs = out.spans.setdefault((record.trace_id, record.span_id), {})
        for key, value in found.items():
            attrs.setdefault(key, value)
        if message is not None:
            key, msg = message
            held = attrs.setdefault(key, [])
            if isinstance(held, list):
                held.append(msg)
        out.used += 1
    return out


def _message(name: Any, body: Any) -> tuple[str, dict] | None:
    """An older-convention event as (input or output key, an OpenAI-shaped message)."""
    if name in MESSAGE_EVENTS:
        msg = dict(body) if isinstance(body, dict) else {"content": body}
        msg.setdefault("role", MESSAGE_EVENTS[name])
        if MESSAGE_EVENTS[name] == "tool" and "id" in msg:
            msg["tool_call_id"] = msg.pop("id")
        return INPUT, _openai_calls(msg)
    if name == CHOICE_EVENT and isinstance(body, dict):
        msg = dict(body.get("message") or {})
        msg.setdefault("role", "assistant")
        return OUTPUT, _openai_calls(msg)
    return None


def _openai_calls(msg: dict) -> dict:
    """Tool calls as OpenAI writes them ({id, type, function: {name, arguments}}), whatever the event wrote."""
    calls = msg.get("tool_calls")
    if isinstance(calls, list):
        msg["tool_calls"] = [
            c if not isinstance(c, dict) or "function" in c else {"id": c.get("id"), "type": "function", "function": c}
            for c in calls
        ]
    return msg


def merge_into(attributes: dict[str, Any], held: dict[str, Any]) -> None:
    """A span's own attributes win; what its events carried fills the rest."""
    for key, value in held.items():
        attributes.setdefault(key, value)


def take_held(spans: list[Span], open_rows: list[dict], ledger: Ledger) -> set[str]:
    """Lay the events held for this batch's spans on them (a span's own attributes win), and mark them taken;
    the span ids given events."""
    held = {(r["trace_id"], r["event_id"]): r for r in open_rows if r["side"] == HELD}
    laid: set[str] = set()
    if not held:
        return laid
    for span in spans:
        row = held.pop((span.trace_id, span.span_id), None)
        if row is not None:
            merge_into(span.attributes, row["arguments"] or {})
            ledger.consumed.append(PriorCall(**row))
            laid.add(span.span_id)
    return laid

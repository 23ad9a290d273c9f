"""OTLP/JSON: the spans of an ExportTraceServiceRequest in its JSON encoding.

Exporters write camelCase field names, protobuf's own JSON printer the proto names; both are
read (camelCase tried first, it is what arrives). A span that cannot be read is a BadRecord
naming its place in the request; the others are still read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..reader import BadRecord
from .spans import Span
from .values import kind_of, safe_ints, span_hex, status_of, to_ns


def any_value(value: Any) -> Any:
    """An OTLP AnyValue ({"stringValue": …} …) as plain data."""
    if not isinstance(value, dict):
        return value
    if len(value) == 1 and "stringValue" in value:  # most attributes: text, as exporters spell it
        return value["stringValue"]
    for key, item in value.items():
        name = key.replace("_", "").lower()
        if name == "stringvalue" or name == "boolvalue":
            return item
        if name == "intvalue":
            return safe_ints(int(item))
        if name == "doublevalue":
            return float(item)
        if name == "arrayvalue":
            return [any_value(v) for v in (item or {}).get("values", [])]
        if name == "kvlistvalue":
            return key_values((item or {}).get("values", []))
        if name == "bytesvalue":
            return item
    return None


def key_values(items: Any) -> dict[str, Any]:
    if not items:
        return {}
    if isinstance(items, dict):  # already a plain mapping (a lenient writer)
        return items
    return {str(kv["key"]): any_value(kv.get("value")) for kv in items or [] if isinstance(kv, dict) and "key" in kv}


def _pick(obj: dict, *names: str) -> Any:
    for name in names:
        if name in obj:
            return obj[name]
    return None


def _camel(obj: dict, camel: str, snake: str) -> Any:
    """`_pick(obj, camel, snake)` without the call's tuple: five fields of every span are read so."""
    return obj[camel] if camel in obj else obj.get(snake)


def otlp_spans(doc: Any, where: str) -> Iterator[Span | BadRecord]:
    """Spans of one ExportTraceServiceRequest in its JSON encoding (camelCase or proto field names)."""
    if not isinstance(doc, dict):
        yield BadRecord(where, "expected an OTLP/JSON object with resourceSpans")
        return
    resource_spans = _pick(doc, "resourceSpans", "resource_spans")
    if not isinstance(resource_spans, list):
        yield BadRecord(where, "resourceSpans: expected a list")
        return
    for i, rs in enumerate(resource_spans):
        if not isinstance(rs, dict):
            yield BadRecord(f"{where} resourceSpans[{i}]", "expected an object")
            continue
        resource = key_values((rs.get("resource") or {}).get("attributes"))
        groups = _pick(rs, "scopeSpans", "scope_spans", "instrumentationLibrarySpans") or []
        for j, group in enumerate(groups):
            scope = _pick(group, "scope", "instrumentationLibrary") or {}
            scope_info = {
                k: v
                for k, v in (
                    ("name", scope.get("name")),
                    ("version", scope.get("version")),
                    ("attributes", key_values(scope.get("attributes"))),
                )
                if v
            }
            prefix = f"{where} resourceSpans[{i}].scopeSpans[{j}].spans["
            for k, raw in enumerate(group.get("spans") or []):
                path = f"{prefix}{k}]"
                try:
                    yield _otlp_span(raw, resource, scope_info, path)
                except (ValueError, TypeError, KeyError, AttributeError) as exc:
                    yield BadRecord(path, str(exc))


def _otlp_span(raw: dict, resource: dict, scope: dict, where: str) -> Span:
    # fields read in the order their refusals are told; the camelCase spelling (what exporters send) tried first
    # inline: seven small calls a span were a fifth of reading a 50,000-span body
    trace_id = span_hex(raw["traceId"] if "traceId" in raw else raw.get("trace_id"), 16)
    span_id = span_hex(raw["spanId"] if "spanId" in raw else raw.get("span_id"), 8)
    if trace_id is None or span_id is None:
        raise ValueError("traceId and spanId are required")
    status = raw.get("status") or {}
    listed = raw.get("events")
    events = (
        [
            {
                "name": e.get("name"),
                "time_ns": to_ns(_pick(e, "timeUnixNano", "time_unix_nano")),
                "attributes": key_values(e.get("attributes")),
            }
            for e in listed
        ]
        if listed
        else []
    )
    kind = raw.get("kind")
    otel = {
        "kind": None if kind is None else kind_of(kind),
        "scope": scope or None,
        "links": raw.get("links") or None,
        "trace_state": _camel(raw, "traceState", "trace_state") or None,
    }
    parent = raw["parentSpanId"] if "parentSpanId" in raw else raw.get("parent_span_id")
    start = raw["startTimeUnixNano"] if "startTimeUnixNano" in raw else raw.get("start_time_unix_nano")
    end = raw["endTimeUnixNano"] if "endTimeUnixNano" in raw else raw.get("end_time_unix_nano")
    attributes = raw.get("attributes")
    return Span(
        trace_id,
        span_id,
        None if parent is None else span_hex(parent, 8),
        str(raw.get("name") or ""),
        to_ns(start),
        to_ns(end),
        status_of(status.get("code")) if status else "unset",
        status.get("message") or None,
        key_values(attributes) if attributes else {},
        events,
        resource,
        otel,
        where,
    )

"""OTLP protobuf: the spans of a decoded ExportTraceServiceRequest, and where bytes that do not
decode break.

The spans are read field by field from the messages, the same Spans as the JSON path reads
from the request's JSON form, without building that form first.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from ..reader import BadRecord
from .spans import Span
from .values import kind_of, safe_ints, span_hex, status_of, to_ns


def _proto_id(raw: bytes, size: int) -> str | None:
    if len(raw) == size:
        return raw.hex() if any(raw) else None
    return span_hex(base64.b64encode(raw).decode(), size) if raw else None  # refused as the JSON path refuses it


def _proto_value(value: Any) -> Any:
    """An AnyValue message as plain data, as any_value reads its JSON form (bytes as base64 text)."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return safe_ints(value.int_value)
    if kind == "bool_value":
        return value.bool_value
    if kind == "double_value":
        return value.double_value
    if kind == "array_value":
        return [_proto_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return _proto_kvs(value.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return None


def _proto_kvs(items: Any) -> dict[str, Any]:
    return {kv.key: _proto_value(kv.value) for kv in items if kv.key}


def proto_spans(request: Any, where: str) -> Iterator[Span | BadRecord]:
    """Spans of a decoded ExportTraceServiceRequest, read field by field: the same Spans as
    `otlp_spans(MessageToDict(request))`, without building the JSON form first (which cost
    about half of reading a protobuf body)."""
    from google.protobuf.json_format import MessageToDict

    for i, rs in enumerate(request.resource_spans):
        resource = _proto_kvs(rs.resource.attributes)
        for j, group in enumerate(rs.scope_spans):
            scope = group.scope
            scope_info = {
                k: v
                for k, v in (("name", scope.name), ("version", scope.version), ("attributes", _proto_kvs(scope.attributes)))
                if v
            }
            for k, raw in enumerate(group.spans):
                path = f"{where} resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                try:
                    trace_id, span_id = _proto_id(raw.trace_id, 16), _proto_id(raw.span_id, 8)
                    if trace_id is None or span_id is None:
                        raise ValueError("traceId and spanId are required")
                    events = [
                        {"name": e.name or None, "time_ns": to_ns(e.time_unix_nano), "attributes": _proto_kvs(e.attributes)}
                        for e in raw.events
                    ]
                    otel = {
                        "kind": kind_of(raw.kind or None),
                        "scope": scope_info or None,
                        "links": [MessageToDict(link) for link in raw.links] or None,
                        "trace_state": raw.trace_state or None,
                    }
                    yield Span(
                        trace_id=trace_id,
                        span_id=span_id,
                        parent_id=_proto_id(raw.parent_span_id, 8),
                        name=raw.name,
                        start_ns=to_ns(raw.start_time_unix_nano),
                        end_ns=to_ns(raw.end_time_unix_nano),
                        status=status_of(raw.status.code),
                        status_message=raw.status.message or None,
                        attributes=_proto_kvs(raw.attributes),
                        events=events,
                        resource=resource,
                        otel=otel,
                        where=path,
                    )
                except (ValueError, TypeError, KeyError, AttributeError) as exc:
                    yield BadRecord(path, str(exc))


def varint(data: bytes, pos: int) -> tuple[int | None, int]:
    """The base-128 integer at `pos` (protobuf's tags and lengths) and the position after it; None when cut off."""
    value, shift = 0, 0
    while pos < len(data) and shift < 64:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7
    return None, pos


def proto_damage(data: bytes) -> str:
    """Where the top level of an ExportTraceServiceRequest breaks, for a clear refusal."""
    pos, n = 0, 0
    while pos < len(data):
        start = pos
        tag, pos = varint(data, pos)
        if tag is None:
            return f"byte {start}: field tag cut off (the file is truncated)"
        if tag != 0x0A:
            return f"byte {start}: unexpected field {tag >> 3} (wire type {tag & 7}); not an ExportTraceServiceRequest"
        length, pos = varint(data, pos)
        if length is None:
            return f"byte {start}: length of resource_spans[{n}] cut off (the file is truncated)"
        if pos + length > len(data):
            return f"byte {start}: resource_spans[{n}] needs {length} bytes, only {len(data) - pos} left (the file is truncated)"
        pos += length
        n += 1
    return "a resource_spans message inside the file is not valid protobuf"

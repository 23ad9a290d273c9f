"""SDK span dumps: spans as the Python SDK's `span.to_json()` or an exporter's dump writes them
(any-agent, Phoenix…), in a list, one after another, or under `{"spans": [...]}`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .. import otel_attributes as oa
from ..jsondoc import DocumentError
from ..reader import BadRecord
from .spans import Span
from .values import kind_of, safe_ints, span_hex, status_of, to_ns


def _object(raw: dict, key: str) -> dict:
    """`raw[key]` when it is an object, else an empty one."""
    value = raw.get(key)
    return value if isinstance(value, dict) else {}


def sdk_span(raw: Any, where: str, document: dict | None) -> Span:
    """A span as the Python SDK's `to_json()` or an exporter's dump writes it (any-agent, Phoenix…)."""
    if not isinstance(raw, dict):
        raise ValueError(f"expected a span object, got {type(raw).__name__}")
    context = raw.get("context") or {}
    parent = _object(raw, "parent")
    trace_id = span_hex(context.get("trace_id", raw.get("trace_id")), 16)
    span_id = span_hex(context.get("span_id", raw.get("span_id")), 8)
    if trace_id is None or span_id is None:
        raise ValueError("context.trace_id and context.span_id are required")
    status = _object(raw, "status")
    events = [
        {
            "name": e.get("name"),
            "time_ns": to_ns(e.get("timestamp")),
            "attributes": safe_ints(oa.flatten(e.get("attributes") or {})),
        }
        for e in raw.get("events") or []
        if isinstance(e, dict)
    ]
    resource = _object(raw, "resource")
    trace_state = context.get("trace_state")
    otel = {
        "kind": kind_of(raw.get("kind", raw.get("span_kind"))),
        "links": safe_ints(raw.get("links")) or None,
        "trace_state": trace_state if trace_state not in ("[]", {}, {"entries": {}}) else None,
    }
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=span_hex(raw["parent_id"] if "parent_id" in raw else parent.get("span_id"), 8),
        name=str(raw.get("name") or ""),
        start_ns=to_ns(raw.get("start_time")),
        end_ns=to_ns(raw.get("end_time")),
        status=status_of(status.get("status_code", raw.get("status_code"))),
        status_message=status.get("description") or raw.get("status_message") or None,
        attributes=safe_ints(oa.flatten(raw.get("attributes") or {})),
        events=events,
        resource=safe_ints(oa.flatten(resource.get("attributes") or {})),
        otel=otel,
        where=where,
        document=document,
    )


def json_values(data: bytes, filename: str) -> Iterator[tuple[int, Any]]:
    """Every JSON value in the file (one, JSON Lines, or concatenated pretty-printed objects) with its line.

    The standard decoder keeps 128-bit integer ids exact (orjson would turn them into
    floats). A broken value raises DocumentError naming its line and column.
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(BadRecord(f"{filename}: byte {exc.start}", "not UTF-8 text")) from None
    decoder = json.JSONDecoder()
    pos, end, line, counted = 0, len(text), 1, 0
    while True:
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        if pos >= end:
            return
        try:
            value, next_pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            where = f"{filename}:{exc.lineno}:{exc.colno}"
            raise DocumentError(BadRecord(where, f"invalid JSON ({exc.msg}); is the file truncated?")) from None
        line += text.count("\n", counted, pos)
        counted = pos
        yield line, value
        pos = next_pos


def sdk_spans(data: bytes, filename: str) -> Iterator[Span | BadRecord]:
    """Spans of a dump: `{"spans": [...], …}`, a list of spans, or spans one after another."""
    for line, value in json_values(data, filename):
        where = f"{filename}:{line}"
        if isinstance(value, dict) and isinstance(value.get("spans"), list):
            document = safe_ints({k: v for k, v in value.items() if k != "spans"})
            items = [(f"{where} spans[{i}]", s) for i, s in enumerate(value["spans"])]
        elif isinstance(value, list):
            document, items = None, [(f"{where} [{i}]", s) for i, s in enumerate(value)]
        else:
            document, items = None, [(where, value)]
        for item_where, raw in items:
            try:
                yield sdk_span(raw, item_where, document)
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                yield BadRecord(item_where, str(exc))

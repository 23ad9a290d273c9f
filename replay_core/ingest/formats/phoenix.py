"""Phoenix span exports: OpenInference spans as Arize Phoenix hands them out.

Two shapes: `Client().spans.get_spans_dataframe()` written as JSON records or JSON Lines (one row a
span, columns `context.trace_id`, `context.span_id`, `parent_id`, `span_kind`, `start_time`,
`status_code`, `events` and one `attributes.<name>` column per attribute, token counts as floats,
message lists as lists), and the REST API's `GET /v1/projects/{project}/spans` answer
(`{"data": [span…], "next_cursor"}`, attributes flat, the span kind beside them, not among them).
Each row becomes the OTLP path's `Span` and the OTLP mapping reads it (ingest.formats.otel): one
mapping of `openinference.span.kind`, `llm.*`, `tool.*`, `input/output.value` for every container.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from . import otel_attributes as oa
from .jsondoc import as_array, as_object, has_key, is_json_lines, json_lines, load_json, starts_json
from .otel.readers import _SpanFormat
from .otel.spans import Span
from .otel.values import safe_ints, span_hex, status_of, to_ns
from .reader import BadRecord

_COLUMN = "attributes."
_INT_LOW, _INT_HIGH = -(2**63), 2**64  # what a 64-bit JSON column holds (values.safe_ints)


def _value(value: Any) -> Any:
    """An attribute value as stored: a pandas float that stands for a count (204.0) as the integer it is,
    integers too big for a 64-bit JSON column as text."""
    if value.__class__ is str:  # the common case, first
        return value
    if value.__class__ is int and _INT_LOW <= value < _INT_HIGH:  # a count: what safe_ints keeps as it is
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return safe_ints(value)


def _flat_into(out: dict[str, Any], values: dict, prefix: str) -> None:
    """`values` (nested maps as some dumps write them) into `out` as dotted keys, each value as stored."""
    for key, value in values.items():
        name = f"{prefix}{key}" if prefix else key
        if value.__class__ is str:  # most values: stored as they are
            out[name] = value
        elif isinstance(value, dict):
            _flat_into(out, value, name + ".")
        else:
            out[name] = _value(value)


def _attributes(row: dict) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    given = row.get("attributes")
    if isinstance(given, dict):  # the REST answer (flat dotted keys, or nested)
        odd = [k for k, v in given.items() if v.__class__ is not str]
        if not odd:  # all text: the row's own map as it is
            attrs = given
        elif not any(isinstance(given[k], dict) for k in odd):  # flat already: the row's own map (read for this span
            attrs = given  # alone), the few values not text stored as they should be
            for key in odd:
                attrs[key] = _value(given[key])
        else:
            _flat_into(attrs, given, "")
    else:  # a dataframe row: one column per attribute; a column a span lacks is null
        size = len(_COLUMN)
        attrs = {k[size:]: _value(v) for k, v in row.items() if v is not None and k.startswith(_COLUMN)}
    if row.get("span_kind") and "openinference.span.kind" not in attrs:
        attrs["openinference.span.kind"] = str(row["span_kind"])
    return attrs


def phoenix_span(row: Any, where: str) -> Span:
    if not isinstance(row, dict):
        raise ValueError(f"expected a span object, got {type(row).__name__}")
    context = as_object(row.get("context"))
    trace_id = span_hex(context["trace_id"] if "trace_id" in context else row.get("context.trace_id"), 16)
    span_id = span_hex(context["span_id"] if "span_id" in context else row.get("context.span_id"), 8)
    if trace_id is None or span_id is None:
        raise ValueError("context.trace_id and context.span_id are required")
    given = row.get("events")
    events = (
        [
            {
                "name": e.get("name"),
                "time_ns": to_ns(e.get("timestamp")),
                "attributes": safe_ints(oa.flatten(as_object(e.get("attributes")))),
            }
            for e in as_array(given)
            if isinstance(e, dict)
        ]
        if given
        else []
    )
    otel = {"phoenix_id": row["id"]} if isinstance(row.get("id"), str) else {}
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=span_hex(row.get("parent_id"), 8),
        name=str(row.get("name") or ""),
        start_ns=to_ns(row.get("start_time")),
        end_ns=to_ns(row.get("end_time")),
        status=status_of(row.get("status_code")),
        status_message=row.get("status_message") or None,
        attributes=_attributes(row),
        events=events,
        otel=otel,
        where=where,
    )


def _rows(data: bytes, filename: str) -> Iterator[tuple[str, Any] | BadRecord]:
    if is_json_lines(data):
        for item in json_lines(data, filename):
            yield item if isinstance(item, BadRecord) else (f"{filename}:{item[0]}", item[1])
        return
    doc = load_json(data, filename)
    rows = doc.get("data") if isinstance(doc, dict) else doc
    if not isinstance(rows, list):
        yield BadRecord(filename, "expected Phoenix spans: a list of span rows, or {data: [spans]}")
        return
    yield from ((f"{filename} [{i}]", row) for i, row in enumerate(rows))


class PhoenixFormat(_SpanFormat):
    name = "phoenix"
    label = "Phoenix span exports (spans dataframe as JSON/JSONL, REST spans)"

    def sniff(self, head: bytes, filename: str) -> bool:
        first = head[:65536]
        if not starts_json(first) or not has_key(first, "span_kind"):
            return False
        return has_key(first, "context.span_id") or (has_key(first, "span_id") and has_key(first, "start_time"))

    def spans(self, data: bytes, filename: str) -> Iterator[Span | BadRecord]:
        for item in _rows(data, filename):
            if isinstance(item, BadRecord):
                yield item
                continue
            where, row = item
            try:
                yield phoenix_span(row, where)
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                yield BadRecord(where, str(exc))


FORMAT = PhoenixFormat()

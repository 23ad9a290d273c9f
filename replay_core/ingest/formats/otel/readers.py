"""The three readers of OpenTelemetry traces, and the calls an OTLP/HTTP receiver reads a body with.

The containers carry the same thing, spans with attributes, so each reader only decodes its
container into `Span`s (otlp_json, otlp_proto, sdk_dump) and one mapping (sessions) turns spans
into contract events.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, overload

from ..jsondoc import DocumentError, has_key, is_json_lines, json_lines, load_json, starts_json
from ..reader import BadRecord, Event, Records
from .calls import Ledger, Replace
from .langfuse import normalise
from .otlp_json import otlp_spans
from .otlp_proto import proto_damage, proto_spans, varint
from .sdk_dump import sdk_spans
from .sessions import StepRows, spans_to_events
from .spans import Span

_TEXT_ONLY = bytes(range(0x20)).replace(b"\t", b"").replace(b"\n", b"").replace(b"\r", b"")


class OtlpError(ValueError):
    """OTLP input that cannot be imported; the message says where and why."""


def _has_control_bytes(head: bytes) -> bool:
    return any(b in _TEXT_ONLY for b in head)


class _SpanFormat(ABC):
    """A container of spans: subclasses decode `spans`, the mapping to events is shared."""

    name: str
    label: str

    @abstractmethod
    def spans(self, data: bytes, filename: str) -> Iterator[Span | BadRecord]:
        """The file's spans in file order (BadRecord for a span that cannot be read)."""

    def decoded(self, data: bytes, filename: str) -> Iterator[Span | BadRecord]:
        """`spans`, each said in the GenAI conventions where an SDK wrote its own names (Langfuse's)."""
        for item in self.spans(data, filename):
            yield item if isinstance(item, BadRecord) else normalise(item)

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Records]:
        """A span is this format's record: counted first, so the import's account is in spans."""
        spans = list(self.decoded(data, filename))
        yield Records(sum(1 for s in spans if not isinstance(s, BadRecord)), "spans")
        yield from spans_to_events(iter(spans))


class OtlpJsonFormat(_SpanFormat):
    """OTLP/JSON: an ExportTraceServiceRequest, or one per line as the collector's file exporter writes."""

    name = "otlp-json"
    label = "OpenTelemetry OTLP/JSON"

    def sniff(self, head: bytes, filename: str) -> bool:
        first = head[:8192]
        return starts_json(first) and (has_key(first, "resourceSpans") or has_key(first, "resource_spans"))

    def documents(self, data: bytes, filename: str) -> Iterator[tuple[Any, str] | BadRecord]:
        if is_json_lines(data):
            for item in json_lines(data, filename):
                yield item if isinstance(item, BadRecord) else (item[1], f"{filename}:{item[0]}")
            return
        doc = load_json(data, filename)
        for i, item in enumerate(doc if isinstance(doc, list) else [doc]):
            yield item, filename if not isinstance(doc, list) else f"{filename} [{i}]"

    def spans(self, data: bytes, filename: str) -> Iterator[Span | BadRecord]:
        for item in self.documents(data, filename):
            if isinstance(item, BadRecord):
                yield item
            else:
                yield from otlp_spans(*item)


class OtlpProtoFormat(_SpanFormat):
    """Binary protobuf ExportTraceServiceRequest (what OTLP/HTTP sends as application/x-protobuf)."""

    name = "otlp-proto"
    label = "OpenTelemetry OTLP protobuf"

    def sniff(self, head: bytes, filename: str) -> bool:
        if not head or head[0] != 0x0A:
            return False
        length, pos = varint(head, 1)
        # field 1 (resource_spans) whose body opens with resource, scope_spans or schema_url,
        # and bytes that no text file holds (protobuf tags and lengths are control bytes)
        opens_request = length is not None and pos < len(head) and head[pos] in (0x0A, 0x12, 0x1A)
        return opens_request and _has_control_bytes(head[:4096])

    def spans(self, data: bytes, filename: str) -> Iterator[Span | BadRecord]:
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        try:
            request = ExportTraceServiceRequest.FromString(data)
        except DecodeError:
            yield BadRecord(filename, f"not a valid OTLP protobuf ExportTraceServiceRequest: {proto_damage(data)}")
            return
        yield from proto_spans(request, filename)


class OtelSpansFormat(_SpanFormat):
    """Span dumps: the SDK's `span.to_json()` objects (a list, one after another) or `{"spans": [...]}`."""

    name = "otel-spans"
    label = "OpenTelemetry SDK span dump (JSON)"

    def sniff(self, head: bytes, filename: str) -> bool:
        first = head[:65536]
        return starts_json(first) and has_key(first, "span_id") and has_key(first, "trace_id") and has_key(first, "start_time")

    def spans(self, data: bytes, filename: str) -> Iterator[Span | BadRecord]:
        return sdk_spans(data, filename)


OTLP_JSON = OtlpJsonFormat()
OTLP_PROTO = OtlpProtoFormat()
OTEL_SPANS = OtelSpansFormat()
FORMATS = (OTLP_JSON, OTLP_PROTO, OTEL_SPANS)


def otlp_reader(content_type: str) -> _SpanFormat:
    """The reader for an OTLP/HTTP body by its Content-Type."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media == "application/json":
        return OTLP_JSON
    if media in ("application/x-protobuf", "application/protobuf"):
        return OTLP_PROTO
    raise OtlpError(f"Content-Type {content_type!r}: expected application/json or application/x-protobuf")


def _refuse(bad: list[BadRecord]) -> None:
    if bad:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise OtlpError(f"{bad[0]}{more}")


def spans_from_otlp(data: bytes, content_type: str) -> list[Span]:
    """The spans of one OTLP/HTTP export request; OtlpError names the first problem."""
    spans: list[Span] = []
    bad: list[BadRecord] = []
    try:
        for item in otlp_reader(content_type).decoded(data, "request"):
            if isinstance(item, BadRecord):
                bad.append(item)
            else:
                spans.append(item)
    except DocumentError as exc:
        bad.append(exc.record)
    _refuse(bad)
    return spans


@overload
def events_from_spans(spans: list[Span], ledger: None = None, rows: StepRows | None = None) -> list[Event]: ...


@overload
def events_from_spans(spans: list[Span], ledger: Ledger, rows: StepRows | None = None) -> list[Event | Replace]: ...


def events_from_spans(
    spans: list[Span], ledger: Ledger | None = None, rows: StepRows | None = None
) -> list[Event] | list[Event | Replace]:
    """Events of one request's spans, without seq (see events_from_otlp); OtlpError on the first bad one.
    `rows`: as session_events; `Replace` items come only with a `ledger`."""
    events: list[Event | Replace] = []
    bad: list[BadRecord] = []
    for item in spans_to_events(spans, assign_seq=False, ledger=ledger, rows=rows):
        if isinstance(item, BadRecord):
            bad.append(item)
        else:
            events.append(item)
    _refuse(bad)
    return events


def events_from_otlp(data: bytes, content_type: str) -> list[Event]:
    """Events of one OTLP/HTTP export request read on its own (no earlier batches considered).

    Steps carry no seq: each batch is placed after what the session already holds, in
    span start order (batches arrive as spans end, children before their parents).
    `ingest.otlp_receiver` is what `POST /v1/traces` uses: it joins a batch to what earlier
    batches of its traces stored. Raises OtlpError naming the first problem; nothing is
    returned half-read.
    """
    return events_from_spans(spans_from_otlp(data, content_type))

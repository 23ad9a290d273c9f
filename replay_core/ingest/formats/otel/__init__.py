"""OpenTelemetry traces as runs: OTLP/JSON, OTLP protobuf, and SDK span dumps.

Each container is decoded into `Span`s (otlp_json, otlp_proto, sdk_dump); one mapping turns
spans into contract events (sessions), putting steps in order by the span trees and time
(ordering), reading each span's messages, tool arguments and results (steps), and matching the
tool calls a model emitted to the tool spans that ran them, across OTLP batches too (calls).
The readers and the OTLP/HTTP entry points are in `readers`.
"""

from __future__ import annotations

from .calls import Ledger, PriorCall, Replace
from .ordering import SpanTrees
from .otlp_json import otlp_spans
from .otlp_proto import proto_spans
from .readers import (
    FORMATS,
    OTEL_SPANS,
    OTLP_JSON,
    OTLP_PROTO,
    OtlpError,
    events_from_otlp,
    events_from_spans,
    otlp_reader,
    spans_from_otlp,
)
from .sdk_dump import sdk_spans
from .sessions import SessionDraft, StepRows, draft_sessions, session_events, spans_to_events
from .spans import OVERRIDE, SESSION_OVERRIDE, Part, Span
from .values import EPOCH, ns_time, time_ns, to_ns

__all__ = [
    "EPOCH",
    "FORMATS",
    "OTEL_SPANS",
    "OTLP_JSON",
    "OTLP_PROTO",
    "OVERRIDE",
    "SESSION_OVERRIDE",
    "Ledger",
    "OtlpError",
    "Part",
    "PriorCall",
    "Replace",
    "SessionDraft",
    "Span",
    "SpanTrees",
    "StepRows",
    "draft_sessions",
    "events_from_otlp",
    "events_from_spans",
    "ns_time",
    "otlp_reader",
    "otlp_spans",
    "proto_spans",
    "sdk_spans",
    "session_events",
    "spans_from_otlp",
    "spans_to_events",
    "time_ns",
    "to_ns",
]

"""OpenTelemetry traces as runs: OTLP/JSON, OTLP protobuf, and SDK span dumps.

The three containers carry the same thing, spans with attributes, so each reader only
decodes its container into `Span`s and one mapping turns spans into contract events:
- sessions come from `gen_ai.conversation.id` / `session.id`, else one per trace;
- agent/workflow spans → `span`; model calls → `think` (+ a `tool_call` for each call
  they emit that no tool span answers); tool executions → `tool_call` + `tool_result`
  (status `error` when the span failed); a failed model or other span → `error`;
- steps are ordered by time (span start; a tool's result at its end), event ids derive
  from span ids (re-importing stores nothing twice), parent links follow the span tree
  and a span whose parent was never exported hangs under its trace's root;
- attributes are read by otel_attributes; whatever no field used stays in the step's
  metadata, and `agent_replay.*` attributes (written by our own OTLP export) restore
  the contract fields the GenAI conventions have no name for.

Everything is linear in spans (depths are memoised along each walk up the tree, so a
50,000-deep parent chain costs what 50,000 siblings do). Parent links and depths are kept on
the spans, and a span's link to its step part is cleared once the steps are made: what a
mapping built is freed by reference counting, none of it left to the cyclic collector. For OTLP arriving in batches,
a `Ledger` carries what earlier batches of the same traces stored (their session, the
calls left open); ingest/otlp_receiver.py keeps it in the Store.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from abc import ABC, abstractmethod
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from ...events import SessionEndEvent, SessionEvent, StepEvent, describe_validation_error, fast_step
from .reader import BadRecord, Event, Records
from . import otel_attributes as oa
from .jsondoc import DocumentError, has_key, is_json_lines, json_lines, load_json, starts_json

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
StepRows = Callable[[dict[str, Any]], Any]  # a step's fields → what to store for it, or None (its StepEvent then)
OVERRIDE = "agent_replay."
SESSION_OVERRIDE = "agent_replay.session"
KINDS = ("unspecified", "internal", "server", "client", "producer", "consumer")
_HEX = re.compile(r"^(0x)?[0-9a-fA-F]+$")
_HEX_DIGITS = "0123456789abcdef"
_TEXT_ONLY = bytes(range(0x20)).replace(b"\t", b"").replace(b"\n", b"").replace(b"\r", b"")


class OtlpError(ValueError):
    """OTLP input that cannot be imported; the message says where and why."""


@dataclass(slots=True)
class Span:
    """One span, whatever container it came in; ids are lowercase hex."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int | None
    end_ns: int | None
    status: str  # unset | ok | error
    status_message: str | None
    attributes: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)
    otel: dict[str, Any] = field(default_factory=dict)  # kind, scope, links, trace_state…: kept in metadata
    where: str = ""
    document: dict[str, Any] | None = None  # fields of the file around the spans (any-agent's final_output)
    # what reading its session worked out (_read_session), kept on the span: dicts keyed by id(span)
    # cost a 50,000-span body a million id() calls
    attrs: oa.Attrs | None = None
    kind: str | None = None  # oa.MODEL, oa.TOOL, oa.AGENT…
    agent: str | None = None  # its own agent name, else the nearest ancestor's
    rank: tuple[int, int] = (0, 0)  # (depth, place in its session's start order): how ties in time are ordered
    anchor: Part | None = None  # its `step` part, which its children's steps name as their parent
    # set by _Trees: its parent span (an orphan's is its trace's root) and its depth (-1 not known yet); on the
    # span rather than in dicts keyed by id(span), and left out of == (a 50,000-deep chain would recurse)
    up: Span | None = field(default=None, compare=False, repr=False)
    depth: int = field(default=-1, compare=False, repr=False)


# ---------------------------------------------------------------------------- small decoders


def to_ns(value: Any) -> int | None:
    """Epoch nanoseconds from an epoch number (ns as OTLP writes it; µs, ms or s told by size) or ISO-8601 text."""
    if value.__class__ is str and value.isdigit():  # the common case, OTLP/JSON's decimal nanoseconds
        number = int(value)
        if number >= 10**17:
            return number
    if value is None or value == "" or isinstance(value, bool):
        return None
    text = str(value).strip()
    if isinstance(value, int | float) or text.isdigit():
        number = int(text) if text.isdigit() else value
        for limit, scale in ((1e17, 1), (1e14, 1_000), (1e11, 1_000_000)):
            if number >= limit:
                return int(number * scale)
        return int(number * 1_000_000_000) or None
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    parsed = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return (parsed - EPOCH) // timedelta(microseconds=1) * 1000


def ns_time(ns: int | None) -> datetime | None:
    return None if ns is None else EPOCH + timedelta(microseconds=ns // 1000)


def time_ns(value: datetime) -> int:
    return (value - EPOCH) // timedelta(microseconds=1) * 1000


def span_hex(value: Any, size: int) -> str | None:
    """An id as lowercase hex: from hex (optionally 0x…), base64 (protobuf's JSON) or a decimal integer."""
    if value.__class__ is str and len(value) == size * 2:  # the common case: hex
        low = value.lower()
        if not low.strip(_HEX_DIGITS):  # every character a hex digit (strip leaves any other)
            return low
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:0{size * 2}x}" if value else None
    text = str(value).strip()
    if len(text) == size * 2 and _HEX.match(text):
        return text.lower()
    if text.lower().startswith("0x") and _HEX.match(text):
        number = int(text, 16)
        return f"{number:0{size * 2}x}" if number else None
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) == size:
        return raw.hex() if any(raw) else None
    if text.isdigit():
        return f"{int(text):0{size * 2}x}"
    raise ValueError(f"not a {size}-byte id (hex, base64 or integer): {text[:60]!r}")


def status_of(value: Any) -> str:
    text = str(value if value is not None else "").lower()
    if text in ("2", "error") or text.endswith("error"):
        return "error"
    if text in ("1", "ok") or text.endswith("ok"):
        return "ok"
    return "unset"


def kind_of(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, int):
        return KINDS[value] if 0 <= value < len(KINDS) else str(value)
    return str(value).lower().rsplit(".", 1)[-1].removeprefix("span_kind_")


def safe_ints(value: Any) -> Any:
    """Integers too big for a 64-bit JSON column become text."""
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
        return str(value)
    if isinstance(value, list):
        return [safe_ints(v) for v in value]
    if isinstance(value, dict):
        return {k: safe_ints(v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------------------- OTLP (JSON encoding of the protobuf)


def any_value(value: Any) -> Any:
    """An OTLP AnyValue ({"stringValue": …} …) as plain data."""
    if not isinstance(value, dict):
        return value
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
            scope_info = {k: v for k, v in (("name", scope.get("name")), ("version", scope.get("version")),
                                            ("attributes", key_values(scope.get("attributes")))) if v}
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
    events = [
        {"name": e.get("name"), "time_ns": to_ns(_pick(e, "timeUnixNano", "time_unix_nano")),
         "attributes": key_values(e.get("attributes"))}
        for e in listed
    ] if listed else []
    kind = raw.get("kind")
    otel = {"kind": None if kind is None else kind_of(kind), "scope": scope or None, "links": raw.get("links") or None,
            "trace_state": _camel(raw, "traceState", "trace_state") or None}
    parent = raw["parentSpanId"] if "parentSpanId" in raw else raw.get("parent_span_id")
    start = raw["startTimeUnixNano"] if "startTimeUnixNano" in raw else raw.get("start_time_unix_nano")
    end = raw["endTimeUnixNano"] if "endTimeUnixNano" in raw else raw.get("end_time_unix_nano")
    attributes = raw.get("attributes")
    return Span(
        trace_id, span_id, None if parent is None else span_hex(parent, 8), str(raw.get("name") or ""),
        to_ns(start), to_ns(end), status_of(status.get("code")) if status else "unset", status.get("message") or None,
        key_values(attributes) if attributes else {}, events, resource, otel, where,
    )


# ---------------------------------------------------------------------------- OTLP protobuf, read from the messages


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
            scope_info = {k: v for k, v in (("name", scope.name), ("version", scope.version),
                                            ("attributes", _proto_kvs(scope.attributes))) if v}
            for k, raw in enumerate(group.spans):
                path = f"{where} resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                try:
                    trace_id, span_id = _proto_id(raw.trace_id, 16), _proto_id(raw.span_id, 8)
                    if trace_id is None or span_id is None:
                        raise ValueError("traceId and spanId are required")
                    events = [{"name": e.name or None, "time_ns": to_ns(e.time_unix_nano),
                               "attributes": _proto_kvs(e.attributes)} for e in raw.events]
                    otel = {"kind": kind_of(raw.kind or None), "scope": scope_info or None,
                            "links": [MessageToDict(link) for link in raw.links] or None,
                            "trace_state": raw.trace_state or None}
                    yield Span(
                        trace_id=trace_id, span_id=span_id, parent_id=_proto_id(raw.parent_span_id, 8),
                        name=raw.name, start_ns=to_ns(raw.start_time_unix_nano), end_ns=to_ns(raw.end_time_unix_nano),
                        status=status_of(raw.status.code), status_message=raw.status.message or None,
                        attributes=_proto_kvs(raw.attributes), events=events, resource=resource, otel=otel, where=path,
                    )
                except (ValueError, TypeError, KeyError, AttributeError) as exc:
                    yield BadRecord(path, str(exc))


# ---------------------------------------------------------------------------- SDK span dumps


def sdk_span(raw: Any, where: str, document: dict | None) -> Span:
    """A span as the Python SDK's `to_json()` or an exporter's dump writes it (any-agent, Phoenix…)."""
    if not isinstance(raw, dict):
        raise ValueError(f"expected a span object, got {type(raw).__name__}")
    context = raw.get("context") or {}
    parent = raw.get("parent") if isinstance(raw.get("parent"), dict) else {}
    trace_id = span_hex(context.get("trace_id", raw.get("trace_id")), 16)
    span_id = span_hex(context.get("span_id", raw.get("span_id")), 8)
    if trace_id is None or span_id is None:
        raise ValueError("context.trace_id and context.span_id are required")
    status = raw.get("status") if isinstance(raw.get("status"), dict) else {}
    events = [
        {"name": e.get("name"), "time_ns": to_ns(e.get("timestamp")),
         "attributes": safe_ints(oa.flatten(e.get("attributes") or {}))}
        for e in raw.get("events") or []
        if isinstance(e, dict)
    ]
    resource = raw.get("resource") if isinstance(raw.get("resource"), dict) else {}
    trace_state = context.get("trace_state")
    otel = {"kind": kind_of(raw.get("kind", raw.get("span_kind"))), "links": safe_ints(raw.get("links")) or None,
            "trace_state": trace_state if trace_state not in ("[]", {}, {"entries": {}}) else None}
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


# ---------------------------------------------------------------------------- spans → events


@dataclass(slots=True)
class Part:
    """One step a span yields: `step` (every span), `result` (tool spans), `call.N` (calls a model emitted)."""

    span: Span
    role: str
    fields: dict[str, Any]
    t_ns: int | None
    ends: bool  # placed at the span's end (results, emitted calls) rather than its start
    replaces: str | None = None  # event id of a stored step (an earlier batch's emitted call) this one takes the place of


@dataclass
class SessionDraft:
    """The steps and session fields read from one session's spans, before validation."""

    session_id: str
    spans: list[Span]
    trees: _Trees
    parts: list[Part] = field(default_factory=list)
    ledger: Ledger | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    final: bool = False  # the source says how the run ended


@dataclass
class _Call:
    span: Span | None  # None: a call stored from an earlier batch (`prior`)
    index: int
    call: dict[str, Any]
    start_ns: int | None = None
    prior: PriorCall | None = None
    matched: bool = False


@dataclass
class PriorCall:
    """What an earlier batch of a trace left unanswered: a call a model emitted (`side` "call", stored as
    its `call.N` step) or a tool execution no call matched (`side` "tool", stored as its tool_call step)."""

    trace_id: str
    side: str
    event_id: str
    name: str | None
    call_id: str | None
    arguments: Any
    t_ns: int | None


@dataclass
class Replace:
    """A step of this batch that takes the place of a stored one: the tool span answering a model's call
    that an earlier batch stored as a bare `call.N` step becomes that step (kept at its seq)."""

    old_event_id: str
    step: StepEvent


@dataclass
class Ledger:
    """What a receiver of OTLP batches knows of their traces from earlier batches, and what a batch changed.

    `session_of` names the session a trace already lives in; `prior` lists each trace's open calls;
    the mapping fills `consumed` (prior calls this batch answered) and `opened` (calls and tool spans of
    this batch left unanswered), which the receiver stores for the next batch.
    """

    session_of: dict[str, str] = field(default_factory=dict)
    prior: dict[str, list[PriorCall]] = field(default_factory=dict)
    consumed: list[PriorCall] = field(default_factory=list)
    opened: list[PriorCall] = field(default_factory=list)


class _Trees:
    """Parent links (`Span.up`), roots and depths of a set of spans, orphans attached to their trace's root."""

    def __init__(self, spans: list[Span]):
        self.by_id = {(s.trace_id, s.span_id): s for s in spans}
        self.roots: dict[str, Span] = {}
        for s in spans:  # per trace the root that starts first (the first met on a tie)
            if s.parent_id is None:
                found = self.roots.get(s.trace_id)
                if found is None or _start(s) < _start(found):
                    self.roots[s.trace_id] = s
        by_id, roots = self.by_id, self.roots
        for s in spans:
            found = None
            if s.parent_id:
                found = by_id.get((s.trace_id, s.parent_id))
                if found is None:
                    root = roots.get(s.trace_id)
                    found = root if root is not s else None
            s.up = found
            s.depth = -1

    @staticmethod
    def depth(span: Span) -> int:
        """How many ancestors the span has: one walk up to the first span of known depth, then every
        span on the way is memoised, so depths of all n spans cost O(n) together (a 50,000-deep
        chain included: no recursion). A parent cycle (bad input) counts up to where it closes."""
        if span.depth >= 0:
            return span.depth
        path: list[Span] = []
        node: Span | None = span
        while node is not None and node.depth == -1:
            node.depth = -2  # on this walk: met again, the cycle closes here
            path.append(node)
            node = node.up
        base = node.depth + 1 if node is not None and node.depth >= 0 else 0
        for n, item in enumerate(reversed(path)):
            item.depth = base + n
        return span.depth


def _start(span: Span) -> int:
    return span.start_ns if span.start_ns is not None else 2**63


def _named_session(root: Span | None, members: list[Span]) -> str | None:
    """The session a trace's spans name: its root's, else that of the first to start that names one
    (the first met on a tie). One pass, no sort."""
    named = oa.conversation_id(root.attributes) if root is not None else None
    if named:
        return named
    best = None
    for span in members:
        found = oa.conversation_id(span.attributes) if span is not root else None
        if found and (best is None or _start(span) < best[0]):
            best = (_start(span), found)
    return best[1] if best else None


def draft_sessions(spans: Iterable[Span], ledger: Ledger | None = None) -> list[SessionDraft]:
    """Group spans into sessions and read each span's steps (no overrides applied yet).

    With a `ledger` (spans arriving in batches), a trace an earlier batch placed stays in its session
    and calls left open by earlier batches can be answered."""
    unique: dict[tuple[str, str], Span] = {}
    for span in spans:
        unique.setdefault((span.trace_id, span.span_id), span)
    all_spans = list(unique.values())
    trees = _Trees(all_spans)
    by_trace: dict[str, list[Span]] = {}
    for span in all_spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    sessions: dict[str, SessionDraft] = {}
    for trace_id, members in by_trace.items():
        root = trees.roots.get(trace_id)
        sid = (ledger.session_of.get(trace_id) if ledger else None) or _named_session(root, members) or trace_id
        sessions.setdefault(sid, SessionDraft(sid, [], trees, ledger=ledger)).spans.extend(members)
    drafts = list(sessions.values())
    for draft in drafts:
        _read_session(draft)
    return drafts


def _read_session(draft: SessionDraft) -> None:
    trees = draft.trees
    depth = trees.depth
    draft.spans.sort(key=lambda s: (s.start_ns if s.start_ns is not None else 2**63, depth(s)))  # stable: ties keep their order
    emitted: list[_Call] = []
    sid = draft.session_id
    for span in draft.spans:  # a parent met later in the loop below has no agent yet (its trace is in this draft)
        span.agent = None
    for place, span in enumerate(draft.spans):  # parents start first: an agent's name reaches its descendants
        span.rank = (span.depth, place)
        values = span.attributes
        a = span.attrs = oa.Attrs(values)
        if values:
            kind = oa.span_class(a)
            if oa.conversation_id(values) == sid:
                a.use("gen_ai.conversation.id", "session.id")
            own = oa.agent_name(a)
        else:  # a bare span (most of a big structural trace): no attribute to read
            kind, own = oa.OTHER, None
        span.kind = kind
        parent = span.up
        span.agent = own or (parent.agent if parent is not None else None)
        if kind == oa.MODEL:  # model calls first, so that every tool span can find the call it answers
            part, calls = _model_part(span, a)
            emitted += [_Call(span, i, c, span.start_ns) for i, c in enumerate(calls)]
            draft.parts.append(part)
        elif kind != oa.TOOL:
            draft.parts.append(_other_part(span, a, kind))
    ledger = draft.ledger
    prior = [p for t in dict.fromkeys(s.trace_id for s in draft.spans) for p in ledger.prior.get(t, ())] if ledger else []
    if prior:
        _answered_before(emitted, [p for p in prior if p.side == "tool"], ledger)
    prior_calls = [_Call(None, -1, {"name": p.name, "id": p.call_id, "arguments": p.arguments}, p.t_ns, p)
                   for p in prior if p.side == "call"]
    open_calls = _OpenCalls(prior_calls + emitted)
    for span in draft.spans:
        if span.kind == oa.TOOL:
            parts, match = _tool_parts(span, span.attrs, open_calls)
            draft.parts += parts
            if ledger is None:
                continue
            if match is not None and match.prior is not None:
                parts[0].replaces = match.prior.event_id
                ledger.consumed.append(match.prior)
            elif match is None:
                call = parts[0].fields
                ledger.opened.append(PriorCall(span.trace_id, "tool", span.span_id, call["tool_name"], call["tool_call_id"],
                                               call["tool_args"], span.start_ns))
    for part in draft.parts:
        part.fields.setdefault("agent_id", part.span.agent)
    model_usage = any(p.fields.get("tokens_in") or p.fields.get("tokens_out") for p in draft.parts)
    for c in emitted:
        if not c.matched:
            if ledger is not None:
                ledger.opened.append(PriorCall(c.span.trace_id, "call", f"{c.span.span_id}.call.{c.index}", c.call["name"],
                                               c.call["id"], c.call["arguments"], c.span.start_ns))
            fields = {"type": "tool_call", "tool_name": c.call["name"], "tool_args": c.call["arguments"],
                      "tool_call_id": c.call["id"], "timestamp": ns_time(c.span.end_ns), "agent_id": c.span.agent}
            draft.parts.append(Part(c.span, f"call.{c.index}", fields, c.span.end_ns, True))
    _session_fields(draft, model_usage)
    for part in draft.parts:
        if part.role == "step":
            meta = _step_metadata(part.span, part.span.attrs)
            images = part.fields.pop("attachments", None)
            part.fields["metadata"] = meta | {"attachments": images} if images else meta


def _duration(span: Span) -> float | None:
    if span.start_ns is None or span.end_ns is None:
        return None
    return max(span.end_ns - span.start_ns, 0) / 1e6


def _failure(span: Span, attrs: oa.Attrs) -> tuple[str | None, str | None]:
    """(error class, message) of a failed span, from its exception event, error.type and status."""
    for event in span.events:
        if event.get("name") == "exception":
            ev = event.get("attributes") or {}
            error_type = ev.get("exception.type")
            if error_type is None or error_type == attrs.peek("error.type"):
                error_type = attrs.get("error.type")
            return error_type, ev.get("exception.message") or span.status_message
    return attrs.get("error.type"), span.status_message


def _start_fields(span: Span, type_: str) -> dict[str, Any]:
    return {"type": type_, "timestamp": ns_time(span.start_ns), "duration_ms": _duration(span)}


def _model_part(span: Span, a: oa.Attrs) -> tuple[Part, list[dict]]:
    fields = _start_fields(span, "think")
    fields["model"] = oa.model_name(a)
    fields["tokens_in"], fields["tokens_out"] = oa.tokens(a)
    fields["cost_usd"] = oa.cost(a)
    fields["context"] = oa.input_messages(a)
    images = oa.take_images(fields["context"], "input")
    output = oa.json_value(a.peek("gen_ai.output.messages"))
    images += oa.take_images(output, "output") if isinstance(output, list) else []
    if images:
        fields["attachments"] = images  # set into the step's metadata below, where the media path finds them
        if isinstance(output, list):
            a.values["gen_ai.output.messages"] = output  # without the bytes, if the messages are kept as attributes
    answer, calls = oa.model_output(a)
    fields["content"] = answer
    if span.status == "error":
        error_class, message = _failure(span, a)
        fields.update(type="error", status="error", error_class=error_class, content=message or answer)
        calls = []
    return Part(span, "step", fields, span.start_ns, False), calls


def _answered_before(emitted: list[_Call], tools: list[PriorCall], ledger: Ledger) -> None:
    """Calls of this batch's models that a tool span stored by an earlier batch already answered
    (batches delivered out of order): same id, else same name (and arguments when both have them)."""
    by_id = {t.call_id: t for t in tools if t.call_id}
    for c in emitted:
        found = by_id.pop(c.call["id"], None) if c.call["id"] else None
        if found is None:
            found = next((t for t in tools if t.name == c.call["name"] and t not in ledger.consumed
                          and (t.call_id is None or c.call["id"] is None)
                          and (t.arguments is None or c.call["arguments"] is None or t.arguments == c.call["arguments"])
                          and (t.t_ns or 0) >= (c.start_ns or 0)), None)
        if found is not None and found not in ledger.consumed:
            c.matched = True
            ledger.consumed.append(found)


def _tool_parts(span: Span, a: oa.Attrs, emitted: _OpenCalls) -> tuple[list[Part], _Call | None]:
    name, call_id, args = oa.tool_name(a, span.name), oa.tool_call_id(a), oa.tool_args(a)
    match = emitted.answer(span, name, call_id, args)
    if match is not None:
        call_id = call_id or match.call["id"]
        args = args if args is not None else match.call["arguments"]
    call = {"type": "tool_call", "timestamp": ns_time(span.start_ns), "tool_name": name, "tool_args": args,
            "tool_call_id": call_id}
    if oa.has_usage(a):  # the model call that chose this tool, recorded on the tool's span
        call.update(model=oa.model_name(a), cost_usd=oa.cost(a))
        call["tokens_in"], call["tokens_out"] = oa.tokens(a)
    result = {"type": "tool_result", "timestamp": ns_time(span.end_ns), "duration_ms": _duration(span), "tool_name": name,
              "tool_call_id": call_id, "content": oa.tool_result(a)}
    if span.status == "error":
        error_class, message = _failure(span, a)
        result.update(status="error", error_class=error_class, content=result["content"] or message)
    return [Part(span, "step", call, span.start_ns, False), Part(span, "result", result, span.end_ns, True)], match


class _OpenCalls:
    """Calls models emitted that no tool span has answered yet, findable by id in O(1)."""

    def __init__(self, calls: list[_Call]):
        self.open = list(calls)
        self.by_id: dict[str, deque[_Call]] = defaultdict(deque)
        for c in calls:
            if c.call["id"]:
                self.by_id[c.call["id"]].append(c)

    def answer(self, span: Span, name: str, call_id: str | None, args: Any) -> _Call | None:
        """The call this tool execution answers: same id, else (ids missing) same name and arguments, else same name."""
        found = self.by_id[call_id].popleft() if call_id and self.by_id.get(call_id) else None
        if found is None:
            start = span.start_ns or 0
            same_name = [c for c in self.open if c.call["name"] == name and (c.call["id"] is None or call_id is None)
                         and (c.start_ns or 0) <= start]
            exact = (c for c in same_name if args is None or c.call["arguments"] == args)
            found = next(exact, same_name[0] if same_name else None)
            if found is not None and found.call["id"]:
                self.by_id[found.call["id"]].remove(found)
        if found is not None:
            found.matched = True
            self.open.remove(found)
        return found


def _other_part(span: Span, a: oa.Attrs, kind: str) -> Part:
    fields = _start_fields(span, "span")
    fields["content"] = span.name or None
    if kind == oa.AGENT:
        fields["model"] = oa.requested_model(a)
    if span.status == "error":
        error_class, message = _failure(span, a)
        fields.update(status="error", error_class=error_class)
        if kind != oa.AGENT:
            fields.update(type="error", content=message or span.name or None)
    return Part(span, "step", fields, span.start_ns, False)


def _run_totals(a: oa.Attrs) -> dict[str, Any]:
    """Token and cost totals a root span records for the whole run, for the session's metadata
    (where every importer keeps totals no step carries)."""
    if not oa.has_usage(a):
        return {}
    tokens_in, tokens_out = oa.tokens(a)
    return {k: v for k, v in (("tokens_in", tokens_in), ("tokens_out", tokens_out), ("cost_usd", oa.cost(a))) if v is not None}


def _session_fields(draft: SessionDraft, model_usage: bool) -> None:
    roots = [s for s in draft.spans if s.parent_id is None]
    first = roots[0] if roots else None
    fields: dict[str, Any] = {}
    if first is not None:
        a = first.attrs
        step = next(p for p in draft.parts if p.span is first and p.role == "step")
        fields.update(name=first.name or None, agent_id=step.fields.get("agent_id"), started_at=ns_time(first.start_ns),
                      workflow=a.get("gen_ai.workflow.name"), agent_version=a.get("gen_ai.agent.version"))
        models = (p.fields["model"] for p in draft.parts if p.fields.get("model"))
        fields["model"] = step.fields.get("model") or next(models, None)
        resource = first.resource
        fields["environment"] = resource.get("deployment.environment.name") or resource.get("deployment.environment")
        totals = {} if model_usage or first.kind == oa.MODEL else _run_totals(a)
        fields["metadata"] = _session_metadata(draft, first) | totals
        failed = [s for s in draft.spans if s.status == "error" and (s.parent_id is None or s.kind == oa.AGENT)]
        if failed:
            error_class, message = _failure(failed[0], failed[0].attrs)
            fields.update(status="failed", error_class=error_class, outcome=message)
        elif all(r.end_ns is not None for r in roots):
            fields["status"] = "succeeded"
        if fields.get("status"):
            draft.final = True
            fields["ended_at"] = ns_time(max(r.end_ns or 0 for r in roots) or None)
            answer = oa.root_output(roots[-1].attrs) or _document_outcome(first.document)
            fields["outcome"] = fields.get("outcome") or answer
    draft.fields = fields


def _document_outcome(document: dict | None) -> str | None:
    """A dump's `final_output` (any-agent); Python's "None" written as text means no answer."""
    value = (document or {}).get("final_output")
    if value in (None, "", "None", "null") or value == {} or value == []:
        return None
    return oa.text(value)


def _session_metadata(draft: SessionDraft, first: Span) -> dict[str, Any]:
    otel = {"trace_ids": list(dict.fromkeys(s.trace_id for s in draft.spans))}
    resource = {k: v for k, v in first.resource.items() if k != SESSION_OVERRIDE and not k.startswith("deployment.environment")}
    if resource:
        otel["resource"] = resource
    out: dict[str, Any] = {"otel": otel}
    document = {k: v for k, v in (first.document or {}).items() if k != "final_output"}
    if document:
        out["document"] = document
    return out


def _step_metadata(span: Span, a: oa.Attrs) -> dict[str, Any]:
    otel: dict[str, Any] = {"trace_id": span.trace_id, "span_id": span.span_id, "name": span.name}
    if span.parent_id:
        otel["parent_span_id"] = span.parent_id
    if span.status_message:
        otel["status_message"] = span.status_message
    for key, value in span.otel.items():
        if value:
            otel[key] = value
    if span.events:
        otel["events"] = [{k: v for k, v in e.items() if v not in (None, {})} for e in span.events]
    out: dict[str, Any] = {"otel": otel}
    if a.values:  # a bare span (most of a big structural trace) has nothing left over
        used = a.used
        leftover = {k: v for k, v in a.values.items() if k not in used and not k.startswith(OVERRIDE)}
        if leftover:
            out["attributes"] = leftover
    return out


# ---------------------------------------------------------------------------- overrides, order, validation


def _override(raw: Any, where: str) -> dict[str, Any]:
    value = oa.json_value(raw) if isinstance(raw, str) else raw
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected a JSON object, got {str(raw)[:80]!r}")
    return value


def session_events(draft: SessionDraft, *, assign_seq: bool = True, rows: StepRows | None = None) -> list[Event | BadRecord]:
    """Contract events of one drafted session: overrides applied, steps ordered and numbered.

    With `rows` (a receiver storing the steps at once), each step is what `rows` makes of its fields,
    where it makes something (a store row, validated and redacted), else its StepEvent."""
    out: list[Event | BadRecord] = []
    parts = draft.parts
    for part in parts:
        span = part.span
        if part.role == "step":
            span.anchor = part
        key = OVERRIDE + part.role
        if key in span.attributes:
            try:
                part.fields.update(_override(span.attributes[key], key))
            except ValueError as exc:
                out.append(BadRecord(span.where, str(exc)))
    parts.sort(key=lambda p: (
        p.t_ns if p.t_ns is not None else 2**63,
        0 if p.ends and (p.span.end_ns or 0) > (p.span.start_ns or 0) else 1,
        *p.span.rank, p.role != "step", p.role,
    ))
    parts = [p for p in parts if not p.fields.pop("omit", False)]  # a placeholder span of a run without steps
    steps: list = []  # StepEvents, and what `rows` made
    replaces: list[Replace] = []
    sid = draft.session_id
    for n, part in enumerate(parts, start=1):
        fields, span = part.fields, part.span
        if "event_id" not in fields:
            fields["event_id"] = span.span_id if part.role == "step" else f"{span.span_id}.{part.role}"
        if "parent_id" not in fields:
            parent = span.up
            anchor = parent.anchor if parent is not None else None
            fields["parent_id"] = anchor.fields.get("event_id") if anchor else span.parent_id
        if "seq" not in fields and assign_seq:
            fields["seq"] = n
        # the fields themselves, Nones and all, are what the fast path checks (one dict a step, not three:
        # it is a third of the map's time); the model only for what it cannot vouch for (it words the refusal)
        fields.setdefault("kind", "step")
        fields.setdefault("session_id", sid)
        try:
            if part.replaces:
                replaces.append(Replace(part.replaces, fast_step(fields) or StepEvent(**{k: v for k, v in fields.items() if v is not None})))
            else:
                steps.append((rows and rows(fields)) or fast_step(fields)
                             or StepEvent(**{k: v for k, v in fields.items() if v is not None}))
        except (ValidationError, TypeError) as exc:
            reason = describe_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
            out.append(BadRecord(f"{span.where} ({part.role})", reason))
    for part in draft.parts:  # a span and its part point at each other: left so, a big body's spans were garbage
        part.span.anchor = None  # only the cyclic collector could free (a quarter second after a 50,000-span receive)
    session = dict(draft.fields)
    raw = next((s.resource[SESSION_OVERRIDE] for s in draft.spans if SESSION_OVERRIDE in s.resource), None)
    if raw is not None:
        try:
            session.update(_override(raw, SESSION_OVERRIDE))
        except ValueError as exc:
            out.append(BadRecord(draft.spans[0].where, str(exc)))
    end_keys = ("status", "outcome", "error_class", "ended_at")
    end = {k: session.pop(k, None) for k in end_keys}
    final = end["status"] in ("succeeded", "failed")
    try:
        events: list[Event] = [SessionEvent(session_id=draft.session_id, **{k: v for k, v in session.items() if v is not None})]
        events += steps
        if final:
            events.append(SessionEndEvent(session_id=draft.session_id, **{k: v for k, v in end.items() if v is not None}))
    except ValidationError as exc:
        return out + [BadRecord(draft.spans[0].where, describe_validation_error(exc))]
    return events + replaces + out


def spans_to_events(
    spans: Iterable[Span | BadRecord], *, assign_seq: bool = True, ledger: Ledger | None = None, rows: StepRows | None = None,
) -> Iterator[Event | Replace | BadRecord]:
    """The whole mapping: spans (and the readers' refusals, passed on) → contract events.

    `Replace` items come only with a `ledger` (a batch answering calls an earlier batch stored)."""
    good: list[Span] = []
    for item in spans:
        if isinstance(item, BadRecord):
            yield item
        else:
            good.append(item)
    for draft in draft_sessions(good, ledger):
        yield from session_events(draft, assign_seq=assign_seq, rows=rows)


# ---------------------------------------------------------------------------- readers


def _has_control_bytes(head: bytes) -> bool:
    return any(b in _TEXT_ONLY for b in head)


def _varint(data: bytes, pos: int) -> tuple[int | None, int]:
    value, shift = 0, 0
    while pos < len(data) and shift < 64:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7
    return None, pos


def _proto_damage(data: bytes) -> str:
    """Where the top level of an ExportTraceServiceRequest breaks, for a clear refusal."""
    pos, n = 0, 0
    while pos < len(data):
        start = pos
        tag, pos = _varint(data, pos)
        if tag is None:
            return f"byte {start}: field tag cut off (the file is truncated)"
        if tag != 0x0A:
            return f"byte {start}: unexpected field {tag >> 3} (wire type {tag & 7}); not an ExportTraceServiceRequest"
        length, pos = _varint(data, pos)
        if length is None:
            return f"byte {start}: length of resource_spans[{n}] cut off (the file is truncated)"
        if pos + length > len(data):
            return f"byte {start}: resource_spans[{n}] needs {length} bytes, only {len(data) - pos} left (the file is truncated)"
        pos += length
        n += 1
    return "a resource_spans message inside the file is not valid protobuf"


class _SpanFormat(ABC):
    """A container of spans: subclasses decode `spans`, the mapping to events is shared."""

    @abstractmethod
    def spans(self, data: bytes, filename: str) -> Iterator[Span | BadRecord]:
        """The file's spans in file order (BadRecord for a span that cannot be read)."""

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Records]:
        """A span is this format's record: counted first, so the import's account is in spans."""
        spans = list(self.spans(data, filename))
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
        length, pos = _varint(head, 1)
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
            yield BadRecord(filename, f"not a valid OTLP protobuf ExportTraceServiceRequest: {_proto_damage(data)}")
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
    spans, bad = [], []
    try:
        for item in otlp_reader(content_type).spans(data, "request"):
            (bad if isinstance(item, BadRecord) else spans).append(item)
    except DocumentError as exc:
        bad.append(exc.record)
    _refuse(bad)
    return spans


def events_from_spans(spans: list[Span], ledger: Ledger | None = None, rows: StepRows | None = None) -> list[Event | Replace]:
    """Events of one request's spans, without seq (see events_from_otlp); OtlpError on the first bad one.
    `rows`: as session_events."""
    events, bad = [], []
    for item in spans_to_events(spans, assign_seq=False, ledger=ledger, rows=rows):
        (bad if isinstance(item, BadRecord) else events).append(item)
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

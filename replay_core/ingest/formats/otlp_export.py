"""Runs as OTLP/JSON in the GenAI semantic conventions, for other OpenTelemetry tools.

Each session becomes one trace: a `span` step an `invoke_agent` span, a think or
decision a `chat` span (model, usage, input and output messages, the tool calls it
made), a tool call with its answer one `execute_tool` span (arguments, result, error
status), and any other step a plain span. A span's parent is the span of its step's
parent.

The GenAI conventions have no name for some contract fields (event ids, seq, the step
types they do not model, metadata, a session's status and outcome…). For those the
export reads its own spans back with the importer and writes, per step, only the fields
that reading would get wrong into a JSON attribute (`agent_replay.step`, `…result`,
`…call.N`; `agent_replay.session` on the resource). So importing the export gives the
run back unchanged, and other tools see plain GenAI spans.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

import orjson

from ...events import SessionEndEvent, SessionEvent, StepEvent
from . import otel
from . import otel_attributes as oa
from .reader import Event

SCOPE = {"name": "agent-replay"}
ENVELOPE = ("schema_", "session_id", "kind")
SESSION_FIELDS = tuple(f for f in SessionEvent.model_fields if f not in ENVELOPE)
STEP_FIELDS = tuple(f for f in StepEvent.model_fields if f not in ENVELOPE)
STEP_DEFAULTS = {name: f.default for name, f in StepEvent.model_fields.items() if not f.is_required()}
MODEL_TYPES = ("think", "decision")
TURN_BREAKS = ("think", "decision", "input", "span")  # a model's tool calls are the ones before the next of these
SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT = 1, 3


@dataclass
class _Planned:
    span: otel.Span
    roles: dict[str, StepEvent] = field(default_factory=dict)  # role → the native step it stands for


class _Session:
    def __init__(self, session_id: str):
        self.session_id = session_id
        self.opened: dict[str, Any] = {}
        self.steps: list[StepEvent] = []
        self.end: SessionEndEvent | None = None


def _hex(*parts: str, size: int) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[: size * 2]


def _json(value: Any) -> Any:
    """A value as JSON data (datetimes as ISO text), for comparing and for override attributes."""
    return orjson.loads(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_UTC_Z))


def _args_text(args: Any) -> str | None:
    if args is None or isinstance(args, str):
        return args
    return orjson.dumps(args, option=orjson.OPT_NON_STR_KEYS).decode()


# ---------------------------------------------------------------------------- planning: steps → spans


class _Planner:
    """Decides which span each step of one session becomes, and its GenAI attributes."""

    def __init__(self, session: _Session):
        self.session = session
        self.steps = sorted(session.steps, key=lambda s: (s.seq if s.seq is not None else 2**62, s.timestamp or otel.EPOCH))
        self.trace_id = _hex(session.session_id, size=16)
        self.spans: list[_Planned] = []
        self.span_of: dict[str, _Planned] = {}  # event id → the span holding it as its `step`
        self.last_ns = otel.time_ns(session.opened["started_at"]) if session.opened.get("started_at") else 0
        ids = Counter(s.tool_call_id for s in self.steps if s.type == "tool_call" and s.tool_call_id)
        self.unique_ids = {i for i, n in ids.items() if n == 1}

    def call_id(self, step: StepEvent) -> str:
        """The id a call travels under: its own when unique in the run, else one made from its event id."""
        return step.tool_call_id if step.tool_call_id in self.unique_ids else f"call-{step.identity()}"

    def plan(self) -> list[_Planned]:
        answers = self._answers()
        answered = set(answers.values())
        made_by = self._calls_made()
        in_chat = {j for calls in made_by.values() for j in calls if j not in answers}  # travel inside their chat span
        for i, step in enumerate(self.steps):
            if i in answered or i in in_chat:
                continue
            if step.type in MODEL_TYPES:
                calls = made_by.get(i, [])
                planned = self._chat(step, [self.steps[j] for j in calls])
                planned.roles.update({f"call.{n}": self.steps[j] for n, j in enumerate(calls) if j in in_chat})
            elif step.type == "tool_call" and i in answers:
                planned = self._tool(step, self.steps[answers[i]])
            elif step.type == "span":
                planned = self._agent(step)
            else:
                planned = self._plain(step)
            self.spans.append(planned)
            self.span_of[step.identity()] = planned
        return self.spans

    def _answers(self) -> dict[int, int]:
        """tool_call index → index of the tool_result/error answering it (same call id, else same tool without ids)."""
        waiting: dict[tuple, deque[int]] = defaultdict(deque)
        out: dict[int, int] = {}
        for i, step in enumerate(self.steps):
            key = (step.tool_call_id,) if step.tool_call_id else (None, step.tool_name)
            if step.type == "tool_call":
                waiting[key].append(i)
            elif step.type in ("tool_result", "error") and (step.tool_name or step.tool_call_id) and waiting.get(key):
                out[waiting[key].popleft()] = i
        return out

    def _calls_made(self) -> dict[int, list[int]]:
        """Model step index → the tool_call indexes it made: those before the next model, input or span step."""
        made: dict[int, list[int]] = {}
        current: int | None = None
        for i, step in enumerate(self.steps):
            if step.type in TURN_BREAKS:  # a failed model call made no calls
                current = i if step.type in MODEL_TYPES and step.status != "error" else None
            elif step.type == "tool_call" and current is not None:
                made.setdefault(current, []).append(i)
        return made

    # -- spans

    def _times(self, step: StepEvent, end_step: StepEvent | None = None) -> tuple[int, int]:
        start = otel.time_ns(step.timestamp) if step.timestamp else self.last_ns
        if end_step is not None:
            end = otel.time_ns(end_step.timestamp) if end_step.timestamp else start
        else:
            end = start + round((step.duration_ms or 0) * 1e6)
        self.last_ns = max(start, self.last_ns)
        return start, max(start, end)

    def _span(self, step: StepEvent, name: str, attributes: dict[str, Any], end_step: StepEvent | None = None) -> otel.Span:
        start, end = self._times(step, end_step)
        parent = self.span_of.get(step.parent_id) if step.parent_id else None
        attributes = {"gen_ai.conversation.id": self.session.session_id, **attributes}
        if step.agent_id and "gen_ai.agent.name" not in attributes:
            attributes["gen_ai.agent.name"] = step.agent_id
        return otel.Span(
            trace_id=self.trace_id,
            span_id=_hex(self.session.session_id, step.identity(), size=8),
            parent_id=parent.span.span_id if parent else None,
            name=name,
            start_ns=start,
            end_ns=end,
            status="unset",
            status_message=None,
            attributes={k: v for k, v in attributes.items() if v is not None},
            otel={"kind": "internal"},
            where=f"export of {self.session.session_id}",
        )

    def _failed(self, span: otel.Span, step: StepEvent, message: str | None) -> None:
        if step.status == "error" or step.type == "error":
            span.status, span.status_message = "error", message
            if step.error_class:
                span.attributes["error.type"] = step.error_class

    def _chat(self, step: StepEvent, calls: list[StepEvent]) -> _Planned:
        parts: list[dict] = [{"type": "text", "content": step.content}] if step.content is not None else []
        parts += [
            {"type": oa.TOOL_CALL_PART, "id": self.call_id(c), "name": c.tool_name, "arguments": c.tool_args} for c in calls
        ]
        output = [{"role": "assistant", "parts": parts, "finish_reason": "tool_call" if calls else "stop"}]
        attributes = {"gen_ai.operation.name": "chat", **_usage(step), "gen_ai.output.messages": otel_json(output)}
        context = step.context
        if isinstance(context, list) and context and all(isinstance(m, dict) and "role" in m for m in context):
            attributes["gen_ai.input.messages"] = otel_json([oa.genai_message(m) for m in context])
        span = self._span(step, f"chat {step.model or ''}".strip(), attributes)
        span.otel["kind"] = "client"
        self._failed(span, step, step.content)
        return _Planned(span, {"step": step})

    def _tool(self, call: StepEvent, answer: StepEvent) -> _Planned:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.tool_name,
            "gen_ai.tool.call.id": self.call_id(call),
            "gen_ai.tool.call.arguments": _args_text(call.tool_args),
            "gen_ai.tool.call.result": answer.content,
            **_usage(call),
        }
        span = self._span(call, f"execute_tool {call.tool_name or ''}".strip(), attributes, end_step=answer)
        self._failed(span, answer, answer.content)
        return _Planned(span, {"step": call, "result": answer})

    def _agent(self, step: StepEvent) -> _Planned:
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": step.agent_id,
            "gen_ai.request.model": step.model,
        }
        span = self._span(step, step.content or f"invoke_agent {step.agent_id or ''}".strip(), attributes)
        self._failed(span, step, step.content)
        return _Planned(span, {"step": step})

    def _plain(self, step: StepEvent) -> _Planned:
        span = self._span(step, f"{step.type} {step.tool_name or ''}".strip(), {})
        self._failed(span, step, step.content)
        return _Planned(span, {"step": step})


def _usage(step: StepEvent) -> dict[str, Any]:
    return {
        "gen_ai.request.model": step.model,
        "gen_ai.usage.input_tokens": step.tokens_in,
        "gen_ai.usage.output_tokens": step.tokens_out,
        "gen_ai.usage.cost": step.cost_usd,
    }


def otel_json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


# ---------------------------------------------------------------------------- what the GenAI reading misses


def _overrides(session: _Session, planned: list[_Planned]) -> None:
    """Read the planned spans back as the importer would, and record every field it gets wrong."""
    drafts = otel.draft_sessions([p.span for p in planned])
    if len(drafts) != 1:
        raise RuntimeError(f"export of {session.session_id}: spans read back as {len(drafts)} sessions")
    draft = drafts[0]
    by_event: dict[str, StepEvent] = {}
    by_span = {p.span.span_id: p for p in planned}
    derived_steps: list[tuple[otel.Part, StepEvent]] = []
    for part in draft.parts:
        native = by_span[part.span.span_id].roles.get(part.role)
        if native is None:
            raise RuntimeError(f"export of {session.session_id}: span {part.span.name!r} reads back as an extra {part.role} step")
        derived_event = part.span.span_id if part.role == "step" else f"{part.span.span_id}.{part.role}"
        by_event[derived_event] = native
        derived_steps.append((part, native))
    if len(derived_steps) != len(session.steps):
        raise RuntimeError(f"export of {session.session_id}: {len(session.steps)} steps read back as {len(derived_steps)}")
    anchors = {id(p.span): p for p in draft.parts if p.role == "step"}
    for part, native in derived_steps:
        mine = {"event_id": native.identity(), "seq": native.seq}
        parent = part.span.up
        derived = dict(part.fields)
        anchor = anchors.get(id(parent)) if parent is not None else None
        derived["parent_id"] = by_event[anchor.span.span_id].identity() if anchor else None
        for name in STEP_FIELDS:
            if name in ("event_id", "seq"):
                continue
            want = _json(getattr(native, name))
            got = _json(derived.get(name, STEP_DEFAULTS.get(name)))
            if want != got:
                mine[name] = want
        part.span.attributes[f"{otel.OVERRIDE}{part.role}"] = otel_json(mine)
    derived_session = {k: _json(v) for k, v in draft.fields.items()}
    if not draft.final:
        derived_session.pop("status", None)
    native_session = {**{k: _json(v) for k, v in session.opened.items()}, **_end_fields(session)}
    fix = {k: native_session.get(k) for k in SESSION_FIELDS if native_session.get(k) != derived_session.get(k)}
    if fix:
        for p in planned:
            p.span.resource[otel.SESSION_OVERRIDE] = otel_json(fix)


def _end_fields(session: _Session) -> dict[str, Any]:
    """How the run ended; a run still going (or left incomplete) has no end."""
    if session.end is None:
        still = session.opened.get("status") in (None, "running", "incomplete")
        return {"status": None, "ended_at": None} if still else {}
    return {k: _json(getattr(session.end, k)) for k in ("status", "outcome", "error_class", "ended_at")}


# ---------------------------------------------------------------------------- OTLP/JSON encoding


def any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": key_values(value)}}
    return {"stringValue": str(value)}


def key_values(mapping: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": any_value(v)} for k, v in mapping.items() if v is not None]


def _span_json(span: otel.Span) -> dict[str, Any]:
    out: dict[str, Any] = {"traceId": span.trace_id, "spanId": span.span_id}
    if span.parent_id:
        out["parentSpanId"] = span.parent_id
    out.update(
        name=span.name,
        kind=SPAN_KIND_CLIENT if span.otel.get("kind") == "client" else SPAN_KIND_INTERNAL,
        startTimeUnixNano=str(span.start_ns),
        endTimeUnixNano=str(span.end_ns),
        attributes=key_values(span.attributes),
    )
    if span.status == "error":
        out["status"] = {"code": 2, **({"message": span.status_message} if span.status_message else {})}
    return out


def _sessions(events: Iterable[Event]) -> list[_Session]:
    sessions: dict[str, _Session] = {}
    for ev in events:
        session = sessions.setdefault(ev.session_id, _Session(ev.session_id))
        if isinstance(ev, SessionEvent):
            session.opened.update(ev.model_dump(include=set(SESSION_FIELDS), exclude_none=True))
        elif isinstance(ev, StepEvent):
            session.steps.append(ev)
        elif isinstance(ev, SessionEndEvent):
            session.end = ev
        # an attachment has no OTLP form here: left out
    return list(sessions.values())


def to_otlp(events: Iterable[Event]) -> dict[str, Any]:
    """One ExportTraceServiceRequest (JSON encoding) holding every session of `events`."""
    resource_spans = []
    for session in _sessions(events):
        resource = {
            "service.name": session.opened.get("agent_id") or "agent-replay",
            "deployment.environment.name": session.opened.get("environment"),
        }
        if session.steps:
            planned = _Planner(session).plan()
            for p in planned:
                p.span.resource = dict(resource)
            _overrides(session, planned)
            spans = [p.span for p in planned]
        else:
            spans = [_placeholder(session, resource)]
        resource_spans.append(
            {
                "resource": {"attributes": key_values(spans[0].resource)},
                "scopeSpans": [{"scope": SCOPE, "spans": [_span_json(s) for s in spans]}],
            }
        )
    return {"resourceSpans": resource_spans}


def _placeholder(session: _Session, resource: dict[str, Any]) -> otel.Span:
    """A run without steps still needs one span to travel in; the importer is told to drop its step."""
    start = otel.time_ns(session.opened["started_at"]) if session.opened.get("started_at") else 0
    fields = {**{k: _json(v) for k, v in session.opened.items()}, **_end_fields(session)}
    return otel.Span(
        trace_id=_hex(session.session_id, size=16),
        span_id=_hex(session.session_id, "", size=8),
        parent_id=None,
        name=session.opened.get("name") or "session",
        start_ns=start,
        end_ns=start,
        status="unset",
        status_message=None,
        attributes={"gen_ai.conversation.id": session.session_id, f"{otel.OVERRIDE}step": otel_json({"omit": True})},
        resource={**resource, otel.SESSION_OVERRIDE: otel_json({k: fields.get(k) for k in SESSION_FIELDS})},
    )


def write(events: Iterable[Event], out: IO[bytes]) -> int:
    """Write events as one OTLP/JSON document, a session a line; returns how many events it holds.

    The line breaks keep the document from looking like JSON Lines (or native JSONL) to
    format detection, while it stays one JSON value for OTLP receivers.
    """
    counted: list[Event] = list(events)
    lines = [orjson.dumps(rs) for rs in to_otlp(counted)["resourceSpans"]]
    out.write(b'{"resourceSpans": [\n' + b",\n".join(lines) + b"\n]}\n")
    return len(counted)

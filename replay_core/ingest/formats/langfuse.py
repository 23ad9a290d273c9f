"""Langfuse trace exports: the UI's JSON download and the public API's trace (`GET /api/public/traces/{id}`).

The UI writes `{"trace": {…}, "observations": […]}`; the API answers one trace object holding its
`observations` (sometimes wrapped in `{"data": …}`); a file may hold a list of either. A trace is a run:
its name, times, environment, release, tags are the run's, its `userId` and `sessionId` its user and
thread (also as `user:` / `session:` tags), its scores kept in metadata. Observations become steps in start order,
each naming its parent observation's step (`parentObservationId`): a GENERATION is a model call (`think`,
with model, usage and cost), a TOOL a tool_call with its tool_result (the tool's name and call id from
the span attributes Langfuse keeps in `metadata.attributes`, `gen_ai.tool.name`/`tool.name`, when
there), an EVENT an observation, any other type (SPAN, AGENT, CHAIN, RETRIEVER…) a span step; level
ERROR makes it an error step with its
`statusMessage`. Usage is read from `usageDetails`, else `usage`, else `promptTokens`/`completionTokens`;
cost from `costDetails.total`, else `totalCost`/`calculatedTotalCost` (Langfuse's own estimate).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from .jsondoc import as_array, as_object, has_key, is_json_lines, json_objects, load_json, starts_json
from .reader import BadRecord, Event, Ignored, Records, kind_of
from .runs import Run, compact, parse_time

SPANS = frozenset({"SPAN", "AGENT", "CHAIN", "RETRIEVER", "EMBEDDING", "GUARDRAIL", "EVALUATOR"})
TYPES = SPANS | {"GENERATION", "TOOL", "EVENT"}
_USED = frozenset(
    {
        "id", "traceId", "type", "name", "startTime", "endTime", "model", "input", "output", "level", "statusMessage",
        "parentObservationId", "usage", "usageDetails", "costDetails", "totalCost", "calculatedTotalCost",
        "promptTokens", "completionTokens", "totalTokens",
    }
)  # fmt: skip
_TRACE_USED = frozenset({"id", "name", "timestamp", "observations", "environment", "release", "version", "tags", "input"})


def _text(value: Any) -> str | None:
    """What a person reads of an input or output: text as is, a chat message's content, else JSON."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str) and value["content"]:
        return value["content"]
    if isinstance(value, dict) and isinstance(value.get("messages"), list) and value["messages"]:
        return _text(value["messages"][-1])
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else None


def usage(obs: dict) -> tuple[int | None, int | None]:
    details = as_object(obs.get("usageDetails")) or as_object(obs.get("usage"))
    tokens_in = _count(details.get("input", details.get("promptTokens", obs.get("promptTokens"))))
    tokens_out = _count(details.get("output", details.get("completionTokens", obs.get("completionTokens"))))
    return tokens_in, tokens_out


def cost(obs: dict) -> tuple[float | None, bool]:
    """(cost in USD, whether it is Langfuse's own estimate rather than what the caller reported)."""
    reported = _number(as_object(obs.get("costDetails")).get("total"))
    if reported is not None:
        return reported, False
    for key in ("totalCost", "calculatedTotalCost"):
        if (value := _number(obs.get(key))) is not None:
            return value, True
    return None, False


def _duration(obs: dict) -> float | None:
    start, end = parse_time(obs.get("startTime")), parse_time(obs.get("endTime"))
    return max((end - start).total_seconds() * 1000, 0.0) if start and end else None


class _Trace:
    def __init__(self, run: Run):
        self.run = run
        self.step_of: dict[str, str] = {}  # observation id → the event id its children name as parent

    def observation(self, obs: dict, where: str) -> None:
        oid, kind = str(obs.get("id") or where), obs.get("type")
        parent = self.step_of.get(str(obs.get("parentObservationId")))
        extra = {k: v for k, v in obs.items() if k not in _USED and v is not None}
        common: dict[str, Any] = {
            "where": where,
            "parent_id": parent,
            "timestamp": parse_time(obs.get("startTime")),
            "duration_ms": _duration(obs),
        }
        failed = obs.get("level") == "ERROR"
        error = {"status": "error", "error_class": "langfuse_level_error"} if failed else {}
        meta: dict[str, Any] = {"langfuse": compact({"type": kind, "name": obs.get("name"), **extra})}
        if kind == "GENERATION":
            tokens_in, tokens_out = usage(obs)
            spent, estimated = cost(obs)
            if estimated:
                meta["cost_estimated_by"] = "langfuse"
            self.run.step(
                oid,
                "error" if failed else "think",
                content=(obs.get("statusMessage") if failed else None) or _text(obs.get("output")),
                model=obs.get("model"),
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                cost_usd=spent,
                context=obs.get("input"),
                metadata=meta,
                **error,
                **common,
            )
        elif kind == "TOOL":
            name, call_id = _tool(obs)
            call_id = call_id or oid
            args = obs.get("input")
            self.run.step(oid, "tool_call", tool_name=name, tool_args=args, tool_call_id=call_id, metadata=meta, **common)
            ended = parse_time(obs.get("endTime"))
            self.run.step(
                f"{oid}.result",
                "tool_result",
                tool_name=name,
                tool_call_id=call_id,
                content=_text(obs.get("output")) or (obs.get("statusMessage") if failed else None),
                **error,
                **{**common, "timestamp": ended or common["timestamp"]},
            )
        elif kind == "EVENT":
            content = obs.get("statusMessage") if failed else _text(obs.get("output")) or _text(obs.get("input"))
            self.run.step(
                oid, "error" if failed else "observation", content=content or obs.get("name"), metadata=meta, **error, **common
            )
        else:  # a failed span keeps its place (its failure is its children's, named where they fail)
            if failed:
                meta["status_message"] = obs.get("statusMessage")
            self.run.step(oid, "span", content=obs.get("name"), metadata=meta, **error, **common)
        self.step_of[oid] = oid


def _tool(obs: dict) -> tuple[Any, str | None]:
    """A TOOL observation's tool name and call id: the instrumentation's span attributes (kept in `metadata`)
    name them when the observation's own name is a label (Pydantic AI's `running tool: get_time`)."""
    attributes = as_object(as_object(obs.get("metadata")).get("attributes"))
    name = next((v for k in ("gen_ai.tool.name", "tool.name") if isinstance(v := attributes.get(k), str) and v), None)
    call_id = attributes.get("gen_ai.tool.call.id")
    return name or obs.get("name"), call_id if isinstance(call_id, str) and call_id else None


def _start(obs: Any, i: int) -> tuple[float, int]:
    """Start order, file order between equals; an observation without a start goes last."""
    when = parse_time(as_object(obs).get("startTime"))
    return (when.timestamp() if when else float("inf"), i)


def _run(trace: dict, observations: list, where: str) -> Iterator[Event | BadRecord | Ignored]:
    tid = trace.get("id") if isinstance(trace.get("id"), str) and trace.get("id") else None
    if tid is None:
        yield BadRecord(where, "a Langfuse trace without an id")
        return
    user, session = trace.get("userId"), trace.get("sessionId")
    tags = [str(t) for t in as_array(trace.get("tags"))]
    tags += [f"session:{session}"] if session else []
    tags += [f"user:{user}"] if user else []
    extra = {k: v for k, v in trace.items() if k not in _TRACE_USED and v is not None}
    observed = [o for o in observations if isinstance(o, dict) and o.get("type") in TYPES]
    starts = [t for o in observed if (t := parse_time(o.get("startTime")))]
    ends = [t for o in observed if (t := parse_time(o.get("endTime")))]
    started = parse_time(trace.get("timestamp"))
    run = Run(
        f"langfuse-{tid}"[:200],
        where,
        name=trace.get("name"),
        environment=trace.get("environment"),
        agent_version=str(trace.get("release") or trace.get("version") or "")[:100] or None,
        model=next((o.get("model") for o in observed if o.get("type") == "GENERATION" and o.get("model")), None),
        started_at=min([*starts, *([started] if started else [])], default=None),
        tags=tags or None,
        user_id=str(user) if user else None,
        thread_id=str(session) if session else None,
        metadata=compact({"langfuse": extra}),
    )
    if trace.get("input") is not None:
        run.step("trace.input", "input", content=_text(trace["input"]), metadata={"role": "user"}, timestamp=started)
    mapper = _Trace(run)
    for i, obs in sorted(enumerate(observations), key=lambda pair: _start(pair[1], pair[0])):
        at = f"{where}:observations[{i}]"
        if not isinstance(obs, dict) or obs.get("type") not in TYPES:
            yield Ignored(at, f"observation {kind_of(obs)}", known=False)
            continue
        mapper.observation(obs, at)
    failed = any(o.get("level") == "ERROR" and not o.get("parentObservationId") for o in observed)
    if failed:
        root = next(o for o in observed if o.get("level") == "ERROR" and not o.get("parentObservationId"))
        run.finish(
            "failed", outcome=root.get("statusMessage"), error_class="langfuse_level_error", ended_at=max(ends, default=None)
        )
    elif ends:
        run.session["ended_at"] = max(ends)
    yield from run.events()


def _items(doc: Any) -> list:
    """A document's traces: a list of them, one, or a page of the API's answer (`{data: [...], meta}`)."""
    if isinstance(doc, dict) and isinstance(doc.get("data"), list):
        return doc["data"]
    return doc if isinstance(doc, list) else [doc]


def _listing(doc: Any) -> int:
    """How many traces a trace list (`GET /api/public/traces`) holds: observations named by id only, their
    content not in the file; 0 when the document is not one."""
    items = _items(doc)
    listed = all(
        isinstance(i, dict) and isinstance(i.get("observations"), list) and all(isinstance(o, str) for o in i["observations"])
        for i in items
    )
    return len(items) if listed else 0


def _traces(doc: Any) -> list[tuple[dict, list]] | None:
    """(trace, observations) pairs of a document, or None when it is not a Langfuse export."""
    items = _items(doc)
    out = []
    for item in items:
        item = as_object(item)
        if isinstance(item.get("data"), dict):
            item = item["data"]
        if isinstance(item.get("trace"), dict) and isinstance(item.get("observations"), list):
            out.append((item["trace"], item["observations"]))
        elif (
            isinstance(item.get("observations"), list) and "id" in item and all(isinstance(o, dict) for o in item["observations"])
        ):
            out.append((item, item["observations"]))
        else:
            return None
    return out


class LangfuseFormat:
    name = "langfuse"
    label = "Langfuse trace exports (UI download or public API)"
    unwatchable = "one JSON document per trace, rewritten whole"  # (watch refuses it)

    def sniff(self, head: bytes, filename: str) -> bool:
        return (
            starts_json(head)
            and has_key(head, "observations")
            and (has_key(head, "parentObservationId") or has_key(head, "traceId") or has_key(head, "htmlPath"))
        )

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored | Records]:
        if is_json_lines(data):
            docs: list[tuple[str, Any]] = []
            for item in json_objects(data, filename):
                if isinstance(item, BadRecord):
                    yield item
                else:
                    docs.append((f"{filename}:{item[0]}", item[1]))
        else:
            docs = [(filename, load_json(data, filename))]
        found = [(where, _traces(doc)) for where, doc in docs]
        if not any(traces for _, traces in found):
            listed = sum(_listing(doc) for _, doc in docs)
            reason = (
                f"a Langfuse trace list (GET /api/public/traces): its {listed} traces name their observations by id only,"
                " so it holds no steps; export each trace (GET /api/public/traces/{id}, or the UI's download) to import it"
                if listed
                else "expected a Langfuse trace export: {trace, observations} or a trace with observations"
            )
            yield BadRecord(filename, reason)
            return
        unread = sum(1 for _, traces in found if traces is None)
        yield Records(sum(1 + len(obs) for _, traces in found for _, obs in traces or []) + unread, "traces and observations")
        for where, traces in found:
            if traces is None:
                yield Ignored(where, "not a Langfuse trace", known=False)
                continue
            for i, (trace, observations) in enumerate(traces):
                yield from _run(trace, observations, where if len(traces) == 1 else f"{where}[{i}]")


FORMAT = LangfuseFormat()

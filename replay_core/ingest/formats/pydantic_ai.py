"""Pydantic AI message histories: `ModelMessagesTypeAdapter.dump_json(result.all_messages())`.

A JSON list of messages, `kind` `request` (parts the agent sends) or `response` (parts the model
answered, with `model_name`, `usage`, `timestamp`). Parts, by `part_kind`: `system-prompt` and
`user-prompt` → input; `tool-return` → tool_result; `retry-prompt` → a failed tool_result when it
names a tool (the tool raised `ModelRetry` or its arguments did not validate), else an input asking
the model again; `text` → decision (think when the response also calls a tool); `thinking` → think;
`tool-call` → tool_call. A response's usage (`input_tokens`/`output_tokens`, older
`request_tokens`/`response_tokens`) goes on its first step. One file is one run.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from .jsondoc import as_array, as_object, has_key, load_json, parse_arguments, starts_json
from .reader import BadRecord, Event, Ignored, Records
from .runs import Run, parse_time, stable_id

REQUEST_PARTS = ("system-prompt", "user-prompt", "tool-return", "retry-prompt")
RESPONSE_PARTS = ("text", "thinking", "tool-call", "builtin-tool-call", "builtin-tool-return")
_PART_KEYS = frozenset({"part_kind", "content", "timestamp", "tool_name", "tool_call_id", "args"})
FAILED_OUTCOMES = ("retried", "failed", "error", "denied")


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def _usage(usage: dict) -> tuple[int | None, int | None]:
    def count(*keys: str) -> int | None:
        for key in keys:
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                return value
        return None

    return count("input_tokens", "request_tokens"), count("output_tokens", "response_tokens")


def _cost(value: Any) -> float | None:
    """Usage `cost` (newer releases write a decimal as text)."""
    try:
        cost = float(value) if isinstance(value, int | float | str) and not isinstance(value, bool) else None
    except ValueError:
        return None
    return cost if cost is not None and 0 <= cost < 1e9 else None


class _History:
    def __init__(self, run: Run):
        self.run = run

    def request(self, msg: dict, key: str, where: str) -> Iterator[Ignored]:
        for j, part in enumerate(as_array(msg.get("parts"))):
            part, at = as_object(part), f"{where}.parts[{j}]"
            kind, extra = part.get("part_kind"), {k: v for k, v in part.items() if k not in _PART_KEYS}
            common: dict[str, Any] = {"where": at, "timestamp": parse_time(part.get("timestamp"))}
            if kind in ("system-prompt", "user-prompt"):
                role = "system" if kind == "system-prompt" else "user"
                self.run.step(
                    f"{key}.{j}", "input", content=_text(part.get("content")), metadata={"role": role, **extra}, **common
                )
            elif kind == "tool-return" or (kind == "retry-prompt" and part.get("tool_name")):
                outcome = part.get("outcome")  # newer releases: a tool that raised ModelRetry returns `retried`
                failed = kind == "retry-prompt" or outcome in FAILED_OUTCOMES
                self.run.step(
                    f"{key}.{j}",
                    "tool_result",
                    content=_text(part.get("content")),
                    tool_name=part.get("tool_name"),
                    tool_call_id=part.get("tool_call_id"),
                    status="error" if failed else "ok",
                    error_class=("retry_prompt" if kind == "retry-prompt" else f"tool_{outcome}") if failed else None,
                    metadata=extra,
                    **common,
                )
            elif kind == "retry-prompt":
                meta = {"role": "user", "retry_prompt": True, **extra}
                self.run.step(f"{key}.{j}", "input", content=_text(part.get("content")), metadata=meta, **common)
            else:
                yield Ignored(at, f"part_kind={kind}"[:60], known=False)

    def response(self, msg: dict, key: str, where: str) -> Iterator[Ignored]:
        parts = [as_object(p) for p in as_array(msg.get("parts"))]
        acts = any(p.get("part_kind") == "tool-call" for p in parts)
        usage = as_object(msg.get("usage"))
        tokens_in, tokens_out = _usage(usage)
        first: dict[str, Any] = {"tokens_in": tokens_in, "tokens_out": tokens_out, "cost_usd": _cost(usage.get("cost"))}
        model = msg.get("model_name") if isinstance(msg.get("model_name"), str) else None
        meta = {k: msg.get(k) for k in ("provider_name", "provider_response_id", "finish_reason") if msg.get(k)}
        if first["cost_usd"] is not None:
            meta["cost_estimated_by"] = "pydantic-ai"  # its own price table, not the provider's bill
        when = parse_time(msg.get("timestamp"))
        for j, part in enumerate(parts):
            kind, at = part.get("part_kind"), f"{where}.parts[{j}]"
            extra = {k: v for k, v in part.items() if k not in _PART_KEYS}
            common: dict[str, Any] = {"where": at, "timestamp": when, "model": model, **first}
            if kind in ("text", "thinking"):
                step_type = "think" if kind == "thinking" or acts else "decision"
                self.run.step(f"{key}.{j}", step_type, content=_text(part.get("content")), metadata={**meta, **extra}, **common)
            elif kind in ("tool-call", "builtin-tool-call"):
                self.run.step(
                    f"{key}.{j}",
                    "tool_call",
                    tool_name=part.get("tool_name"),
                    tool_args=parse_arguments(part.get("args")),
                    tool_call_id=part.get("tool_call_id"),
                    metadata={**meta, **extra, "builtin": kind == "builtin-tool-call" or None},
                    **common,
                )
            elif kind == "builtin-tool-return":
                self.run.step(
                    f"{key}.{j}",
                    "tool_result",
                    content=_text(part.get("content")),
                    tool_name=part.get("tool_name"),
                    tool_call_id=part.get("tool_call_id"),
                    **{**common, "tokens_in": None, "tokens_out": None, "cost_usd": None},
                )
            else:
                yield Ignored(at, f"part_kind={kind}"[:60], known=False)
                continue
            first = {"tokens_in": None, "tokens_out": None, "cost_usd": None}
            meta = {}


def _is_history(doc: Any) -> bool:
    return (
        isinstance(doc, list) and bool(doc) and all(isinstance(m, dict) and m.get("kind") in ("request", "response") for m in doc)
    )


class PydanticAIFormat:
    name = "pydantic_ai"
    label = "Pydantic AI message history (ModelMessagesTypeAdapter JSON)"
    unwatchable = "one JSON list per run, rewritten whole"  # (watch refuses it)

    def sniff(self, head: bytes, filename: str) -> bool:
        return (
            starts_json(head)
            and has_key(head, "part_kind")
            and (has_key(head, "kind", "request") or has_key(head, "kind", "response"))
        )

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored | Records]:
        doc = load_json(data, filename)
        if not _is_history(doc):
            yield BadRecord(filename, "expected a Pydantic AI message history: a list of request/response messages")
            return
        yield Records(sum(max(len(as_array(m.get("parts"))), 1) for m in doc), "message parts")
        responses = [m for m in doc if m["kind"] == "response"]
        times = [
            t
            for m in doc
            for t in [parse_time(m.get("timestamp"))]
            + [parse_time(as_object(p).get("timestamp")) for p in as_array(m.get("parts"))]
            if t
        ]
        ids = {k: v for k in ("run_id", "conversation_id") if isinstance(v := doc[0].get(k), str)}
        run = Run(
            stable_id(filename, data),
            filename,
            agent_id="pydantic-ai",
            metadata={"pydantic_ai": ids} if ids else None,
            model=next((m.get("model_name") for m in responses if isinstance(m.get("model_name"), str)), None),
            started_at=min(times, default=None),
            ended_at=max(times, default=None),
        )
        history = _History(run)
        for i, msg in enumerate(doc):
            where = f"{filename}:[{i}]"
            if not as_array(msg.get("parts")):
                yield Ignored(where, f"{msg['kind']} without parts")
                continue
            reader = history.request if msg["kind"] == "request" else history.response
            yield from reader(msg, f"m{i}", where)
        said = [s.content for s in run.steps if s.type == "input" and (s.metadata or {}).get("role") == "user" and s.content]
        if said:
            run.session["name"] = said[0].strip().split("\n", 1)[0][:200]
        yield from run.events()


FORMAT = PydanticAIFormat()

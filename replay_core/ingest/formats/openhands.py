"""OpenHands runs: event-stream lists (a trajectory download), evaluation output JSONL
(`{instance_id, instruction, metadata, history, metrics, error, test_result}` per line),
and the V1 (software-agent-sdk) events (`kind` ActionEvent / ObservationEvent …).

Why a reader of its own: an OpenHands event is an action *or* an observation linked to
its action by `cause` (V1: `action_id`), with the model's whole response repeated on both
(`tool_call_metadata.model_response`). Read as chat messages it gave empty runs; read as
SWE-agent it gave 49 empty inputs. Here:

- an agent action becomes its thought (think) and a tool call whose arguments are the
  model's own (`model_response.choices[].message.tool_calls[].function.arguments`, matched
  by `tool_call_id`), else the action's `args`;
- an observation with a `cause` becomes that call's tool result; `extras.metadata.exit_code`
  ≠ 0 makes it an error; an observation with no known cause is an `observation` step;
- `message` from the user is input, from the agent a decision when it waits for the user,
  else think; `system` is input; `think` is think; `finish` is a decision that ends the
  run (`task_completed` "false"/"partial" → failed, otherwise succeeded; outcome
  `final_thought`, else `thought`/`message`);
- environment bookkeeping (`agent_state_changed`, `null` observations, `change_agent_state`)
  is yielded as `Ignored`, counted by kind;
- usage is counted once per model response id (the first step of that response carries
  it): an observation repeats its action's metadata;
- a record's `metrics` (accumulated cost and token usage) become session totals
  (`tokens_in`, `tokens_out`, `cost_usd` in metadata, `totals` says from where) for the
  figures the steps carry none of;
- times are the events' `timestamp`s, which OpenHands writes without a timezone: read as UTC.

A run with no `finish`, no `error` and no outcome is `unknown`, never `running`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from .jsondoc import as_object, has_key, json_lines, load_json, parse_arguments, starts_json
from .reader import BadRecord, Event, Ignored
from .runs import Run, compact, parse_time, stable_id

IGNORED_OBSERVATIONS = frozenset({"agent_state_changed", "null"})
IGNORED_ACTIONS = frozenset({"change_agent_state"})
V1_KINDS = (b'"ActionEvent"', b'"ObservationEvent"', b'"MessageEvent"', b'"SystemPromptEvent"')
V1_IGNORED = frozenset(
    {"ConversationStateUpdateEvent", "PauseEvent", "Condensation", "CondensationRequest", "CondensationSummaryEvent"}
)
_SHAPE_ERRORS = (TypeError, AttributeError, KeyError, ValueError, IndexError)


def _text(value: Any) -> str | None:
    """A string, or the text parts of a content list (V1 `thought`, `llm_message.content`)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [p.get("text") if isinstance(p, dict) else p for p in value]
        return "\n".join(p for p in parts if isinstance(p, str)) or None
    return str(value)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _usage(response: dict) -> dict[str, Any]:
    usage = as_object(response.get("usage"))
    cached = as_object(usage.get("prompt_tokens_details")).get("cached_tokens")
    return {
        "tokens_in": _int(usage.get("prompt_tokens")),
        "tokens_out": _int(usage.get("completion_tokens")),
        "metadata": compact(
            {
                "cache_read_tokens": usage.get("cache_read_input_tokens", cached),
                "cache_creation_tokens": usage.get("cache_creation_input_tokens"),
                "total_tokens": usage.get("total_tokens"),
                "response_id": response.get("id"),
            }
        ),
    }


def _call_arguments(response: dict, call_id: str | None) -> Any:
    """The arguments the model sent for `call_id`, decoded from their JSON text."""
    for choice in response.get("choices") or ():
        for call in as_object(as_object(choice).get("message")).get("tool_calls") or ():
            call = as_object(call)
            if call.get("id") == call_id:
                return parse_arguments(as_object(call.get("function")).get("arguments"))
    return None


def _totals(metrics: Any) -> dict[str, Any]:
    """Run totals from `metrics` (V0 `accumulated_token_usage`, V1 the same or per-usage-id)."""
    metrics = as_object(metrics)
    usage = as_object(metrics.get("accumulated_token_usage"))
    return (
        compact(
            {
                "tokens_in": _int(usage.get("prompt_tokens")),
                "tokens_out": _int(usage.get("completion_tokens")),
                "cost_usd": metrics.get("accumulated_cost") if isinstance(metrics.get("accumulated_cost"), int | float) else None,
                "cache_read_tokens": usage.get("cache_read_tokens"),
                "cache_write_tokens": usage.get("cache_write_tokens"),
            }
        )
        or {}
    )


class _Session:
    """One OpenHands run being mapped: the Run, the calls seen (for `cause`), responses counted."""

    def __init__(self, run: Run, filename: str):
        self.run = run
        self.filename = filename
        self.calls: dict[Any, tuple[str, str | None]] = {}  # action id → (tool_call_id, tool_name)
        self.responses: set[str] = set()
        self.first_time: datetime | None = None
        self.last_time: datetime | None = None
        self.finished = False

    def when(self, event: dict):
        stamp = parse_time(event.get("timestamp"))
        if stamp is not None:
            self.first_time = self.first_time or stamp
            self.last_time = stamp
        return stamp

    def usage(self, response: dict) -> dict[str, Any]:
        """The response's usage the first time it is seen, nothing after."""
        rid = response.get("id")
        if not response or (rid and rid in self.responses):
            return {}
        if rid:
            self.responses.add(rid)
        return _usage(response)

    def step(self, key: str, type: str, where: str, usage: dict | None = None, **fields: Any) -> None:
        usage = usage or {}
        meta = {**(usage.get("metadata") or {}), **(fields.pop("metadata", None) or {})}
        self.run.step(
            key, type, where=where, tokens_in=usage.get("tokens_in"), tokens_out=usage.get("tokens_out"), metadata=meta, **fields
        )

    # ---------------------------------------------------------------- V0 events

    def v0(self, event: dict, where: str) -> Iterator[Ignored]:
        eid = event.get("id")
        key = f"e{eid}" if eid is not None else where.rsplit(":", 1)[-1]
        when = self.when(event)
        source = event.get("source")
        tcm = as_object(event.get("tool_call_metadata"))
        response = as_object(tcm.get("model_response"))
        model = response.get("model")
        if "observation" in event:
            yield from self._v0_observation(event, key, where, when)
            return
        action = event.get("action")
        args = as_object(event.get("args"))
        if action in IGNORED_ACTIONS:
            yield Ignored(where, f"action:{action}")
            return
        usage = self.usage(response)
        if action == "system":
            self.step(
                key,
                "input",
                where,
                content=_text(args.get("content")) or event.get("message") or "",
                timestamp=when,
                metadata={"role": "system", "tools": args.get("tools")},
            )
        elif action == "message":
            content = _text(args.get("content")) or event.get("message") or ""
            if source == "agent":
                kind = "decision" if args.get("wait_for_response") else "think"
                self.step(
                    key,
                    kind,
                    where,
                    usage,
                    content=content,
                    timestamp=when,
                    model=model,
                    metadata={"image_urls": args.get("image_urls") or None},
                )
            else:
                self.step(
                    key,
                    "input",
                    where,
                    content=content,
                    timestamp=when,
                    metadata={"role": source, "image_urls": args.get("image_urls") or None},
                )
        elif action == "think":
            self.step(
                key,
                "think",
                where,
                usage,
                content=_text(args.get("thought")) or event.get("message") or "",
                timestamp=when,
                model=model,
            )
        elif action == "finish":
            self._finish(key, where, usage, args, event, when, model, tcm)
        elif source != "agent" and not tcm:
            yield Ignored(where, f"action:{action}", known=action is not None)  # no action at all: not an OpenHands event
        else:
            thought = _text(args.get("thought"))
            if thought:
                self.step(f"{key}.thought", "think", where, usage, content=thought, timestamp=when, model=model)
                usage = {}
            call_id = tcm.get("tool_call_id") or key
            name = tcm.get("function_name") or action
            tool_args = _call_arguments(response, tcm.get("tool_call_id"))
            if tool_args is None:
                tool_args = {k: v for k, v in args.items() if k != "thought"}
            self.calls[eid] = (call_id, name)
            self.step(
                key,
                "tool_call",
                where,
                usage,
                tool_name=name,
                tool_args=tool_args,
                tool_call_id=call_id,
                timestamp=when,
                model=model,
                metadata={"action": action, "timeout": event.get("timeout")},
            )

    def _finish(self, key, where, usage, args, event, when, model, tcm=None) -> None:
        outcome = (
            _text(args.get("final_thought")) or _text(args.get("thought")) or _text(args.get("message")) or event.get("message")
        )
        completed = str(args.get("task_completed") or "").lower()
        self.step(
            key,
            "decision",
            where,
            usage,
            content=outcome or "",
            timestamp=when,
            model=model,
            tool_name="finish",
            tool_call_id=as_object(tcm).get("tool_call_id"),
            metadata={"task_completed": args.get("task_completed"), "outputs": args.get("outputs") or None},
        )
        if completed in ("false", "partial"):
            self.run.finish("failed", outcome=outcome, error_class=f"task_completed={completed}", ended_at=when)
        else:
            self.run.finish("succeeded", outcome=outcome, ended_at=when)
        self.finished = True

    def _v0_observation(self, event: dict, key: str, where: str, when) -> Iterator[Ignored]:
        kind = event.get("observation")
        if kind in IGNORED_OBSERVATIONS:
            yield Ignored(where, f"observation:{kind}")
            return
        extras = as_object(event.get("extras"))
        code = as_object(extras.get("metadata")).get("exit_code", extras.get("exit_code"))
        failed = kind == "error" or (isinstance(code, int) and not isinstance(code, bool) and code != 0)
        error_class = f"exit_code {code}" if isinstance(code, int) and code != 0 else ("error" if failed else None)
        content = _text(event.get("content"))
        if content is None:
            content = event.get("message") or ""
        meta = {
            "observation": kind,
            "exit_code": code,
            "message": event.get("message"),
            "extras": {k: v for k, v in extras.items() if k not in ("old_content", "new_content")} or None,
        }
        call = self.calls.get(event.get("cause"))
        if call is None:
            if kind == "error":
                self.step(
                    key, "error", where, content=content, timestamp=when, status="error", error_class="error", metadata=meta
                )
            else:
                self.step(
                    key, "observation", where, content=content, timestamp=when, metadata={**meta, "cause": event.get("cause")}
                )
            return
        self.step(
            key,
            "tool_result",
            where,
            content=content,
            tool_call_id=call[0],
            tool_name=call[1],
            timestamp=when,
            status="error" if failed else "ok",
            error_class=error_class,
            metadata=meta,
        )

    # ---------------------------------------------------------------- V1 events

    def v1(self, event: dict, where: str) -> Iterator[Ignored]:
        kind = event.get("kind")
        key = str(event.get("id") or where.rsplit(":", 1)[-1])
        when = self.when(event)
        if kind == "ActionEvent":
            self._v1_action(event, key, where, when)
        elif kind == "ObservationEvent" or kind in ("UserRejectObservation", "AgentErrorEvent") and event.get("tool_call_id"):
            self._v1_observation(event, key, where, when, kind)
        elif kind == "MessageEvent":
            msg = as_object(event.get("llm_message"))
            content = _text(msg.get("content")) or ""
            if event.get("source") == "agent" or msg.get("role") == "assistant":
                self.step(key, "decision", where, content=content, timestamp=when)
            else:
                self.step(
                    key,
                    "input",
                    where,
                    content=content,
                    timestamp=when,
                    metadata={"role": msg.get("role") or event.get("source")},
                )
        elif kind == "SystemPromptEvent":
            self.step(
                key,
                "input",
                where,
                content=_text(as_object(event.get("system_prompt")).get("text")) or _text(event.get("system_prompt")) or "",
                timestamp=when,
                metadata={"role": "system", "tools": event.get("tools")},
            )
        elif kind == "AgentErrorEvent":
            self.step(
                key,
                "error",
                where,
                content=_text(event.get("error")) or "",
                timestamp=when,
                status="error",
                error_class="AgentErrorEvent",
            )
        else:
            yield Ignored(where, f"event:{kind}")

    def _v1_action(self, event: dict, key: str, where: str, when) -> None:
        action = as_object(event.get("action"))
        call = as_object(event.get("tool_call"))
        thought = "\n".join(t for t in (_text(event.get("reasoning_content")), _text(event.get("thought"))) if t)
        rid = event.get("llm_response_id")
        if thought:
            self.step(f"{key}.thought", "think", where, content=thought, timestamp=when, metadata={"response_id": rid})
        call_id = event.get("tool_call_id") or call.get("id") or key
        name = event.get("tool_name") or call.get("name") or action.get("kind")
        if action.get("kind") == "FinishAction":
            self._finish(key, where, None, {"message": action.get("message")}, event, when, None, {"tool_call_id": call_id})
            self.calls[event.get("id")] = (call_id, name)
            return
        if action.get("kind") == "ThinkAction":
            self.step(key, "think", where, content=_text(action.get("thought")) or "", timestamp=when)
            self.calls[event.get("id")] = (call_id, name)
            return
        args = (
            parse_arguments(call.get("arguments"))
            if call.get("arguments") is not None
            else {k: v for k, v in action.items() if k != "kind"}
        )
        self.calls[event.get("id")] = (call_id, name)
        self.step(
            key,
            "tool_call",
            where,
            tool_name=name,
            tool_args=args,
            tool_call_id=call_id,
            timestamp=when,
            metadata={"action": action.get("kind"), "response_id": rid, "security_risk": event.get("security_risk")},
        )

    def _v1_observation(self, event: dict, key: str, where: str, when, kind: str) -> None:
        obs = as_object(event.get("observation"))
        code = obs.get("exit_code")
        if code is None:
            code = as_object(obs.get("metadata")).get("exit_code")
        failed = (
            obs.get("error") is True
            or kind == "AgentErrorEvent"
            or (isinstance(code, int) and not isinstance(code, bool) and code != 0)
        )
        error_class = (
            f"exit_code {code}"
            if isinstance(code, int) and code != 0
            else (kind if kind != "ObservationEvent" else "error" if failed else None)
        )
        content = (
            _text(obs.get("output")) or _text(obs.get("message")) or _text(obs.get("content")) or _text(event.get("error")) or ""
        )
        call = self.calls.get(event.get("action_id")) or (event.get("tool_call_id"), event.get("tool_name"))
        status = "blocked" if kind == "UserRejectObservation" else "error" if failed else "ok"
        self.step(
            key,
            "tool_result",
            where,
            content=content,
            tool_call_id=call[0],
            tool_name=call[1],
            timestamp=when,
            status=status,
            error_class=error_class,
            metadata={"observation": obs.get("kind"), "exit_code": code, "command": obs.get("command")},
        )

    def history(self, history: list, where: str) -> Iterator[Ignored | BadRecord]:
        for i, event in enumerate(history):
            at = f"{where}[{i}]"
            if not isinstance(event, dict):
                yield BadRecord(at, f"expected an event object, got {type(event).__name__}")
                continue
            try:
                yield from (self.v1(event, at) if "kind" in event else self.v0(event, at))
            except _SHAPE_ERRORS as exc:
                yield BadRecord(at, f"unexpected event shape ({type(exc).__name__}: {exc})")

    def end_unknown(self) -> None:
        if self.run.end is None:
            self.run.finish("unknown", ended_at=self.last_time)


def _is_event(obj: Any) -> bool:
    return isinstance(obj, dict) and (
        "kind" in obj
        and str(obj.get("kind")).endswith("Event")
        or ("source" in obj and ("action" in obj or "observation" in obj))
    )


class OpenHandsFormat:
    name = "openhands"
    label = "OpenHands trajectory (event list) or evaluation output (JSONL with history)"

    def sniff(self, head: bytes, filename: str) -> bool:
        if not starts_json(head):
            return False
        if any(k in head for k in V1_KINDS) and has_key(head, "kind") and has_key(head, "timestamp"):
            return True
        v0 = (
            any(has_key(head, "source", s) for s in ("agent", "user", "environment"))
            and (has_key(head, "action") or has_key(head, "observation"))
            and has_key(head, "timestamp")
        )
        return v0 and (head.lstrip().startswith(b"[") or has_key(head, "history"))

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored]:
        if data.lstrip().startswith(b"["):
            doc = load_json(data, filename)
            if not isinstance(doc, list) or not any(_is_event(e) for e in doc):
                yield BadRecord(
                    filename, "expected a list of OpenHands events (objects with source and action/observation, or kind)"
                )
                return
            yield from self._run(doc, {}, stable_id(filename, data), Path(filename).name.split(".")[0], filename, filename)
            return
        lines = data.split(b"\n")
        for item in json_lines(data, filename):
            if isinstance(item, BadRecord):
                yield item
                continue
            number, record = item
            where = f"{filename}:{number}"
            if not isinstance(record, dict) or not isinstance(record.get("history"), list):
                yield BadRecord(where, "expected an evaluation record with a 'history' list")
                continue
            instance = record.get("instance_id")
            digest = hashlib.sha1(lines[number - 1]).hexdigest()[:10]  # the record's own bytes: stable across re-imports
            sid = f"{str(instance)[:150] if instance else Path(filename).name.split('.')[0]}-{digest}"
            yield from self._run(record["history"], record, sid, str(instance) if instance else None, where, f"{where}:history")

    def _run(self, history: list, record: dict, sid: str, name: str | None, where: str, history_where: str) -> Iterator:
        meta = as_object(record.get("metadata"))
        llm = as_object(meta.get("llm_config")) or as_object(meta.get("llm"))
        run = Run(
            sid,
            where,
            name=name,
            workflow=meta.get("dataset") if isinstance(meta.get("dataset"), str) else None,
            agent_id=meta.get("agent_class") if isinstance(meta.get("agent_class"), str) else "openhands",
            model=llm.get("model") if isinstance(llm.get("model"), str) else None,
        )
        session = _Session(run, where)
        if isinstance(record.get("instruction"), str) and history and isinstance(history[0], dict) and "kind" in history[0]:
            run.step("instruction", "input", content=record["instruction"], metadata={"role": "user"})
        yield from session.history(history, history_where)
        if run.session.get("model") is None:
            run.session["model"] = next((s.model for s in run.steps if s.model), None)
        error = record.get("error")
        if error and not session.finished:
            run.finish("failed", outcome=None, error_class=str(error).splitlines()[0][:200], ended_at=session.last_time)
        session.end_unknown()
        run.session["started_at"] = session.first_time
        run.session["metadata"] = compact(self._metadata(record, run))
        yield from run.events()

    def _metadata(self, record: dict, run: Run) -> dict[str, Any]:
        totals = _totals(record.get("metrics"))
        has_tokens = any(s.tokens_in or s.tokens_out for s in run.steps)
        has_cost = any(s.cost_usd for s in run.steps)
        out: dict[str, Any] = {}
        if not has_tokens:
            out.update({k: totals.get(k) for k in ("tokens_in", "tokens_out")})
        if not has_cost:
            out["cost_usd"] = totals.get("cost_usd")
        if any(out.values()):
            out["totals"] = "run totals from the source's metrics (the steps carry none)"
        if has_tokens:
            out["tokens"] = "per step, from each model response's usage (counted once per response id)"
        meta = {k: v for k, v in as_object(record.get("metadata")).items() if k not in ("llm_config", "llm")}
        llm = as_object(as_object(record.get("metadata")).get("llm_config")) or as_object(
            as_object(record.get("metadata")).get("llm")
        )
        out.update(
            {
                "instance_id": record.get("instance_id"),
                "test_result": record.get("test_result"),
                "metrics": record.get("metrics"),
                "error": record.get("error"),
                "eval_metadata": meta or None,
                "llm_config": {k: v for k, v in llm.items() if "key" not in k and "secret" not in k} or None,
                "timezone": "timestamps carry no timezone in OpenHands files: read as UTC",
            }
        )
        return out


FORMAT = OpenHandsFormat()

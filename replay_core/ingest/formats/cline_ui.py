"""Cline / Roo Code task UI logs (`tasks/<id>/ui_messages.json`): what the extension showed, message by message.

A task folder holds two files. `api_conversation_history.json` is what the model was sent and answered
(Anthropic-shaped; the anthropic reader takes it); `ui_messages.json` is the task as the person saw it, a
list of `{ts, type: say|ask, say|ask: <kind>, text, modelInfo}` — and the only one of the two with each API
request's tokens and cost (`api_req_started`, whose `text` is JSON with `tokensIn`, `tokensOut`,
`cacheWrites`, `cacheReads`, `cost`) and a time on every message (`ts`, epoch ms). Messages point into the
history by `conversationHistoryIndex`. Both describe the same task: importing both gives two runs.

say `task` and `user_feedback` → input; `reasoning` → think; `text` → decision; `tool` (JSON, `tool` its
name, the rest its arguments) and `command` → tool_call, `command_output` → that command's tool_result;
`completion_result` → decision, and the run ends succeeded with it when nothing but bookkeeping follows;
`error` → error; `error_retry` → observation. An `api_req_started`'s usage (input = tokensIn plus cache
writes and reads; the raw counts kept) and cost go on the first model step after it; a request cancelled
with `streaming_failed` is an error step, one the person cancelled an observation. The same kinds asked
for approval (`ask` `tool`, `command`, `command_output`, `followup`) map the same way; the UI's own prompts
(`ask completion_result`, `resume_task`…) and bookkeeping (`task_progress`, `checkpoint_created`…) are
Ignored by kind. `modelInfo.modelId` is each step's model.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import orjson

from .jsondoc import as_object, has_key, load_json
from .reader import BadRecord, DocumentError, Event, Ignored, Records
from .runs import Run, stable_id

BOOKKEEPING = frozenset(
    {
        "say=task_progress",
        "say=checkpoint_created",
        "say=api_req_finished",  # older Cline: its cost is merged into api_req_started
        "say=api_req_retried",
        "say=deleted_api_reqs",
        "say=shell_integration_warning",
        "ask=completion_result",  # the UI asking the person to accept the result
        "ask=resume_task",
        "ask=resume_completed_task",
    }
)
MODEL_STEPS = ("think", "decision", "tool_call")
COUNTS = ("tokensIn", "tokensOut", "cacheWrites", "cacheReads", "cost")


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _json(text: Any) -> Any:
    if not isinstance(text, str) or text[:1] != "{":
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _when(ts: Any) -> datetime | None:
    if isinstance(ts, int | float) and not isinstance(ts, bool) and 0 < ts < 10**14:
        return datetime.fromtimestamp(ts / 1000, UTC)
    return None


def _usage(info: dict) -> dict[str, Any]:
    """A request's tokens and cost as step fields (cache reads and writes are input the model read)."""
    fields: dict[str, Any] = {"metadata": {"usage": {k: info[k] for k in COUNTS if k in info}}}
    if any(k in info for k in ("tokensIn", "cacheWrites", "cacheReads")):
        fields["tokens_in"] = _count(info.get("tokensIn")) + _count(info.get("cacheWrites")) + _count(info.get("cacheReads"))
    if "tokensOut" in info:
        fields["tokens_out"] = _count(info.get("tokensOut"))
    cost = info.get("cost")
    if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0:
        fields["cost_usd"] = float(cost)
    return fields


class _Task:
    """One task's steps, built message by message."""

    def __init__(self, run: Run):
        self.run = run
        self.usage: tuple[str, dict, dict] | None = None  # (event id, fields, common) of a request not yet answered
        self.command: str | None = None  # the event id of the last command, for its output
        self.ending: tuple[str, str] | None = None  # ("succeeded", answer) / ("failed", message) while nothing follows

    def model_step(self, key: str, type_: str, common: dict, **fields: Any) -> None:
        if self.usage is not None:
            _, usage, _ = self.usage
            self.usage = None
            meta = {**usage.pop("metadata"), **fields.pop("metadata", {})}
            fields = {**usage, **fields, "metadata": meta}
        self.run.step(key, type_, **common, **fields)

    def flush(self) -> None:
        """A request no model step answered still counts its tokens: a think step without content."""
        if self.usage is not None:
            key, usage, common = self.usage
            self.usage = None
            self.run.step(key, "think", **common, **usage)

    def message(self, msg: dict, i: int, where: str) -> Ignored | None:
        kind = f"{msg.get('type')}={msg.get('say') if msg.get('type') == 'say' else msg.get('ask')}"
        if kind in BOOKKEEPING:
            return Ignored(where, kind)
        text = msg.get("text") if isinstance(msg.get("text"), str) else None
        model = as_object(msg.get("modelInfo")).get("modelId")
        common: dict[str, Any] = {"where": where, "timestamp": _when(msg.get("ts"))}
        if isinstance(model, str) and model:
            common["model"] = model
        key = f"m{i}"
        if kind in ("say=task", "say=user_feedback", "say=user_feedback_diff"):
            self.flush()
            common.pop("model", None)
            self.run.step(key, "input", content=text, metadata={"role": "user", "cline": kind[4:]}, **common)
        elif kind == "say=api_req_started":
            self.flush()
            info = as_object(_json(text))
            if info.get("cancelReason"):
                reason = str(info["cancelReason"])
                failed = reason == "streaming_failed"
                message = info.get("streamingFailedMessage") if isinstance(info.get("streamingFailedMessage"), str) else reason
                self.run.step(
                    key,
                    "error" if failed else "observation",
                    content=message if failed else f"API request cancelled: {reason}",
                    status="error" if failed else "ok",
                    error_class=reason if failed else None,
                    **common,
                    **_usage(info),
                )
                return None
            usage = _usage(info)
            if isinstance(info.get("request"), str):
                usage["metadata"]["request"] = info["request"]
            self.usage = (key, usage, common)
        elif kind == "say=reasoning":
            self.model_step(key, "think", common, content=text)
        elif kind in ("say=text", "ask=followup", "say=completion_result"):
            if kind == "ask=followup":
                question = as_object(_json(text))
                content = question.get("question") if isinstance(question.get("question"), str) else text
                self.model_step(
                    key, "decision", common, content=content, metadata={"cline": "followup", "options": question.get("options")}
                )
            else:
                self.model_step(key, "decision", common, content=text)
            if kind == "say=completion_result":
                self.ending = ("succeeded", text or "")
                return None
        elif kind in ("say=tool", "ask=tool"):
            call = as_object(_json(text))
            name = call.get("tool") if isinstance(call.get("tool"), str) else None
            args = {k: v for k, v in call.items() if k != "tool"} if call else text
            self.model_step(key, "tool_call", common, tool_name=name, tool_args=args, tool_call_id=key)
        elif kind in ("say=command", "ask=command"):
            self.command = key
            self.model_step(key, "tool_call", common, tool_name="execute_command", tool_args={"command": text}, tool_call_id=key)
        elif kind in ("say=command_output", "ask=command_output"):
            common.pop("model", None)
            self.run.step(key, "tool_result", content=text, tool_name="execute_command", tool_call_id=self.command, **common)
        elif kind in ("say=error", "ask=api_req_failed"):
            self.flush()
            common.pop("model", None)
            self.run.step(key, "error", content=text, status="error", error_class=kind[4:], **common)
            self.ending = ("failed", text or "")
            return None
        elif kind == "say=error_retry":
            retry = as_object(_json(text))
            message = retry.get("errorMessage") if isinstance(retry.get("errorMessage"), str) else text
            self.run.step(
                key, "observation", content=message, metadata={"cline": "error_retry", "retry": retry or None}, **common
            )
        else:
            return Ignored(where, kind[:60], known=False)
        self.ending = None
        return None


class ClineUiFormat:
    name = "cline_ui"
    label = "Cline / Roo Code task UI log (ui_messages.json)"
    unwatchable = "one JSON document per task, rewritten whole"  # (watch refuses it)

    def sniff(self, head: bytes, filename: str) -> bool:
        first = head[:65536]
        if not first.lstrip().startswith(b"["):
            return False
        return has_key(first, "ts") and (has_key(first, "type", "say") or has_key(first, "type", "ask"))

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored | Records]:
        doc = load_json(data, filename)
        if not isinstance(doc, list):
            raise DocumentError(BadRecord(f"{filename}:1", "expected a list of Cline UI messages ({ts, type, say|ask})"))
        yield Records(len(doc), "UI messages")
        task_text = next(
            (m.get("text") for m in doc if isinstance(m, dict) and m.get("say") == "task" and isinstance(m.get("text"), str)),
            None,
        )
        first_ts = next((_when(m.get("ts")) for m in doc if isinstance(m, dict) and _when(m.get("ts"))), None)
        models = [as_object(m.get("modelInfo")).get("modelId") for m in doc if isinstance(m, dict)]
        models = [m for m in models if isinstance(m, str) and m]
        run = Run(
            stable_id(filename, data),
            filename,
            name=task_text[:200] if task_text else None,
            agent_id="cline",
            model=max(set(models), key=models.count) if models else None,
            started_at=first_ts,
        )
        task = _Task(run)
        for i, msg in enumerate(doc):
            where = f"{filename}:[{i}]"
            if not isinstance(msg, dict) or msg.get("type") not in ("say", "ask"):
                yield BadRecord(where, "expected a UI message: an object with type say or ask")
                continue
            ignored = task.message(msg, i, where)
            if ignored is not None:
                yield ignored
        task.flush()
        ended = max((s.timestamp for s in run.steps if s.timestamp), default=None)
        if task.ending is not None:
            status, text = task.ending
            run.finish(status, outcome=text or None, error_class="error" if status == "failed" else None, ended_at=ended)
        yield from run.events()


FORMAT = ClineUiFormat()

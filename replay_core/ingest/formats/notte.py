"""Notte browser-agent trajectories: `[{"type": ..., "value": ...}]` elements.

Element types: `agent_step_start` / `agent_step_stop` (an agent step → a span that its
elements hang under), `observation` (the page: url, title, screenshot),
`agent_completion` (the agent's `state` — previous goal status and evaluation, page
summary, memory, next goal — and its `action`), `execution_result` (the action's
`success` and `message`) and `screenshot`. The state goes to the step's
`metadata["state"]` (what the timeline shows as goal/memory), the action becomes a
tool_call (a `completion` action is the run's decision), and every screenshot becomes
an attachment of its step. An execution no completion announced (a plain session
trajectory, which notte-core 1.10 records without agent elements) gets its own
tool_call from the action it carries; its `started_at`/`ended_at` give time and
duration and `exception_detail.error_type` the error class. An agent status response
(`{"task", "success", "answer", "steps": [...]}`) carries the run's task and outcome too.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from typing import Any

from .jsondoc import as_object, has_key, load_json, starts_json
from .reader import BadRecord, Event, Records
from .runs import Run, compact, parse_time, stable_id

ELEMENT_TYPES = ("agent_step_start", "agent_step_stop", "observation", "agent_completion", "execution_result", "screenshot")
COMPLETION = "completion"
_DESCRIPTIVE = ("type", "category", "description")  # action fields that are not arguments
_MAGIC = ((b"\x89PNG", "image/png"), (b"\xff\xd8", "image/jpeg"), (b"RIFF", "image/webp"), (b"GIF8", "image/gif"))


def _attachment(shot: Any, name: str) -> dict | None:
    """{"name", "mime_type", "data_b64"} for a screenshot given as base64 text (or {"raw": ...})."""
    raw = shot.get("raw") if isinstance(shot, dict) else shot
    if not isinstance(raw, str) or not raw:
        return None
    try:
        head = base64.b64decode(raw[:24] + "=" * (-len(raw[:24]) % 4), validate=False)
    except (binascii.Error, ValueError):
        return None
    mime = next((m for magic, m in _MAGIC if head.startswith(magic)), "application/octet-stream")
    return {"name": name, "mime_type": mime, "data_b64": raw}


def _without_raw(shot: Any) -> Any:
    return {k: v for k, v in shot.items() if k != "raw"} if isinstance(shot, dict) else None


class _Trajectory:
    def __init__(self, run: Run):
        self.run = run
        self.span: str | None = None
        self.step_no: int | None = None
        self.action_key: str | None = None
        self.action_name: str | None = None
        self.final: tuple[bool | None, str | None] | None = None

    def element(self, i: int, elem: Any, where: str) -> None:
        if not isinstance(elem, dict) or elem.get("type") not in ELEMENT_TYPES:
            kind = elem.get("type") if isinstance(elem, dict) else type(elem).__name__
            self.run.errors.append(BadRecord(where, f"type: expected one of {', '.join(ELEMENT_TYPES)}, got {kind!r}"))
            return
        kind, value = elem["type"], elem.get("value")
        value = value if isinstance(value, dict) else {"value": value}
        extra = {k: v for k, v in elem.items() if k not in ("type", "value")}
        common = {"where": where, "parent_id": self.span, "agent_id": value.get("agent_id") or None}
        if kind == "agent_step_start":
            self.step_no = value.get("step_number", i)
            span = self.run.step(
                f"step{self.step_no}",
                "span",
                where=where,
                content=f"agent step {self.step_no}",
                agent_id=value.get("agent_id") or None,
                metadata=extra,
            )
            self.span = span.event_id if span else None
        elif kind == "agent_step_stop":
            self.span = None
        elif kind == "observation":
            self._observation(i, value, common, extra)
        elif kind == "agent_completion":
            self._completion(i, value, common, extra)
        elif kind == "execution_result":
            self._execution(i, value, common, extra)
        else:
            self.run.step(
                f"s{i}",
                "observation",
                **common,
                content="screenshot",
                metadata={**extra, "screenshot": _without_raw(value), "attachment": _attachment(value, f"screenshot-{i}")},
            )

    def _execution(self, i: int, value: dict, common: dict, extra: dict) -> None:
        action = as_object(value.get("action"))
        started, ended = parse_time(value.get("started_at")), parse_time(value.get("ended_at"))
        duration = (ended - started).total_seconds() * 1000 if started and ended and ended >= started else None
        if self.action_key is None and action:
            self.action_key, self.action_name = f"e{i}.action", action.get("type")
            self.run.step(
                self.action_key,
                "tool_call",
                **common,
                timestamp=started,
                tool_name=self.action_name,
                tool_call_id=self.action_key,
                tool_args={k: v for k, v in action.items() if k not in _DESCRIPTIVE and v is not None},
            )
        ok = value.get("success") is not False
        detail = as_object(value.get("exception_detail"))
        rest = {k: v for k, v in value.items() if k not in ("action", "success", "message", "started_at", "ended_at")}
        self.run.step(
            f"e{i}",
            "tool_result",
            **common,
            timestamp=started,
            duration_ms=duration,
            tool_name=action.get("type") or self.action_name,
            tool_call_id=self.action_key,
            content=str(value.get("message") or ""),
            status="ok" if ok else "error",
            error_class=None if ok else str(detail.get("error_type") or "action_failed"),
            metadata={**extra, **rest, "action": action or None},
        )
        self.action_key = None

    def _observation(self, i: int, value: dict, common: dict, extra: dict) -> None:
        meta = as_object(value.get("metadata"))
        space = as_object(value.get("space"))
        title, url = meta.get("title"), meta.get("url")
        text = " — ".join(str(x) for x in (title, url) if x)
        if space.get("description"):
            text = f"{text}\n{space['description']}".strip()
        rest = {k: v for k, v in value.items() if k != "screenshot"}
        stamp = parse_time(meta.get("timestamp") or value.get("started_at"))
        self.run.step(
            f"o{i}",
            "observation",
            **common,
            content=text,
            timestamp=stamp,
            metadata={
                **extra,
                **rest,
                "screenshot": _without_raw(value.get("screenshot")),
                "attachment": _attachment(value.get("screenshot"), f"observation-{i}"),
            },
        )

    def _completion(self, i: int, value: dict, common: dict, extra: dict) -> None:
        state = as_object(value.get("state"))
        action = as_object(value.get("action"))
        shown = {
            "goal": state.get("next_goal"),
            "memory": state.get("memory"),
            "page_summary": state.get("page_summary"),
            "previous_goal_status": state.get("previous_goal_status"),
            "previous_goal_eval": state.get("previous_goal_eval"),
            **{
                k: v
                for k, v in state.items()
                if k not in ("next_goal", "memory", "page_summary", "previous_goal_status", "previous_goal_eval")
            },
        }
        rest = {k: v for k, v in value.items() if k not in ("state", "action")}
        self.run.step(
            f"c{i}",
            "think",
            **common,
            content=str(state.get("next_goal") or state.get("previous_goal_eval") or ""),
            metadata={**extra, **rest, "state": compact(shown)},
        )
        name = action.get("type")
        args = {k: v for k, v in action.items() if k != "type"}
        if name == COMPLETION:
            self.final = (action.get("success"), action.get("answer"))
            self.run.step(
                f"c{i}.action", "decision", **common, content=str(action.get("answer") or ""), tool_name=name, tool_args=args
            )
        elif action:
            self.action_key, self.action_name = f"c{i}.action", name
            self.run.step(self.action_key, "tool_call", **common, tool_name=name, tool_args=args, tool_call_id=self.action_key)


class NotteFormat:
    name = "notte"
    label = "Notte agent trajectory"

    def sniff(self, head: bytes, filename: str) -> bool:
        return (
            starts_json(head)
            and has_key(head, "type")
            and has_key(head, "value")
            and any(has_key(head, "type", t) for t in ("agent_step_start", "agent_completion", "execution_result"))
        )

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Records]:
        doc = load_json(data, filename)
        status = doc if isinstance(doc, dict) else {}
        elements = status.get("steps") if status else doc
        if not isinstance(elements, list):
            yield BadRecord(filename, "expected a list of {type, value} elements (or an agent status with 'steps')")
            return
        yield Records(len(elements), "elements")
        extra = {
            k: v
            for k, v in status.items()
            if k not in ("steps", "task", "agent_id", "success", "answer", "created_at", "closed_at", "replay")
        }
        run = Run(
            status.get("agent_id") or stable_id(filename, data),
            filename,
            name=(status.get("task") or None) and str(status["task"])[:200],
            agent_id="notte",
            started_at=parse_time(status.get("created_at")),
            metadata=compact(extra),
        )
        if status.get("task"):
            run.step("task", "input", content=str(status["task"]), metadata={"role": "user", "url": status.get("url")})
        traj = _Trajectory(run)
        for i, elem in enumerate(elements):
            traj.element(i, elem, f"{filename}:steps[{i}]" if status else f"{filename}:[{i}]")
        success, answer = (status.get("success"), status.get("answer")) if "success" in status else traj.final or (None, None)
        ended = parse_time(status.get("closed_at"))
        if success is True:
            run.finish("succeeded", outcome=answer, ended_at=ended)
        elif success is False:
            run.finish("failed", outcome=answer, error_class="task_failed", ended_at=ended)
        yield from run.events()


FORMAT = NotteFormat()

"""One recorded run, and the one-method-per-step-type surface it shares with the Recorder."""

from __future__ import annotations

import base64
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextvars import Token
from typing import Any, Literal

from pydantic import ValidationError

from ..events import AttachmentEvent, SessionEndEvent, StepEvent, describe_validation_error, now_utc
from .fallback import FallbackBlock
from .handles import Sequencer, current_parent, current_run, json_safe, new_id, no_nul
from .span import Span
from .step_order import AutoCall, StepOrder
from .tool_call import as_text

STEP_FIELDS = frozenset(StepEvent.model_fields) - {"schema_", "kind", "session_id", "type"}
JSON_FIELDS = ("tool_args", "context", "metadata")


class StepMethods(ABC):
    """One method per step type. A Session records into itself, a Recorder into its current session.

    Every method returns the step's event_id and takes the contract's step fields as
    keywords (model, tokens_in, tokens_out, cost_usd, duration_ms, context, metadata,
    agent_id, status, retry, timestamp, parent_id, ...).
    """

    @abstractmethod
    def _run(self) -> Session:
        """The session the steps go to."""

    def step(self, type: str, content: str | None = None, **fields: Any) -> str:
        return self._run().record(type, content=content, **fields)

    def input(self, content: str, *, role: str = "user", **fields: Any) -> str:
        fields["metadata"] = {**(fields.get("metadata") or {}), "role": role}
        return self.step("input", content, **fields)

    def think(self, content: str | None, **fields: Any) -> str:
        return self.step("think", content, **fields)

    def observation(self, content: str | None, **fields: Any) -> str:
        return self.step("observation", content, **fields)

    def decision(self, content: str | None, **fields: Any) -> str:
        return self.step("decision", content, **fields)

    def tool_call(self, tool_name: str, args: Any = None, **fields: Any) -> str:
        """The returned event_id doubles as the tool_call_id unless one is given."""
        return self.step("tool_call", tool_name=tool_name, tool_args=args, **fields)

    def tool_result(self, tool_name: str, result: Any, **fields: Any) -> str:
        return self.step("tool_result", as_text(result), tool_name=tool_name, **fields)

    def error(self, error: BaseException | str, **fields: Any) -> str:
        """An error step; an exception gives its class name as error_class."""
        if isinstance(error, BaseException):
            fields.setdefault("error_class", type(error).__name__)
            error = str(error) or type(error).__name__
        fields.setdefault("status", "error")
        return self.step("error", error, **fields)

    def screenshot(self, image: Any, step: str | None = None, target: Any = None, *, name: str | None = None) -> str:
        """Attach a screenshot (PNG/JPEG bytes, a path or a PIL image) to `step` (an event_id), else to the
        run's latest step; `target` is the click point (x, y) or the element's box (x, y, w, h).
        Returns the step's event_id. A broken or oversized image raises here, at the call."""
        return self._run().attach(image, step, target, name)

    def span(self, name: str, **fields: Any) -> Span:
        """A parent operation: `with run.span("retrieve"):` makes the steps inside its children."""
        return Span(self._run(), name, fields)

    def fallback(self, task: str, agent: Callable[[str, Exception], Any], **fields: Any):
        """A scripted block that hands over to `agent(task, error)` on its first failure (fallback.py)."""
        return FallbackBlock(self._run(), task, agent, fields)


class Session(StepMethods):
    """One recorded run. `with` makes it the current session and ends it: succeeded, or failed
    with the exception's class when one escapes."""

    def __init__(self, recorder: Sequencer, session_id: str, *, numbered: bool = True):
        self.recorder, self.id = recorder, session_id
        self.order = StepOrder(numbered)
        self.ended = False
        self.last_event_id: str | None = None  # the step a screenshot goes to when none is named
        self._token: Token[Any] | None = None

    def _run(self) -> Session:
        return self

    def __enter__(self) -> Session:
        self._token = current_run.set(self)
        return self

    def __exit__(self, exc_type, exc, tb) -> Literal[False]:
        try:
            if exc is not None and not self.ended:
                self.record_exception(exc)
                self.end("failed", outcome=str(exc) or None, error_class=type(exc).__name__)
            elif not self.ended:
                self.end()
        finally:
            if self._token is not None:
                current_run.reset(self._token)
        return False

    def end(self, status: str = "succeeded", *, outcome: str | None = None, error_class: str | None = None) -> None:
        """Close the run (once; later calls are ignored)."""
        if self.ended:
            return
        event = SessionEndEvent(
            session_id=self.id, status=status, outcome=no_nul(outcome), error_class=no_nul(error_class), ended_at=now_utc()
        )
        self.ended = True
        self.recorder._closed_run(self, event)

    def build(self, type: str, **fields: Any) -> StepEvent:
        """A validated step of this run (not yet recorded)."""
        unknown = fields.keys() - STEP_FIELDS
        if unknown:
            raise TypeError(f"{type} step: unknown field(s) {', '.join(sorted(unknown))}")
        event_id = fields.get("event_id") or new_id()
        fields["event_id"] = event_id
        if type == "tool_call" and not fields.get("tool_call_id"):
            fields["tool_call_id"] = event_id
        if fields.get("timestamp") is None:
            fields["timestamp"] = now_utc()
        if "parent_id" not in fields:
            fields["parent_id"] = current_parent.get()
        for name in JSON_FIELDS:
            if fields.get(name) is not None:
                fields[name] = json_safe(fields[name])
        try:
            step = StepEvent(session_id=self.id, type=type, **{k: no_nul(v) for k, v in fields.items() if v is not None})
        except ValidationError as exc:
            raise ValueError(f"{type} step: {describe_validation_error(exc)}") from None
        self.last_event_id = event_id
        return step

    def record(self, type: str, **fields: Any) -> str:
        event = self.build(type, **fields)
        self.add(event)
        assert event.event_id is not None  # build gives every step its id
        return event.event_id

    def attach(self, image: Any, step: str | None, target: Any, name: str | None) -> str:
        """The screenshot as an attachment event, checked now and delivered in order after its step."""
        from ..media.images import as_bytes, check, check_target

        event_id = step or self.last_event_id
        if event_id is None:
            raise ValueError("screenshot: no step recorded yet in this run to attach it to (give step=...)")
        data, declared = as_bytes(image)
        checked = check(data, declared)
        event = AttachmentEvent(
            session_id=self.id,
            event_id=event_id,
            media_type=checked.mime_type,
            name=name,
            data=base64.b64encode(data).decode(),
            target=check_target(target),
        )
        self.recorder._deliver(self, event)
        return event_id

    def add(self, item: StepEvent | AutoCall) -> None:
        """Queue a built step (or a decorated tool's call) in this run's order."""
        self.recorder._enqueue(self, item)

    def record_exception(self, exc: BaseException, **fields: Any) -> None:
        """An error step for `exc`, once: the innermost span or tool it passed through records it."""
        if getattr(exc, "_agent_replay_recorded", False):
            return
        self.error(exc, **fields)
        try:
            exc.__dict__["_agent_replay_recorded"] = True
        except AttributeError:  # exceptions with __slots__: may be recorded again further out
            pass

"""Recording one tool call: its arguments by parameter name, then its result or its error, timed.

Used by `@recorder.tool` and by the scripted actions of fallback blocks.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any, Literal

import orjson

from .handles import Run
from .step_order import AutoCall


def as_text(value: Any) -> str | None:
    """A tool result as step content: strings as they are, anything else as JSON."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()


def signature_of(fn: Callable) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):  # some builtins have none
        return None


def call_arguments(signature: inspect.Signature | None, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The arguments of a call by parameter name (`self` left out, `**kwargs` spread)."""
    if signature is None:
        return {"args": list(args), "kwargs": kwargs}
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return {"args": list(args), "kwargs": kwargs}
    out: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        elif name not in ("self", "cls"):
            out[name] = list(value) if kind is inspect.Parameter.VAR_POSITIONAL else value
    return out


class ToolCall:
    """A tool call being recorded: the call when it starts, then its result or its error, with
    the duration. Without a run it records nothing and only times the call."""

    def __init__(self, run: Run | None, tool_name: str, args: dict, *, agent_id: str | None = None, auto: bool = False):
        self.run, self.tool_name, self.agent_id = run, tool_name, agent_id
        self._t0 = time.perf_counter()
        if run is not None:
            event = run.build("tool_call", tool_name=tool_name, tool_args=args, agent_id=agent_id)
            self.call_id, self.parent_id = event.tool_call_id, event.parent_id
            run.add(AutoCall(event) if auto else event)

    def _fields(self) -> dict[str, Any]:
        return {
            "tool_name": self.tool_name,
            "tool_call_id": self.call_id,
            "agent_id": self.agent_id,
            "parent_id": self.parent_id,
            "duration_ms": (time.perf_counter() - self._t0) * 1000,
        }

    def done(self, result: Any) -> Any:
        if self.run is not None:
            self.run.tool_result(result=result, **self._fields())
        return result

    def __enter__(self) -> ToolCall:
        return self

    def __exit__(self, exc_type, exc, tb) -> Literal[False]:
        if exc is not None and self.run is not None:
            self.run.record_exception(exc, **self._fields())
        return False

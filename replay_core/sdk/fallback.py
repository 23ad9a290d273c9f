"""Fallback blocks: a deterministic script that hands over to an agent when one of its actions fails.

    with recorder.fallback(task="download the May invoice", agent=invoice_agent) as fb:
        fb.step("open billing page", browser.goto, BILLING_URL)
        fb.step("click May invoice", browser.click, "#invoice-2026-05")
    if not fb.success: ...

The block is a `span` step with metadata {"block": "fallback", "task", "agent_invoked",
"success"}, so analytics can count how often the agent had to take over. Scripted
actions are tool_call/tool_result steps of agent "script". The first failure (raised
by an action or by any code in the block) is recorded as an `error` step, ends the
script there (nothing after it in the block runs), and `agent(task, error)` is called;
whatever the agent records becomes a child of the block. The block then exits normally:
`fb.success` says whether the task got done (the agent returning without raising counts
as done). A failing agent is recorded as an error step and leaves `fb.success` False;
the block does not raise it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .handles import Run
from .span import Span
from .tool_call import ToolCall, call_arguments, signature_of

SCRIPT_AGENT = "script"


@dataclass
class Action:
    """One scripted action that ran: its name, outcome, value or error, and duration."""

    name: str
    ok: bool
    result: Any = None
    error: Exception | None = None
    duration_ms: float = 0.0


class FallbackBlock(Span):
    def __init__(self, run: Run, task: str, agent: Callable[[str, Exception], Any], fields: dict[str, Any]):
        super().__init__(run, task, fields)
        self.task, self.agent = task, agent
        self.steps: list[Action] = []
        self.success = True
        self.agent_invoked = False
        self.agent_response: Any = None
        self.error: Exception | None = None  # the scripted failure that handed over
        self.agent_error: Exception | None = None

    def step(self, name: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """Run one scripted action, recorded as a tool call named `name`; returns its result.

        When it raises, the failure is recorded and the rest of the block is skipped."""
        start = time.perf_counter()
        try:
            with ToolCall(self.run, name, call_arguments(signature_of(fn), args, kwargs), agent_id=SCRIPT_AGENT) as call:
                result = call.done(fn(*args, **kwargs))
        except Exception as exc:
            self.steps.append(Action(name, False, error=exc, duration_ms=(time.perf_counter() - start) * 1000))
            raise
        self.steps.append(Action(name, True, result=result, duration_ms=(time.perf_counter() - start) * 1000))
        return result

    def __exit__(self, exc_type, exc, tb) -> bool:
        handed_over = isinstance(exc, Exception)
        try:
            if handed_over:
                self._hand_over(exc)
        finally:
            self.metadata.update(block="fallback", task=self.task, agent_invoked=self.agent_invoked, success=self.success)
            if self.error is not None:
                self.metadata["error_class"] = type(self.error).__name__
            if exc is not None and not handed_over:  # KeyboardInterrupt and the like: no hand-over
                self.run.record_exception(exc)
                self.metadata["success"] = self.success = False
                self.close("error", type(exc).__name__)
            else:
                self.close("ok" if self.success else "error", type(self.agent_error).__name__ if self.agent_error else None)
        return handed_over

    def _hand_over(self, exc: Exception) -> None:
        self.error = exc
        self.run.record_exception(exc, agent_id=SCRIPT_AGENT)
        self.agent_invoked = True
        self.success = False
        try:
            self.agent_response = self.agent(self.task, exc)
        except Exception as agent_exc:
            self.agent_error = agent_exc
            self.run.record_exception(agent_exc, metadata={"during": "fallback agent"})
        else:
            self.success = True

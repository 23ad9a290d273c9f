"""What the SDK's parts may ask of a run and of its recorder, and which run and span are current.

The parts (sessions, spans, tool calls, fallback blocks, the litellm logger) are typed by these
Protocols instead of importing `recorder`: the recorder imports its parts, never the reverse.
"""

from __future__ import annotations

import os
import re
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

import orjson

if TYPE_CHECKING:
    from ..events import AttachmentEvent, SessionEndEvent, StepEvent
    from .step_order import AutoCall, Reserved, StepOrder

current_run: ContextVar[Any] = ContextVar("agent_replay_run", default=None)
current_parent: ContextVar[str | None] = ContextVar("agent_replay_parent", default=None)


def new_id() -> str:
    return os.urandom(16).hex()  # random like uuid4, at a tenth of its cost


NUL_STAND_IN = "\ufffd"  # the contract refuses NUL; a live run cannot be asked to resend, so the SDK replaces it
_ESCAPED_NUL = re.compile(rb"(?<!\\)((?:\\\\)*)\\u0000")


def json_safe(value: Any) -> Any:
    """A JSON copy: later changes to the agent's objects do not change what was recorded.
    NUL characters (in strings and keys) become U+FFFD."""
    data = orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS)
    if b"\\u0000" in data:
        data = _ESCAPED_NUL.sub(rb"\1\\ufffd", data)
    return orjson.loads(data)


def no_nul(value: Any) -> Any:
    """A recorded string with NUL replaced by U+FFFD (the contract refuses NUL); other values as given."""
    return value.replace("\x00", NUL_STAND_IN) if isinstance(value, str) and "\x00" in value else value


class Sequencer(Protocol):
    """What a run needs of its recorder: a place in the run's order for each step, and delivery."""

    def _enqueue(self, run: Run, item: StepEvent | AutoCall) -> None: ...

    def _reserve(self, run: Run) -> Reserved: ...

    def _complete(self, run: Run, slot: Reserved, event: StepEvent) -> None: ...

    def _closed_run(self, run: Run, event: SessionEndEvent) -> None: ...

    def _deliver(self, run: Run, event: AttachmentEvent) -> None: ...


class Run(Protocol):
    """What spans, tool calls and fallback blocks need of the run they record into."""

    id: str
    recorder: Sequencer
    order: StepOrder

    def build(self, type: str, **fields: Any) -> StepEvent: ...

    def add(self, item: StepEvent | AutoCall) -> None: ...

    def tool_result(self, tool_name: str, result: Any, **fields: Any) -> str: ...

    def record_exception(self, exc: BaseException, **fields: Any) -> None: ...


class CallRecorder(Protocol):
    """What an integration (the litellm logger) needs of a recorder: the run a call belongs to,
    and a place held in it for the call's steps."""

    id: str
    closed: bool

    @property
    def current(self) -> Run | None: ...

    def run_for(self, session_id: str) -> Run: ...

    def call_started(self, run: Run | None, key: str) -> None: ...

    def call_finished(self, key: str, steps: Any, run: Run | None) -> None: ...

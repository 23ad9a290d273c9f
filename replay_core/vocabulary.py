"""The event contract's plain words: step types, statuses, the clock.

Apart from replay_core.events (which re-exports them) because that module builds its pydantic
models on import, a tenth of a second that readers which never validate an event (the Store
opened by `agent-replay stats`) need not wait for.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum


class StepType(StrEnum):
    THINK = "think"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    OBSERVATION = "observation"
    DECISION = "decision"
    ERROR = "error"
    INPUT = "input"
    SPAN = "span"


class SessionStatus(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    INCOMPLETE = "incomplete"
    UNKNOWN = "unknown"  # ended (a finished file), but the source recorded no outcome


class StepStatus(StrEnum):
    OK = "ok"
    ERROR = "error"
    BLOCKED = "blocked"


def now_utc() -> datetime:
    return datetime.now(UTC)

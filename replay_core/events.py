"""The event contract, schema ``agent-replay/v1``.

Every way a run gets in (file import, HTTP, SDK, litellm logger, the importers of
other formats) produces these three objects, and export writes them back, so the
contract is the one place that says what a run is made of.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

SCHEMA = "agent-replay/v1"


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


def utc(value: datetime | None) -> datetime | None:
    """Naive datetimes are taken as UTC; aware ones are converted to it."""
    if value is None:
        return None
    offset = value.utcoffset()
    if offset is None or not offset:  # naive, or already at UTC: relabel, no arithmetic
        return value if value.tzinfo is UTC else value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


UTCDatetime = Annotated[datetime, AfterValidator(utc)]


class _Event(BaseModel):
    """Shared behaviour: unknown fields are kept in ``metadata``, never dropped."""

    model_config = ConfigDict(extra="forbid", use_enum_values=True, validate_default=False)

    schema_: Literal["agent-replay/v1"] = Field(SCHEMA, alias="schema")
    session_id: Annotated[str, Field(min_length=1, max_length=200)]
    metadata: dict[str, Any] | None = None

    _known: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls._known = frozenset(cls.__pydantic_fields__) | {"schema", "kind"}

    @model_validator(mode="before")
    @classmethod
    def _extra_into_metadata(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.keys() <= cls._known:
            return data
        extra = [k for k in data if k not in cls._known]
        data = dict(data)
        metadata = dict(data.get("metadata") or {})
        for key in extra:
            metadata[key] = data.pop(key)
        data["metadata"] = metadata
        return data

    def to_json_dict(self) -> dict[str, Any]:
        """The wire form: JSON-ready, without unset fields, with ``schema`` and ``kind``."""
        body = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        body["schema"] = SCHEMA
        return {"schema": SCHEMA, "kind": self.kind, **{k: v for k, v in body.items() if k != "schema"}}


class SessionEvent(_Event):
    """Opens a run (or updates its dimensions when sent again)."""

    kind: Literal["session"] = "session"
    name: str | None = None
    agent_id: str | None = None
    model: str | None = None
    workflow: str | None = None
    environment: str | None = None
    agent_version: str | None = None
    status: SessionStatus | None = None
    outcome: str | None = None
    error_class: str | None = None
    started_at: UTCDatetime | None = None
    ended_at: UTCDatetime | None = None
    tags: list[str] | None = None
    source: str | None = None
    replay_of: str | None = None
    replay_from: int | None = None
    replay_to: int | None = None
    replay_config: dict[str, Any] | None = None


class StepEvent(_Event):
    """One event of a run."""

    kind: Literal["step"] = "step"
    event_id: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    seq: Annotated[int, Field(ge=0)] | None = None
    parent_id: str | None = None
    type: StepType
    timestamp: UTCDatetime | None = None
    duration_ms: Annotated[float, Field(ge=0)] | None = None
    agent_id: str | None = None
    model: str | None = None
    content: str | None = None
    tool_name: str | None = None
    tool_args: Any = None
    tool_call_id: str | None = None
    status: StepStatus = StepStatus.OK
    error_class: str | None = None
    retry: Annotated[int, Field(ge=0)] = 0
    tokens_in: Annotated[int, Field(ge=0)] | None = None
    tokens_out: Annotated[int, Field(ge=0)] | None = None
    cost_usd: Annotated[float, Field(ge=0)] | None = None
    context: Any = None
    redacted: int = 0

    @classmethod
    def trusted(cls, values: dict[str, Any]) -> StepEvent:
        """A step from our own database, validated on its way in: built without validation.

        pydantic's model_construct costs ~25 µs a step (defaults resolved per field), which
        was most of opening a 10,000-step session; this copies precomputed defaults.
        """
        step = cls.__new__(cls)
        object.__setattr__(step, "__dict__", {**_STEP_DEFAULTS, **values})
        object.__setattr__(step, "__pydantic_fields_set__", set(values))
        object.__setattr__(step, "__pydantic_extra__", None)
        object.__setattr__(step, "__pydantic_private__", None)
        return step

    def identity(self) -> str:
        """The event_id, or a stable hash of the step when the source gave none.

        Hashing keeps re-imports of id-less sources idempotent.
        """
        if self.event_id:
            return self.event_id
        body = self.model_dump(mode="json", exclude={"event_id", "redacted"}, exclude_none=True)
        return "h-" + hashlib.sha1(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()[:20]


_STEP_DEFAULTS = {name: f.get_default(call_default_factory=True) for name, f in StepEvent.model_fields.items()}


class SessionEndEvent(_Event):
    """Closes a run."""

    kind: Literal["session_end"] = "session_end"
    status: SessionStatus = SessionStatus.SUCCEEDED
    outcome: str | None = None
    error_class: str | None = None
    ended_at: UTCDatetime | None = None


class AttachmentEvent(_Event):
    """An image (a screenshot) of a step that was recorded before it: the SDK's `run.screenshot()`
    and the HTTP attachments route send one. The bytes go to the media store, never to `steps`."""

    kind: Literal["attachment"] = "attachment"
    event_id: Annotated[str, Field(min_length=1, max_length=200)]  # the step it belongs to
    media_type: Annotated[str, Field(max_length=100)] | None = None
    data: Annotated[str, Field(max_length=15_000_000)] | None = None  # base64; a 10 MB image at most
    url: Annotated[str, Field(max_length=2000)] | None = None  # kept as a reference, never fetched
    name: Annotated[str, Field(max_length=300)] | None = None
    target: dict[str, Any] | None = None  # {"x", "y"} or {"box": [x, y, w, h]} in image pixels

    @model_validator(mode="after")
    def _data_or_url(self) -> AttachmentEvent:
        if (self.data is None) == (self.url is None):
            raise ValueError("an attachment has `data` (base64) or `url`, one of the two")
        return self


Event = Annotated[SessionEvent | StepEvent | SessionEndEvent | AttachmentEvent, Field(discriminator="kind")]
_EVENT = TypeAdapter(Event)
KINDS = ("session", "step", "session_end", "attachment")


class EventError(ValueError):
    """A record that does not follow the contract; ``reason`` names the field at fault."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def parse_event(obj: Any) -> SessionEvent | StepEvent | SessionEndEvent | AttachmentEvent:
    """Validate one decoded JSON object against the contract."""
    if not isinstance(obj, dict):
        raise EventError(f"expected a JSON object, got {type(obj).__name__}")
    if obj.get("schema", SCHEMA) != SCHEMA:
        raise EventError(f"schema: unsupported {obj.get('schema')!r}, expected {SCHEMA!r}")
    if obj.get("kind") not in KINDS:
        raise EventError(f"kind: expected one of {', '.join(KINDS)}, got {obj.get('kind')!r}")
    try:
        return _EVENT.validate_python(obj)
    except ValidationError as exc:
        raise EventError(describe_validation_error(exc)) from None


def describe_validation_error(exc: ValidationError) -> str:
    """One line per field at fault, without pydantic's URLs and with the kind tag dropped."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = [str(p) for p in err["loc"] if p not in KINDS]
        parts.append(f"{'.'.join(loc) or 'record'}: {err['msg']}")
    return "; ".join(parts)


def now_utc() -> datetime:
    return datetime.now(UTC)

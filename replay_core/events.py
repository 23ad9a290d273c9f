"""The event contract, schema ``agent-replay/v1``.

Every way a run gets in (file import, HTTP, SDK, litellm logger, the importers of
other formats) produces these three objects, and export writes them back, so the
contract is the one place that says what a run is made of.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final, Literal, overload

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator
from pydantic_core import ErrorDetails

from .vocabulary import SessionStatus, StepStatus, StepType, now_utc  # noqa: F401  (re-exported: part of the contract)

SCHEMA: Final = "agent-replay/v1"


@overload
def utc(value: datetime) -> datetime: ...
@overload
def utc(value: None) -> None: ...
def utc(value: datetime | None) -> datetime | None:
    """Naive datetimes are taken as UTC; aware ones are converted to it."""
    if value is None:
        return None
    offset = value.utcoffset()
    if offset is None or not offset:  # naive, or already at UTC: relabel, no arithmetic
        return value if value.tzinfo is UTC else value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _utc_checked(value: datetime) -> datetime:
    try:
        return utc(value)
    except OverflowError:  # e.g. 0001-01-01T00:00+01:00 is before year 1 in UTC
        raise ValueError("date-time out of range once converted to UTC") from None


UTCDatetime = Annotated[datetime, AfterValidator(_utc_checked)]

# ---------------------------------------------------------------- limits
# What SQLite and PostgreSQL both hold (storage/tables.py): identifiers are varchar(200),
# environment/agent_version/source varchar(100), counts are 32-bit integers, PostgreSQL
# text and jsonb refuse NUL, and orjson (every JSON column's serializer) nests at most
# 254 levels and holds 64-bit integers. Checked here so that a bad value is a 422 (or a
# file:line error) naming the field, the same on both databases, never a database error.
ID_MAX = 200
SHORT_MAX = 100
INT_MAX = 2**31 - 1
# durations (ms) and costs (USD): a thousand times this is still finite, so rollups in µs and sums never overflow
NUMBER_MAX = 1e15
JSON_MAX_DEPTH = 128  # well under orjson's 254, so wire forms and API answers that wrap a value still serialize
JSON_INT_MIN, JSON_INT_MAX = -(2**63), 2**64 - 1
_NUL = "\x00"


def _no_nul(value: str) -> str:
    if _NUL in value:
        raise ValueError("NUL character (\\x00) is not allowed")
    return value


def _json_problem(value: Any) -> str | None:
    """Where a JSON value breaks the limits, and how; None when it is within them."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, where, depth = stack.pop()
        at = f" at {where}" if where else ""
        if isinstance(item, str):
            if _NUL in item:
                return f"NUL character (\\x00){at} is not allowed"
        elif item is None or isinstance(item, (bool, float)):
            continue
        elif isinstance(item, int):
            if not JSON_INT_MIN <= item <= JSON_INT_MAX:
                return f"integer{at} outside the 64-bit range"
        elif isinstance(item, (dict, list, tuple)):
            if depth >= JSON_MAX_DEPTH:
                return f"nested deeper than {JSON_MAX_DEPTH} levels"
            if isinstance(item, dict):
                for key, sub in item.items():
                    if key is not None and not isinstance(key, (str, int, float, bool)):
                        return f"key of type {type(key).__name__}{at}"
                    name = str(key)
                    if _NUL in name:
                        return f"NUL character (\\x00) in a key{at}"
                    stack.append((sub, f"{where}.{name}" if where else name, depth + 1))
            else:
                stack.extend((sub, f"{where}[{i}]", depth + 1) for i, sub in enumerate(item))
        else:
            return f"{type(item).__name__}{at} is not a JSON value"
    return None


_ORJSON_DEPTH = 254  # orjson refuses to serialize deeper
_DEPTH_PAD = _ORJSON_DEPTH - JSON_MAX_DEPTH
_pads = threading.local()


def _padded(value: Any) -> tuple[list, list]:
    """`value` inside _DEPTH_PAD nested lists, from a chain kept per thread (built once)."""
    chain = getattr(_pads, "chain", None)
    if chain is None:
        inner: list = [None]
        outer = inner
        for _ in range(_DEPTH_PAD - 1):
            outer = [outer]
        chain = _pads.chain = (outer, inner)
    chain[1][0] = value
    return chain


def _json_ok(value: Any) -> Any:
    """A JSON value the databases can store, checked in C in the usual case: one orjson
    pass (which fails past 254 levels, on integers past 64 bits, on non-JSON types) and a
    count of brackets, which bounds the depth from above. Only a value with more brackets
    than the depth limit is serialized again wrapped in enough lists that orjson's own
    limit falls at ours; only one that fails is walked in Python to name the place."""
    if value is None or isinstance(value, (int, float)):
        return _json_scalar_ok(value)
    data = _dumped(value)
    if data is not None and data.count(b"[") + data.count(b"{") > JSON_MAX_DEPTH and not _shallow(value):
        data = None
    if data is None or b"\\u0000" in data:
        problem = _json_problem(value)
        if problem:
            raise ValueError(problem)
        if data is None:
            raise ValueError("not serializable as JSON")
    return value


def _dumped(value: Any) -> bytes | None:
    """`value` as JSON, None when orjson refuses it. Keys other than text are asked for only when a map has
    one: the option that allows them costs a fifth more on every value."""
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is one
        pass
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return None


def _shallow(value: Any) -> bool:
    """Whether `value` nests at most JSON_MAX_DEPTH levels (orjson, padded)."""
    outer, inner = _padded(value)
    try:
        orjson.dumps(outer, option=orjson.OPT_NON_STR_KEYS)
        return True
    except (orjson.JSONEncodeError, TypeError):
        return False
    finally:
        inner[0] = None


def _json_scalar_ok(value: Any) -> Any:
    problem = None if value is None else _json_problem(value)
    if problem:
        raise ValueError(problem)
    return value


Text = Annotated[str, AfterValidator(_no_nul)]
Ident = Annotated[str, Field(max_length=ID_MAX), AfterValidator(_no_nul)]
Short = Annotated[str, Field(max_length=SHORT_MAX), AfterValidator(_no_nul)]
Count = Annotated[int, Field(ge=0, le=INT_MAX)]
Json = Annotated[Any, AfterValidator(_json_ok)]
JsonObject = Annotated[dict[str, Any], AfterValidator(_json_ok)]
Finite = Annotated[float, Field(ge=0, le=NUMBER_MAX, allow_inf_nan=False)]


class _Event(BaseModel):
    """Shared behaviour: unknown fields are kept in ``metadata``, never dropped."""

    model_config = ConfigDict(extra="forbid", use_enum_values=True, validate_default=False)

    schema_: Literal["agent-replay/v1"] = Field(SCHEMA, alias="schema")
    session_id: Annotated[str, Field(min_length=1, max_length=ID_MAX), AfterValidator(_no_nul)]
    metadata: JsonObject | None = None

    _known: ClassVar[frozenset[str]] = frozenset()
    if TYPE_CHECKING:  # each kind of event declares its own tag as a Literal field
        kind: str

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
    name: Text | None = None
    agent_id: Ident | None = None
    model: Ident | None = None
    workflow: Ident | None = None
    environment: Short | None = None
    agent_version: Short | None = None
    status: SessionStatus | None = None
    outcome: Text | None = None
    error_class: Ident | None = None
    started_at: UTCDatetime | None = None
    ended_at: UTCDatetime | None = None
    tags: list[Text] | None = None
    source: Short | None = None
    replay_of: Ident | None = None
    replay_from: Count | None = None
    replay_to: Count | None = None
    replay_config: JsonObject | None = None
    user_id: Ident | None = None  # who the run served (an end user or tenant): analytics and filters group by it
    thread_id: Ident | None = None  # the conversation the run is one turn of: the thread view lists its runs in order


class StepEvent(_Event):
    """One event of a run."""

    kind: Literal["step"] = "step"
    event_id: Annotated[str, Field(min_length=1, max_length=ID_MAX), AfterValidator(_no_nul)] | None = None
    seq: Count | None = None
    parent_id: Ident | None = None
    type: StepType
    timestamp: UTCDatetime | None = None
    duration_ms: Finite | None = None
    agent_id: Ident | None = None
    model: Ident | None = None
    content: Text | None = None
    tool_name: Ident | None = None
    tool_args: Json = None
    tool_call_id: Ident | None = None
    status: StepStatus = StepStatus.OK
    error_class: Ident | None = None
    retry: Count = 0
    tokens_in: Count | None = None
    tokens_out: Count | None = None
    cost_usd: Finite | None = None
    context: Json = None
    redacted: Count = 0

    @classmethod
    def trusted(cls, values: dict[str, Any], fields_set: set[str] | None = None) -> StepEvent:
        """A step from our own database, validated on its way in: built without validation.

        pydantic's model_construct costs ~25 µs a step (defaults resolved per field), which
        was most of opening a 10,000-step session; this copies precomputed defaults.
        `fields_set`: one set (the keys of `values`) shared by every step of a load, which all
        have the same keys: a set per step was half the memory of a 100,000-step run (1.2 KB each).
        """
        return cls._filled({**_STEP_DEFAULTS, **values}, set(values) if fields_set is None else fields_set)

    @classmethod
    def trusted_rows(cls, keys: tuple[str, ...], rows: Iterable[Sequence], fields_set: set[str], **same: Any) -> list[StepEvent]:
        """`trusted` for a whole load of rows of `keys` (plus `same`, e.g. the session id, for every row):
        each step's values one copy of the defaults updated in place (a fifth of `trusted`'s time)."""
        base = {**_STEP_DEFAULTS, **same}
        out = []
        for row in rows:
            values = base.copy()
            values.update(zip(keys, row, strict=True))
            out.append(cls._filled(values, fields_set))
        return out

    @classmethod
    def _filled(cls, values: dict[str, Any], fields_set: set[str]) -> StepEvent:
        step = cls.__new__(cls)
        object.__setattr__(step, "__dict__", values)
        object.__setattr__(step, "__pydantic_fields_set__", fields_set)
        object.__setattr__(step, "__pydantic_extra__", None)
        object.__setattr__(step, "__pydantic_private__", None)
        return step

    @property
    def stored_seq(self) -> int:
        """The seq of a step read back from the store, which numbers every step it keeps (a step
        still on its way in may have none yet)."""
        if self.seq is None:
            raise ValueError(f"step {self.event_id!r} has no seq: it is not a stored step")
        return self.seq

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
    outcome: Text | None = None
    error_class: Ident | None = None
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
    """Validate one decoded JSON object against the contract.

    A step is first tried on `fast_step`; whatever that cannot vouch for goes through the
    full model, which also words the error."""
    if not isinstance(obj, dict):
        raise EventError(f"expected a JSON object, got {type(obj).__name__}")
    if obj.get("kind") == "step":
        step = fast_step(obj)
        if step is not None:
            return step
    if obj.get("schema", SCHEMA) != SCHEMA:
        raise EventError(f"schema: unsupported {obj.get('schema')!r}, expected {SCHEMA!r}")
    if obj.get("kind") not in KINDS:
        raise EventError(f"kind: expected one of {', '.join(KINDS)}, got {obj.get('kind')!r}")
    try:
        return _EVENT.validate_python(obj)
    except ValidationError as exc:
        raise EventError(describe_validation_error(exc)) from None


# ---------------------------------------------------------------- the fast path for steps
# pydantic costs ~15 µs a step, most of an import. A step decoded from JSON with the usual
# types is checked here against the same limits, field by field, and built without the model
# (StepEvent.trusted); anything unusual (an unknown field, a number where text goes, a date in
# another format) returns None and takes the model's way, so the model stays the one judge of
# what is refused and of the message. tests/test_events_fast.py holds that both ways agree.
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-]\d{2}:\d{2})?")
_IDS = frozenset({"event_id", "parent_id", "agent_id", "model", "tool_name", "tool_call_id", "error_class"})
_COUNTS = frozenset({"seq", "retry", "tokens_in", "tokens_out", "redacted"})
_NUMBERS = frozenset({"duration_ms", "cost_usd"})
_JSONS = frozenset({"tool_args", "context", "metadata"})
_FAST_KEYS = _IDS | _COUNTS | _NUMBERS | _JSONS | {"session_id", "type", "status", "content", "timestamp", "schema", "kind"}
_TAGS = frozenset({"kind", "schema"})  # tags of a step's JSON, not among the fields it sets
_STEP_TYPES = frozenset(t.value for t in StepType)
_STEP_STATUSES = frozenset(t.value for t in StepStatus)


_PLAN_CACHE = 512  # key orders remembered (a file has a handful; a hostile one cannot grow it past this)
_plans: dict[tuple, tuple | None] = {}


def _plan(keys: tuple) -> tuple | None:
    """Which checks a step with these keys (in this order) needs: the keys of each kind, worked
    out once per key order rather than once per step; None when one of them is not a step field."""
    if keys in _plans:
        return _plans[keys]
    found = frozenset(keys)
    plan = None
    if found <= _FAST_KEYS and len(found) == len(keys):
        plan = (tuple(found & _IDS), tuple(found & _COUNTS), tuple(found & _NUMBERS), tuple(found & _JSONS))
    if len(_plans) < _PLAN_CACHE:
        _plans[keys] = plan
    return plan


def fast_step(obj: dict) -> StepEvent | None:
    """The step `obj` describes when it is plainly valid, else None (the model decides).

    Checked by kind of field over the keys present (`_plan`), not key by key; the values are checked
    in a copy of the defaults, so the step is built from it as it is (no second copy)."""
    values = _fast_checked(obj, {**_STEP_DEFAULTS, **obj})
    if values is None:
        return None
    values.pop("schema", None)  # `kind` is a field ("step", as checked); `schema` is not one
    return StepEvent._filled(values, obj.keys() - _TAGS)


def fast_step_values(obj: dict) -> dict[str, Any] | None:
    """`fast_step`'s field values (the keys `obj` gives, without `kind` and `schema`), for a path that
    stores steps without making StepEvents (ingest.step_rows); None when the model decides."""
    values = _fast_checked(obj, dict(obj))
    if values is not None:
        values.pop("kind")
        values.pop("schema", None)
    return values


def _fast_checked(obj: dict, values: dict[str, Any]) -> dict[str, Any] | None:
    """`values` (a copy of `obj`, alone or over the defaults) with `obj`'s fields checked and its numbers and
    time normalised, or None when the model decides."""
    plan = _plan(tuple(obj))
    if plan is None or obj.get("kind") != "step" or obj.get("schema", SCHEMA) != SCHEMA:
        return None
    ids, counts, numbers, jsons = plan
    sid, kind = obj.get("session_id"), obj.get("type")
    if type(sid) is not str or not 0 < len(sid) <= ID_MAX or _NUL in sid or type(kind) is not str or kind not in _STEP_TYPES:
        return None
    if "status" in obj:
        status = obj["status"]
        if type(status) is not str or status not in _STEP_STATUSES:
            return None
    for key in ids:
        value = obj[key]
        if value is not None and (type(value) is not str or not 0 < len(value) <= ID_MAX or _NUL in value):
            return None
    for key in counts:
        value = obj[key]
        if type(value) is not int or not 0 <= value <= INT_MAX:
            if value is None and key in ("seq", "tokens_in", "tokens_out"):
                continue
            return None
    for key in numbers:
        value = obj[key]
        if type(value) is int and 0 <= value <= NUMBER_MAX:
            values[key] = float(value)
        elif value is not None and (type(value) is not float or not 0 <= value <= NUMBER_MAX):
            return None
    content = obj.get("content")
    if content is not None and (type(content) is not str or _NUL in content):
        return None
    when = obj.get("timestamp")
    if when is not None:
        if type(when) is datetime:  # a reader's own parse (OTLP nanoseconds, ISO already read)
            if when.tzinfo is not UTC:  # made at UTC (as readers make them): nothing to convert
                try:
                    values["timestamp"] = _utc_checked(when)
                except ValueError:
                    return None
        elif type(when) is not str or not _ISO.fullmatch(when):
            return None
        else:
            try:
                values["timestamp"] = _utc_checked(datetime.fromisoformat(when))
            except ValueError:
                return None
    present = [obj[key] for key in jsons if obj[key] is not None]
    if "metadata" in obj and obj["metadata"] is not None and type(obj["metadata"]) is not dict:
        return None
    if present and not _all_json_ok(present):
        return None
    return values


def _all_json_ok(items: list[Any]) -> bool:
    """Whether every value passes `_json_ok`: checked together in one pass where they are small or
    shallow enough, one by one (and so exactly as alone) only where the pass together is not conclusive."""
    if len(items) > 1:
        data = _dumped(items)
        if data is not None and data.count(b"[") + data.count(b"{") <= JSON_MAX_DEPTH and b"\\u0000" not in data:
            return True
    try:
        for item in items:
            _json_ok(item)
    except ValueError:
        return False
    return True


def describe_validation_error(exc: ValidationError) -> str:
    """One line per field at fault, without pydantic's URLs and with the kind tag dropped."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = [str(p) for p in err["loc"] if p not in KINDS]
        parts.append(f"{'.'.join(loc) or 'record'}: {error_message(err)}")
    return "; ".join(parts)


def error_message(err: ErrorDetails) -> str:
    """pydantic's message for one error, without the "Value error, " of our own validators."""
    msg = err["msg"]
    return msg.removeprefix("Value error, ")

"""Bodies checked against the contract (the models of `events`), whole: one bad item refuses the
batch, and every item at fault is named (`steps[3].type`) before anything is stored."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from ..events import AttachmentEvent, SessionEndEvent, SessionEvent, StepEvent, error_message, fast_step
from ..ingest.redact import Redactor, default_redactor
from ..ingest.step_rows import step_row_of
from .responses import ApiError

MAX_LISTED_ERRORS = 50
_MODELS: dict[str, type[BaseModel]] = {
    "session": SessionEvent,
    "step": StepEvent,
    "session_end": SessionEndEvent,
    "attachment": AttachmentEvent,
}


def parse_events(items: list[Any], name: str, implied: Mapping[str, str]) -> list:
    """Validate a batch whole: every bad item is listed as `name[i].field`, nothing is kept. Steps come
    back validated and redacted as rows where the fast path vouches for them (`ingest` stores them as they are)."""
    errors: list[dict] = []
    redactor = default_redactor()
    events = [_event(obj, f"{name}[{i}]", implied, errors, redactor) for i, obj in enumerate(items)]
    if errors:
        raise validation_failed(errors)
    return events


def parse_event(obj: Any, implied: Mapping[str, str]):
    errors: list[dict] = []
    event = _event(obj, "", implied, errors)
    if errors:
        raise validation_failed(errors)
    return event


def step_items(body: Any) -> list[Any]:
    """A steps body: one step object, a JSON array of them, or {"steps": [...]}."""
    if isinstance(body, dict) and set(body) == {"steps"}:
        body = body["steps"]
        if not isinstance(body, list):
            raise ApiError(422, "steps: expected a JSON array", [{"loc": "steps", "msg": "expected a JSON array"}])
    return body if isinstance(body, list) else [body]


def validation_failed(errors: list[dict]) -> ApiError:
    shown = errors[:MAX_LISTED_ERRORS]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return ApiError(422, f"{errors[0]['loc']}: {errors[0]['msg']}{more}", shown)


def _event(obj: Any, where: str, implied: Mapping[str, str], errors: list[dict], redactor: Redactor | None = None):
    """Validate one object; fields the route implies are filled in, and must agree when given. With
    `redactor`, a step the contract's fast path vouches for comes back as its redacted row (StepRow)."""
    loc = (lambda name: f"{where}.{name}") if where else (lambda name: name)
    if not isinstance(obj, dict):
        errors.append({"loc": where or "body", "msg": f"expected a JSON object, got {type(obj).__name__}"})
        return None
    clash = False
    for name, value in implied.items():
        given = obj.get(name)
        if given is not None and given != value:
            errors.append({"loc": loc(name), "msg": f"this route takes {value!r}, the body says {given!r}"})
            clash = True
    if clash:
        return None
    kind = implied.get("kind") or obj.get("kind")
    model = _MODELS.get(kind) if isinstance(kind, str) else None  # a body's kind may be any JSON
    if model is None:
        errors.append({"loc": loc("kind"), "msg": f"expected one of {', '.join(_MODELS)}, got {kind!r}"})
        return None
    body = {**obj, **implied}
    if kind == "step":  # the contract's fast path (events.fast_step): the model still judges what it cannot vouch for
        if redactor is not None:  # straight into the row `ingest` stores, no StepEvent made (ingest.step_rows)
            row = step_row_of(body, redactor)
            if row is not None:
                return row
        step = fast_step(body)
        if step is not None:
            return step
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            path = ".".join(str(p) for p in err["loc"])
            errors.append({"loc": loc(path) if path else (where or "body"), "msg": error_message(err)})
        return None

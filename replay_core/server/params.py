"""Query and path parameters read strictly: a bad value is a 422 naming the parameter, never a guess."""

from __future__ import annotations

from collections.abc import Mapping

from starlette.requests import Request

from ..events import ID_MAX
from .responses import ApiError


def int_param(params: Mapping[str, str], name: str, default: int | None, low: int, high: int | None = None) -> int:
    """An integer in [low, high]; `default` when absent (required when the default is None)."""
    raw = params.get(name)
    if raw is None or raw == "":
        if default is None:
            raise ApiError(422, f"{name}: required query parameter", [{"loc": name, "msg": "required"}])
        return default
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        msg = f"expected an integer {bound}, got {raw!r}"
        raise ApiError(422, f"{name}: {msg}", [{"loc": name, "msg": msg}])
    return value


def last_event_id(request: Request, high: int) -> int | None:
    """The step a stream resumes after: the `Last-Event-ID` header or `?last_event_id=`, ASCII digits up to
    `high` (Python's int() also reads other scripts' digits, such as '²', and would fail on them)."""
    raw = (request.headers.get("last-event-id") or request.query_params.get("last_event_id") or "").strip()
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 20 and int(raw) <= high):
        msg = f"expected a step's seq (a whole number), got {raw[:50]!r}"
        raise ApiError(422, f"Last-Event-ID: {msg}", [{"loc": "Last-Event-ID", "msg": "expected a whole number"}])
    return int(raw)


def flag(params: Mapping[str, str], name: str) -> bool:
    raw = (params.get(name) or "").strip().lower()
    if raw in ("", "0", "false", "no"):
        return False
    if raw in ("1", "true", "yes"):
        return True
    raise ApiError(422, f"{name}: expected true or false, got {raw!r}", [{"loc": name, "msg": "expected true or false"}])


def session_id(request: Request) -> str:
    """The session id in the path, refused (422) when no stored run could have it."""
    sid = request.path_params["session_id"]
    msg = None
    if "\x00" in sid:
        msg = "NUL character (\\x00) is not allowed"
    elif len(sid) > ID_MAX:
        msg = f"at most {ID_MAX} characters"
    if msg:
        raise ApiError(422, f"session_id: {msg}", [{"loc": "session_id", "msg": msg}])
    return sid

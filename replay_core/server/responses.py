"""What the API answers: JSON bodies, and every failure as an `ApiError` with its status, so no
request ends in a bare 500 or an exception reaching the server."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import orjson
from sqlalchemy import exc as sa_exc
from starlette.exceptions import HTTPException
from starlette.responses import Response

from ..storage.actor import PermissionDenied
from ..storage.store import WriteRefused

RETRY_AFTER_S = 30  # told to clients when the database cannot take writes (disk full, read-only, locked)
# PostgreSQL SQLSTATEs that say "not now" rather than "not this": read-only transaction,
# and class 53 (insufficient resources: disk full, out of memory, too many connections).
_NOT_NOW_STATES = ("25006", "53")
log = logging.getLogger("agent_replay.api")


class ApiError(Exception):
    """An answer other than 200; `errors` lists every field at fault as {loc, msg}."""

    def __init__(self, status: int, detail: str, errors: list[dict] | None = None, headers: dict | None = None):
        super().__init__(detail)
        self.status, self.detail, self.errors, self.headers = status, detail, errors, headers


class DatabaseUnavailable(ApiError):
    """503: the database cannot take the request now (disk full, read-only, locked, gone); `reason` is the driver's."""

    def __init__(self, reason: str):
        super().__init__(
            503, f"the database cannot take this now ({reason}); try again later", headers={"Retry-After": str(RETRY_AFTER_S)}
        )
        self.reason = reason


def json_response(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    data = orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS)
    return Response(data, status_code=status, media_type="application/json", headers=headers)


def error_response(error: ApiError) -> Response:
    body: dict[str, Any] = {"detail": error.detail}
    if error.errors:
        body["errors"] = error.errors
    return json_response(body, error.status, error.headers)


def as_api_error(exc: Exception) -> ApiError:
    """The answer to whatever a route raised."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, HTTPException):  # starlette's own refusals, e.g. a multipart body with too many fields
        return ApiError(exc.status_code, f"body: {exc.detail}", [{"loc": "body", "msg": str(exc.detail)}])
    if isinstance(exc, PermissionDenied):  # a role checked inside the library (e.g. ?replace=true: editors)
        return ApiError(403, str(exc))
    if isinstance(exc, WriteRefused):
        return ApiError(exc.status, exc.reason, [{"loc": exc.field, "msg": exc.reason}])
    if _cannot_write_now(exc):  # disk full, read-only file or server, locked, server gone
        reason = _db_reason(exc)
        log.error("database cannot take the request: %s", reason)
        return DatabaseUnavailable(reason)
    if isinstance(exc, (sa_exc.DataError, sa_exc.IntegrityError)):
        log.error("database refused values: %s", _db_reason(exc))
        return ApiError(422, f"the database refused these values ({_db_reason(exc)})")
    log.exception("unexpected error answering %s", type(exc).__name__)
    return ApiError(500, f"internal error ({type(exc).__name__}); the request was not stored")


def _cannot_write_now(exc: Exception) -> bool:
    if isinstance(exc, sa_exc.OperationalError):
        return True
    state = getattr(getattr(exc, "orig", None), "sqlstate", None) or ""
    return isinstance(exc, sa_exc.DBAPIError) and state.startswith(_NOT_NOW_STATES)


def _db_reason(exc: Exception) -> str:
    """The driver's first line (e.g. "attempt to write a readonly database"), never the SQL."""
    orig = getattr(exc, "orig", None) or exc
    return (str(orig).strip().splitlines() or [type(orig).__name__])[0][:200]

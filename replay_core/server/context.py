"""What every route of the HTTP API shares: the store (opened on first use), the access settings,
the body limit, the health note; and the two ways a handler becomes an endpoint: `answered`
(every answer JSON, whatever went wrong) and `guarded` (a bearer token whose role allows the action)."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from ..events import INT_MAX
from ..storage.actor import PermissionDenied
from ..storage.store import Store
from .auth import Access
from .bodies import max_body_bytes
from .responses import ApiError, DatabaseUnavailable, as_api_error, error_response

API_PREFIX = "/api/v1"
Handler = Callable[[Request], Awaitable[Response]]


class ApiContext:
    """The state the routes share, and the endpoints made of their handlers."""

    def __init__(self, store: Store | None = None, *, access: Access | None = None, max_body: int | None = None):
        self._store = store
        self._store_lock = threading.Lock()
        self.access = access if access is not None else Access.load()
        self.max_body = max_body if max_body is not None else max_body_bytes()
        self.degraded: str | None = None  # why the last write failed, until one succeeds

    def store(self) -> Store:
        with self._store_lock:
            if self._store is None:
                self._store = Store()
            return self._store

    async def audit(self, request: Request, action: str, target: str | None = None, **detail: object) -> None:
        """One audit line for what a request changed, in the name of its token: a summary (counts,
        ids), never the body."""
        actor = request.state.actor
        await run_in_threadpool(self.store().record_audit, actor, action, target=target[:2000] if target else None, detail=detail)

    async def session_or_404(self, session_id: str) -> dict:
        row = await run_in_threadpool(self.store().get_session, session_id)
        if row is None:
            raise ApiError(404, f"no session {session_id!r}")
        return row

    def answered(self, handler: Handler) -> Handler:
        """Every answer JSON, whatever went wrong: a response (not an exception reaching the
        server) also keeps the client's keep-alive connection open."""

        async def endpoint(request: Request) -> Response:
            try:
                for name, value in request.path_params.items():  # an id no table can hold (both databases)
                    if isinstance(value, int) and value > INT_MAX:
                        raise ApiError(404, f"{name}: no object has the id {value}", [{"loc": name, "msg": f"at most {INT_MAX}"}])
                return await handler(request)
            except Exception as exc:  # noqa: BLE001 — turned into an answer below, never a bare 500
                error = as_api_error(exc)
                if isinstance(error, DatabaseUnavailable):
                    self.degraded = error.reason
                return error_response(error)

        return endpoint

    def guarded(self, handler: Handler, action: str) -> Handler:
        """A route that needs a bearer token whose role allows `action` (401 without one, 403 when the role is short)."""

        async def checked(request: Request) -> Response:
            if not self.access.api_tokens:
                raise ApiError(
                    401,
                    "the API is closed: no API tokens are configured (set AGENT_REPLAY_API_TOKENS)",
                    headers={"WWW-Authenticate": "Bearer"},
                )
            origin = request.client.host if request.client else "api"
            actor = self.access.token_actor(request.headers.get("authorization"), origin)
            if actor is None:
                raise ApiError(401, "missing or invalid bearer token", headers={"WWW-Authenticate": "Bearer"})
            if not actor.may(action):
                try:
                    await run_in_threadpool(self.store().authorize, actor, action, request.url.path)
                except PermissionDenied as exc:
                    raise ApiError(403, str(exc)) from None
            request.state.actor = actor
            return await handler(request)

        endpoint = self.answered(checked)
        vars(endpoint)["action"] = action  # the role it needs, for the OpenAPI document (a function's attribute)
        return endpoint

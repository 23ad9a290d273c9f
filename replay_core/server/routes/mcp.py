"""The MCP server over streamable HTTP at /mcp, on the app's own port, behind the API tokens.

Stateless and JSON-answered (no server-side MCP session to keep): each POST is one call, checked
like any API route (401 without a valid bearer token). The SDK's session manager needs a task group
running on the serving loop; it is made and started on the first request rather than in a lifespan, so
the route works wherever the API's routes are mounted (the Streamlit app, `create_app`, tests), and
the SDK (0.4 s of imports) is not loaded by an app that is never asked.
The SDK's DNS-rebinding host check is off: every request must carry a configured token, which a
page on another origin does not have.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ...storage.actor import READ, Actor
from ..context import ApiContext
from ..responses import json_response

PATH = "/mcp"


class McpEndpoint:
    """An ASGI endpoint: token check, then the SDK's streamable HTTP handler."""

    def __init__(self, api: ApiContext):
        self.api = api
        self.handler: Any = None  # the SDK's handler, made on the first call
        self.action = READ  # the least a token needs (each tool checks its own role): for the OpenAPI document
        self._running: asyncio.Event | None = None
        self._keeper: asyncio.Task | None = None

    def actor_of(self, request: Any) -> Actor | None:
        origin = request.client.host if getattr(request, "client", None) else "mcp"
        return self.api.access.token_actor(request.headers.get("authorization"), f"{origin} (mcp)")

    async def _started(self) -> None:
        """The server and its session manager's task group, made on the first call and running on this loop
        until the server stops."""
        if self._running is None:
            self._running = asyncio.Event()
            self._keeper = asyncio.get_running_loop().create_task(self._keep())
        await self._running.wait()

    async def _keep(self) -> None:
        assert self._running is not None
        try:
            from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
            from mcp.server.transport_security import TransportSecuritySettings

            from ...mcp.server import build

            server = build(self.api.store, actor_of=self.actor_of)
            server.streamable_http_app(
                streamable_http_path=PATH,
                stateless_http=True,
                json_response=True,
                transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            )
            async with server.session_manager.run():
                self.handler = StreamableHTTPASGIApp(server.session_manager)
                self._running.set()
                await asyncio.Event().wait()  # until the loop is stopped
        finally:
            self._running.set()  # a server that could not start answers 503 rather than leaving calls waiting

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        if not self.api.access.api_tokens:
            await json_response(
                {"detail": "MCP over HTTP is closed: no API tokens are configured (set AGENT_REPLAY_API_TOKENS)"}, 401
            )(scope, receive, send)
            return
        if self.actor_of(request) is None:
            answer = json_response({"detail": "missing or invalid bearer token"}, 401, {"WWW-Authenticate": "Bearer"})
            await answer(scope, receive, send)
            return
        await self._started()
        if self.handler is None:
            await json_response({"detail": "the MCP server could not start (see the server's log)"}, 503)(scope, receive, send)
            return
        await self.handler(scope, receive, send)


def mcp_route(api: ApiContext) -> Route:
    return Route(PATH, endpoint=McpEndpoint(api), methods=["POST"])

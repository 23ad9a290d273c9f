"""The HTTP API: ingest and read runs over HTTP, through the same pipeline as file import.

Mounted beside the UI by `streamlit_app.py` (one process, one port); `create_app` serves the
same routes alone. `HttpApi` assembles the routes of each resource (server/routes/) over the
state they share (server/context.py).
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..storage.store import Store
from .auth import Access
from .body_budget import BodyBudget
from .context import ApiContext
from .origins import TrustedProxies
from .responses import json_response
from .routes.docs import DocRoutes
from .routes.experiments import ExperimentRoutes
from .routes.ingest import IngestRoutes
from .routes.langsmith import LangSmithRoutes
from .routes.mcp import mcp_route
from .routes.monitors import MonitorRoutes
from .routes.runs import RunRoutes
from .routes.team import TeamRoutes


class HttpApi:
    """Every route of the API, each resource's made once over one shared context."""

    def __init__(self, store: Store | None = None, *, access: Access | None = None, max_body: int | None = None):
        self.context = ApiContext(store, access=access, max_body=max_body)
        self._resources = (
            IngestRoutes(self.context),
            LangSmithRoutes(self.context),
            RunRoutes(self.context),
            ExperimentRoutes(self.context),
            TeamRoutes(self.context),
            MonitorRoutes(self.context),
            DocRoutes(self.context, self.routes),
        )
        self._mcp = mcp_route(self.context)

    def routes(self) -> list[Route]:
        return [route for resource in self._resources for route in resource.routes()] + [self._mcp]


def routes(store: Store | None = None, *, access: Access | None = None, max_body: int | None = None) -> list[Route]:
    """The API's routes, for `st.App(routes=...)`."""
    return HttpApi(store, access=access, max_body=max_body).routes()


def create_app(store: Store | None = None, *, access: Access | None = None, max_body: int | None = None) -> Starlette:
    """The API alone as an ASGI app (tests, or serving it without the UI); its own 404s and
    405s are JSON too; the client's address read as server/origins.py says."""

    async def http_error(request: Request, exc: HTTPException) -> Response:
        return json_response({"detail": exc.detail}, exc.status_code, exc.headers)

    return Starlette(
        routes=routes(store, access=access, max_body=max_body),
        middleware=[Middleware(TrustedProxies), Middleware(BodyBudget)],
        # Starlette types every handler as taking any Exception, though it calls each with the class it is keyed by
        exception_handlers={HTTPException: http_error},  # type: ignore[dict-item]
    )

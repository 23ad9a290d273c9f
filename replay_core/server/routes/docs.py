"""The API describing itself: its OpenAPI document (`/api/v1/openapi.json`, built from the route
table by server/openapi.py, so a route cannot go undocumented), the docs page, and `/healthz`.
None of them needs a token."""

from __future__ import annotations

from collections.abc import Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .. import openapi, openapi_page
from ..context import API_PREFIX, ApiContext
from ..responses import json_response


class DocRoutes:
    """`table` gives the whole route table, these routes included: the document is built from it once."""

    def __init__(self, api: ApiContext, table: Callable[[], list[Route]]):
        self.api, self._table = api, table
        self._document: dict | None = None

    def routes(self) -> list[Route]:
        return [
            Route("/healthz", self.api.answered(self.healthz), methods=["GET"]),
            Route(f"{API_PREFIX}/openapi.json", self.api.answered(self.openapi_json), methods=["GET"]),
            Route(f"{API_PREFIX}/docs", self.api.answered(self.api_docs), methods=["GET"]),
        ]

    def document(self) -> dict:
        if self._document is None:
            self._document = openapi.document(self._table())
        return self._document

    async def healthz(self, request: Request) -> Response:
        sessions = await run_in_threadpool(self.api.store().count_sessions)
        if self.api.degraded:
            return json_response({"status": "degraded", "reason": f"writes fail: {self.api.degraded}", "sessions": sessions})
        return json_response({"status": "ok", "sessions": sessions})

    async def openapi_json(self, request: Request) -> Response:
        return json_response(self.document())

    async def api_docs(self, request: Request) -> Response:
        return Response(
            openapi_page.page(self.document()),
            media_type="text/html",
            headers={"content-security-policy": "default-src 'none'; style-src 'unsafe-inline'"},
        )

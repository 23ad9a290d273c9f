"""The OpenAPI document (`/api/v1/openapi.json`) is valid OpenAPI 3.1, covers every route of the app's
route table (a route added without docs fails here), takes its bodies from the pydantic models that
validate them, and the docs page (`/api/v1/docs`) shows every operation with nothing to fetch."""

from __future__ import annotations

import html
import re

import pytest
from openapi_spec_validator import OpenAPIV31SpecValidator
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient

from replay_core.events import SessionEvent, StepEvent
from replay_core.server import openapi
from replay_core.server.api import HttpApi, create_app
from replay_core.server.auth import Access

ACCESS = Access.load(env={"AGENT_REPLAY_API_TOKENS": "viewer:v-token-0000,editor:e-token-0000"}, secrets={})


@pytest.fixture
def client(sqlite_store):
    with TestClient(create_app(sqlite_store, access=ACCESS)) as c:
        yield c


def test_the_served_document_is_valid_openapi_31_and_lists_every_route(client, sqlite_store):
    doc = client.get("/api/v1/openapi.json").json()  # no token needed to read the description
    assert doc["openapi"].startswith("3.1")
    OpenAPIV31SpecValidator(doc).validate()
    table = HttpApi(sqlite_store, access=ACCESS).routes()
    listed = {(m.upper(), p) for p, methods in doc["paths"].items() for m in methods}
    assert listed == {(m, p) for m, p, _ in openapi.operations(table)}
    assert len(listed) >= 30


def test_a_route_added_without_docs_fails():
    async def new(request):
        return Response(b"")

    table = [*HttpApi(None, access=ACCESS).routes(), Route("/api/v1/stream", new, methods=["GET"])]
    with pytest.raises(openapi.MissingDocs, match="GET /api/v1/stream"):
        openapi.document(table)


def test_security_names_the_role_each_route_needs(client):
    doc = client.get("/api/v1/openapi.json").json()
    paths = doc["paths"]
    assert paths["/api/v1/sessions"]["post"]["security"] == [{"bearer": ["editor"]}]
    assert paths["/api/v1/sessions"]["get"]["security"] == [{"bearer": ["viewer", "reviewer", "editor"]}]
    assert paths["/v1/traces"]["post"]["security"] == [{"bearer": ["editor"]}]
    assert paths["/healthz"]["get"]["security"] == []
    assert doc["components"]["securitySchemes"]["bearer"] == {
        **doc["components"]["securitySchemes"]["bearer"],
        "type": "http",
        "scheme": "bearer",
    }
    # what the document says matches what the server does
    assert (
        client.post("/api/v1/sessions", json={"session_id": "a"}, headers={"Authorization": "Bearer v-token-0000"}).status_code
        == 403
    )
    assert client.get("/api/v1/sessions", headers={"Authorization": "Bearer v-token-0000"}).status_code == 200
    for item in (i for methods in paths.values() for i in methods.values()):
        error = item["responses"]["422"]["content"]["application/json"]["schema"]
        body = {"$ref": "#/components/schemas/ErrorBody"}
        assert error == body or body in error.get("anyOf", [])  # a protocol's own errors (MCP's JSON-RPC) beside it


def test_bodies_are_the_pydantic_models_that_validate_them(client):
    schemas = client.get("/api/v1/openapi.json").json()["components"]["schemas"]
    for model in (SessionEvent, StepEvent):
        own = model.model_json_schema(by_alias=True, ref_template=openapi.REF)
        assert schemas[model.__name__]["properties"] == own["properties"]
    assert schemas["StepEvent"]["properties"]["tool_name"]["anyOf"][0]["maxLength"] == 200
    assert "session_id" not in schemas["StepEvent"]["required"]  # the path names the run
    assert "session_id" in schemas["SessionEvent"]["required"]
    # a body the schema refuses is refused by the server, naming the field
    r = client.post(
        "/api/v1/sessions/s1/steps",
        json={"type": "think", "tool_name": "t" * 201},
        headers={"Authorization": "Bearer e-token-0000"},
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == "steps[0].tool_name"


def test_the_docs_page_shows_every_operation_and_fetches_nothing(client):
    r = client.get("/api/v1/docs")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert r.headers["content-security-policy"].startswith("default-src 'none'")
    page = r.text
    doc = client.get("/api/v1/openapi.json").json()
    for methods in doc["paths"].values():
        for item in methods.values():
            assert f'id="{item["operationId"]}"' in page and html.escape(item["summary"]) in page
    assert "<script" not in page and "<link" not in page and "<img" not in page
    assert not re.findall(r"(?:src|href)=\"(?!#|openapi\.json)", page)  # only in-page anchors and the document

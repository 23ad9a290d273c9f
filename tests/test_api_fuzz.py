"""Schemathesis against the served app's own OpenAPI document: every operation, with an editor
token, fixed seeds, each case sent to the app on SQLite and to the app on PostgreSQL. Checks: no 5xx,
every answer's status, content type and body conform to the document (so every error is the JSON error
shape, naming a field); the live stream, which never ends, is checked by its answer's head. Then the
hostile bodies found by hand (wrong JSON types in every field the team and experiment routes read, a
Last-Event-ID of '²'), on each database.

`make test` runs FUZZ_EXAMPLES (default 8) examples per operation and seed, seeds FUZZ_SEEDS
(default "0"); `make fuzz` runs more of both. Experiments are started but never launched: a
fuzzed `api_base` or model must not send a request anywhere (the machine's network is loopback only).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
import uvicorn
from apptest_helpers import demo_store, free_port  # noqa: F401 (a fixture)
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.storage.store import Store
from replay_core.whatif import experiment

TOKEN = "fuzz-editor-token-0000"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "8"))
SEEDS = [int(s) for s in os.environ.get("FUZZ_SEEDS", "0").split(",")]


@contextmanager
def _serving(store: Store, launched: list[str]) -> Iterator[str]:
    """The app on `store` under uvicorn on a loopback port, in a thread of this process (so launching is held back)."""
    app = create_app(store, access=Access.load(env={"AGENT_REPLAY_API_TOKENS": f"editor:{TOKEN}"}, secrets={}))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def _hold_launches(monkeypatch) -> list[str]:
    launched: list[str] = []
    monkeypatch.setattr(experiment, "launch", lambda store, experiment_id, **kw: launched.append(experiment_id))
    return launched


@pytest.fixture
def served(demo, monkeypatch):
    """The app on the demo runs (SQLite, then PostgreSQL), served in this process."""
    with _serving(demo, _hold_launches(monkeypatch)) as base:
        yield base


@pytest.fixture
def served_each(demo_store, pg_store, pg_demo_rows, monkeypatch) -> Iterator[dict[str, str]]:
    """The app served twice at once, on the demo runs on SQLite and on PostgreSQL: the fuzz draws each case once
    and sends it to both, in the same order (drawing a case costs more CPU than the two answers to it)."""
    from conftest import _copy_in

    _copy_in(pg_store, pg_demo_rows)
    launched = _hold_launches(monkeypatch)
    with _serving(demo_store, launched) as on_sqlite, _serving(pg_store, launched) as on_postgres:
        yield {"sqlite": on_sqlite, "postgres": on_postgres}


def test_every_operation_holds_to_the_document(served_each):
    import schemathesis  # here, not at collection: a second of imports in every pytest-xdist worker
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance, status_code_conformance

    conformance = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
    doc = httpx.get(f"{served_each['sqlite']}/api/v1/openapi.json").json()
    assert httpx.get(f"{served_each['postgres']}/api/v1/openapi.json").json() == doc
    schema = schemathesis.openapi.from_dict(doc)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == sum(len(methods) for methods in doc["paths"].values())
    examples = 0
    statuses: dict[str, Counter[int]] = {name: Counter() for name in served_each}

    def fuzzer(operation):
        def check(data):
            nonlocal examples
            case = data.draw(operation.as_strategy())
            examples += 1
            for name, base in served_each.items():
                if operation.path.endswith("/stream"):
                    statuses[name][open_stream(case, base)] += 1
                    continue
                response = case.call_and_validate(base_url=base, headers=AUTH, checks=conformance, timeout=60)
                statuses[name][response.status_code] += 1

        return check

    def open_stream(case, base: str) -> int:
        """The live stream never ends while its run exists: its answer's head is checked, then it is closed."""
        sent = case.as_transport_kwargs(base_url=base, headers=AUTH)
        with httpx.stream(sent["method"], sent["url"], params=sent.get("params"), headers=sent["headers"], timeout=60) as r:
            kind = r.headers.get("content-type", "")
            if r.status_code == 200:
                assert kind.startswith("text/event-stream")
            else:
                r.read()
                assert r.status_code < 500 and kind.startswith("application/json") and "detail" in r.json(), r.text
            return r.status_code

    for operation in operations:
        check = fuzzer(operation)
        for s in SEEDS:
            run = seed(s)(
                settings(
                    max_examples=EXAMPLES, deadline=None, database=None, print_blob=True, suppress_health_check=list(HealthCheck)
                )(given(st.data())(check))
            )
            run()
    for name, answers in statuses.items():
        print(f"fuzzed {len(operations)} operations on {name}, {examples} requests, seeds {SEEDS}, {sorted(answers.items())}")
        assert sum(answers.values()) == examples >= len(operations)
        assert answers[401] == 0 and answers[403] == 0  # the editor token opened every route: the fuzz reached the handlers
        assert sum(n for code, n in answers.items() if code < 300) > examples // 10


def test_an_empty_replay_of_is_refused_naming_the_field(served):
    """Found by the fuzz: `replay_of: ""` passed the reference check and failed the foreign key."""
    r = httpx.post(f"{served}/api/v1/sessions", json={"session_id": "r1", "replay_of": ""}, headers=AUTH)
    assert r.status_code == 422 and r.json()["errors"] == [{"loc": "replay_of", "msg": r.json()["detail"]}], r.text


def test_a_multipart_body_with_too_many_fields_is_a_400(served):
    """Found by the fuzz: starlette's form parser refuses a fifth field with an HTTPException, which was a 500."""
    httpx.post(f"{served}/api/v1/sessions", json={"session_id": "m1"}, headers=AUTH)
    files = [("file", ("f.png", b"\x89PNG", "image/png"))] + [(f"x{i}", (None, "1")) for i in range(5)]
    r = httpx.post(f"{served}/api/v1/sessions/m1/steps/e1/attachments", files=files, headers=AUTH)
    assert r.status_code == 400 and r.json()["detail"].startswith("body: Too many fields"), r.text


@pytest.mark.parametrize(
    "path", ["/api/v1/queues/{n}", "/api/v1/queues/{n}/items/{n}/review", "/api/v1/attachments/{n}", "/api/v1/shares/{n}"]
)
def test_an_id_past_what_a_table_holds_is_a_404(served, path):
    """Found by the fuzz: queue id 34772298112741476859571380821164032 was an OverflowError (500) in the database driver."""
    url = served + path.format(n=2**115)
    method = "DELETE" if path.startswith("/api/v1/shares") else "POST" if path.endswith("review") else "GET"
    r = httpx.request(method, url, json={"reviewer": "r", "verdict": "good"}, headers=AUTH)
    assert r.status_code == 404 and r.json()["errors"][0]["msg"] == "at most 2147483647", r.text


HOSTILE = [
    ("/api/v1/shares", {"session": 5}, "session"),
    ("/api/v1/shares", {"session": "r", "other": [[]]}, "other"),
    ("/api/v1/shares", {"queue": "1"}, "queue"),
    ("/api/v1/experiments", {"dataset": "d", "models": [[[]]]}, "models.0"),
    ("/api/v1/experiments", {"dataset": "d", "models": ["m"], "scorers": [None]}, "scorers.0"),
    ("/api/v1/experiments", {"dataset": "d", "models": ["m"], "budget_usd": 0}, "budget_usd"),
    ("/api/v1/experiments", {"dataset": "d", "models": ["m"], "budget_usd": -1}, "budget_usd"),
    ("/api/v1/experiments", {"dataset": "d", "models": ["m"], "budget_tokens": 0}, "budget_tokens"),
    ("/api/v1/datasets", {"name": 31337}, "name"),
    ("/api/v1/datasets", {"name": "d", "runs": [5]}, "runs.0"),
    ("/api/v1/queues", {"name": "q", "runs": "r"}, "runs"),
    ("/api/v1/queues/1/next", {"reviewer": ["alice"]}, "reviewer"),
    ("/api/v1/queues/1/items/1/review", {"reviewer": "a", "verdict": {"x": 1}}, "verdict"),
]


@pytest.mark.parametrize(("path", "body", "field"), HOSTILE, ids=[f"{p.rsplit('/', 1)[-1]}-{f}" for p, _, f in HOSTILE])
def test_a_body_of_the_wrong_types_is_a_422_naming_the_field(served, path, body, field):
    r = httpx.post(served + path, json=body, headers=AUTH)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == field, r.text


def test_a_dataset_named_by_digits_is_stored_and_found_by_its_name(served):
    """A name of digits once made a 500 "not stored" after the dataset was stored (digits were read as an id)."""
    run = httpx.get(f"{served}/api/v1/sessions", headers=AUTH).json()["sessions"][0]["id"]
    made = httpx.post(f"{served}/api/v1/datasets", json={"name": "31337", "runs": [run]}, headers=AUTH)
    assert made.status_code == 201 and made.json()["name"] == "31337", made.text
    assert httpx.get(f"{served}/api/v1/datasets/31337", headers=AUTH).json()["name"] == "31337"
    listed = httpx.get(f"{served}/api/v1/datasets", headers=AUTH).json()["datasets"]
    assert [d["name"] for d in listed].count("31337") == 1


@pytest.mark.parametrize("value", [b"\xb2", b"\xff\xfe", b"1e3", b"-1", b"99999999999999999999999"])
def test_a_last_event_id_that_is_no_whole_number_is_a_422(served, value):
    """`'²'.isdigit()` is true and `int('²')` fails: read as a header (raw bytes) and as the query parameter."""
    run = httpx.get(f"{served}/api/v1/sessions", headers=AUTH).json()["sessions"][0]["id"]
    host, port = served.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            b"GET /api/v1/sessions/%s/stream HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nLast-Event-ID: %s\r\n"
            b"Connection: close\r\n\r\n" % (run.encode(), AUTH["Authorization"].encode(), value)
        )
        assert sock.recv(4096).split(b"\r\n", 1)[0] == b"HTTP/1.1 422 Unprocessable Entity"
    r = httpx.get(f"{served}/api/v1/sessions/{run}/stream", params={"last_event_id": value.decode("latin-1")}, headers=AUTH)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == "Last-Event-ID", r.text


def test_the_body_models_name_the_fields_the_document_gives(sqlite_store):
    """A field the handler reads and the document omits (or the other way round) would go unfuzzed."""
    from starlette.testclient import TestClient

    from replay_core.server import body_models as m

    with TestClient(create_app(sqlite_store, access=Access(api_tokens=(TOKEN,)))) as client:
        doc = client.get("/api/v1/openapi.json").json()["paths"]
    bodies = {
        ("/api/v1/datasets", m.DatasetBody),
        ("/api/v1/experiments", m.ExperimentBody),
        ("/api/v1/queues", m.QueueBody),
        ("/api/v1/queues/{queue_id}/next", m.ReviewerBody),
        ("/api/v1/queues/{queue_id}/items/{item_id}/{verb}", m.ReviewBody),
        ("/api/v1/shares", m.ShareBody),
    }
    for path, model in bodies:
        documented = doc[path]["post"]["requestBody"]["content"]["application/json"]["schema"]["properties"]
        assert set(documented) == {f.alias or name for name, f in model.model_fields.items()}, path

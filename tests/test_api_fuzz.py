"""Schemathesis against the served app's own OpenAPI document: every operation, with an editor
token, fixed seeds, on SQLite and PostgreSQL. Checks: no 5xx, every answer's status, content type
and body conform to the document (so every error is the JSON error shape, naming a field).

`make test` runs FUZZ_EXAMPLES (default 15) examples per operation and seed, seeds FUZZ_SEEDS
(default "0"); `make fuzz` runs more of both. Experiments are started but never launched: a
fuzzed `api_base` or model must not send a request anywhere (the machine's network is loopback only).
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter

import httpx
import pytest
import schemathesis
import uvicorn
from apptest_helpers import free_port
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance, status_code_conformance

from replay_core.demo import load_demo
from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.whatif import experiment

TOKEN = "fuzz-editor-token-0000"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "15"))
SEEDS = [int(s) for s in os.environ.get("FUZZ_SEEDS", "0").split(",")]
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture
def served(store, monkeypatch):
    """The app under uvicorn on a loopback port, in a thread of this process (so launching is held back)."""
    launched: list[str] = []
    monkeypatch.setattr(experiment, "launch", lambda store, experiment_id, **kw: launched.append(experiment_id))
    load_demo(store, only_if_empty=False)
    app = create_app(store, access=Access.load(env={"AGENT_REPLAY_API_TOKENS": f"editor:{TOKEN}"}, secrets={}))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}"
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join(10)


def test_every_operation_holds_to_the_document(served):
    doc = httpx.get(f"{served}/api/v1/openapi.json").json()
    schema = schemathesis.openapi.from_dict(doc)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == sum(len(methods) for methods in doc["paths"].values())
    # The live stream never ends while its run exists (a fuzzed id can name one the fuzz made): tests/test_stream.py has it.
    operations = [op for op in operations if not op.path.endswith("/stream")]
    examples = 0
    statuses: Counter[int] = Counter()

    def fuzzer(operation):
        def check(data):
            nonlocal examples
            case = data.draw(operation.as_strategy())
            examples += 1
            response = case.call_and_validate(base_url=served, headers=AUTH, checks=CHECKS, timeout=60)
            statuses[response.status_code] += 1

        return check

    for operation in operations:
        check = fuzzer(operation)
        for s in SEEDS:
            run = seed(s)(
                settings(
                    max_examples=EXAMPLES, deadline=None, database=None, print_blob=True, suppress_health_check=list(HealthCheck)
                )(given(st.data())(check))
            )
            run()
    print(f"fuzzed {len(operations)} operations, {examples} requests, seeds {SEEDS}, answers {dict(sorted(statuses.items()))}")
    assert examples >= len(operations)
    assert statuses[401] == 0 and statuses[403] == 0  # the editor token opened every route: the fuzz reached the handlers
    assert sum(n for code, n in statuses.items() if code < 300) > examples // 10


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

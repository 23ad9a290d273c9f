"""Steps posted to `POST /api/v1/sessions/{id}/steps` are validated and redacted straight into store
rows (ingest.step_rows, no StepEvent) where the contract's fast path vouches for them: the same
answers (counts, 422s naming the same fields, 409s) and the same tables as the StepEvent path,
on SQLite and PostgreSQL, whatever the steps (secrets, bad values, images, missing ids)."""

from __future__ import annotations

import itertools
import re

import orjson
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient
from test_otlp_step_rows import SECRETS, _tables

from replay_core.ingest import step_rows
from replay_core.server import validation
from replay_core.server.api import create_app
from replay_core.server.auth import Access

TOKEN = "step-rows-token"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
# a step the fast path takes (SDK-like values, secrets among them), then at most one field made bad or odd;
# always with a time of its own (else it is "now", which differs between the two writes)
required = {
    "timestamp": st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-01T02:00:01.5+02:00"]),
    "type": st.sampled_from(["think", "tool_call", "tool_result", "error"]),
    "event_id": st.sampled_from(["e1", "e2", "e3", SECRETS[0]]),
    "content": st.one_of(st.sampled_from(SECRETS), st.text(max_size=8)),  # every shape of secret, often
}
optional = {
    "seq": st.one_of(st.none(), st.integers(1, 4)),
    "tool_name": st.one_of(st.none(), st.just("search")),
    "tool_args": st.one_of(st.none(), st.just({"api_key": SECRETS[0]}), st.just([1, {"q": SECRETS[2]}])),
    "tokens_in": st.one_of(st.none(), st.integers(0, 3)),
    "metadata": st.one_of(st.none(), st.sampled_from(SECRETS).map(lambda secret: {"note": secret})),
}
ODD = [
    ("type", "bogus"),
    ("content", "a\x00b"),
    ("event_id", None),
    ("event_id", "x" * 201),
    ("seq", -1),
    ("seq", 2**63),
    ("tool_name", "t" * 201),
    ("tokens_in", "many"),
    ("timestamp", "yesterday"),
    ("metadata", {"attachments": [{"media_type": "image/png", "data": PNG}]}),
]
odd = st.none() | st.none() | st.sampled_from(ODD)  # two in three steps left good
steps = st.builds(
    lambda step, change: {**step, **dict([change] if change else [])}, st.fixed_dictionaries(required, optional=optional), odd
)
requests = st.lists(st.tuples(st.sampled_from("ab"), st.lists(steps, min_size=1, max_size=4)), min_size=1, max_size=4)
_RUN = itertools.count()
HASHED_ID = re.compile(r"h-[0-9a-f]{20}")  # a step sent without event_id: named by a hash of it, its run's id included


def _tables_of(store, prefix: str) -> dict[str, list]:
    return {name: sorted(HASHED_ID.sub("h-<hash>", row) for row in rows) for name, rows in _tables(store, prefix).items()}


def _post_all(client, batches, prefix: str) -> list:
    """Each request's status and body, the run's id written as <run>."""
    out = []
    for run, items in batches:
        res = client.post(f"/api/v1/sessions/{prefix}{run}/steps", content=orjson.dumps(items))
        out.append((res.status_code, res.text.replace(prefix, "<run>")))
    return out


@given(requests)
@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_posting_steps_as_rows_stores_what_step_events_stored(store, monkeypatch, batches):
    run = next(_RUN)
    new, old = f"http{run:06x}n-", f"http{run:06x}o-"
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    with TestClient(create_app(store, access=Access(api_tokens=(TOKEN,))), headers=headers) as client:
        got = _post_all(client, batches, new)
        with monkeypatch.context() as patched:
            patched.setattr(validation, "step_row_of", lambda fields, redactor: None)  # every step a StepEvent
            expected = _post_all(client, batches, old)
    assert got == expected
    tables = _tables_of(store, new)
    assert tables == _tables_of(store, old)
    assert any(tables.values()) or all(status != 200 for status, _ in expected)


def test_a_clean_batch_goes_as_rows(sqlite_store, monkeypatch):
    """The SDK's shape (ids, seqs, plain values) takes the row path for every step, and no StepEvent is made."""
    made = []
    monkeypatch.setattr(
        validation, "step_row_of", lambda fields, redactor: made.append(1) or step_rows.step_row_of(fields, redactor)
    )
    monkeypatch.setattr(validation, "fast_step", lambda body: (_ for _ in ()).throw(AssertionError("a StepEvent was made")))
    items = [{"event_id": f"e{i}", "seq": i, "type": "think", "content": f"thought {i} {SECRETS[0]}"} for i in range(1, 51)]
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(create_app(sqlite_store, access=Access(api_tokens=(TOKEN,))), headers=headers) as client:
        res = client.post("/api/v1/sessions/rows-run/steps", json=items)
    assert res.status_code == 200, res.text
    assert res.json()["steps"] == 50 and res.json()["redacted"] == 50
    assert len(made) == 50
    stored = sqlite_store.load_steps("rows-run")
    assert [s.seq for s in stored] == list(range(1, 51))
    assert not any(SECRETS[0] in (s.content or "") for s in stored)

"""A run's user or thread id wider than its column (200), on SQLite and PostgreSQL. Sent over the API or
the SDK it is refused naming the field (the contract's width: the sender can fix it). Read from a trace
(a Langfuse export, OTLP spans at the receiver) the run is kept and the id cut apart: its start, `…`, a
hash of the whole, so two users whose ids start alike stay two users in filters and analytics; the whole
id is in the run's metadata (`ids_cut`), the import says so, and a filter on the whole id finds the run."""

from __future__ import annotations

import json
import re

import pytest
from conftest import FIXTURES
from starlette.testclient import TestClient
from test_run_users import _otlp, _span

from replay_core.ingest.pipeline import import_bytes
from replay_core.sdk.recorder import Recorder
from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.storage.store import SessionFilter

TOKEN = "tok-ids-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SHARED = "tenant-eu-west/" + "x" * 230  # two users alike in their first 245 characters
CUT = re.compile(r"^tenant-eu-west/x{171}…#[0-9a-f]{12}$")


def _langfuse_trace(trace_id: str, user: str, session: str) -> bytes:
    doc = json.loads((FIXTURES / "langfuse" / "api_trace_failed.json").read_text())
    return json.dumps(doc | {"id": trace_id, "userId": user, "sessionId": session}).encode()


def _runs(store) -> dict[str, dict]:
    return {r["id"]: r for r in store.list_sessions(SessionFilter(include_replays=True, experiments=True))}


def test_a_langfuse_export_keeps_its_runs_with_long_ids_cut_apart_and_says_so(store):
    reports = [
        import_bytes(store, _langfuse_trace(f"trace-{user}", SHARED + user, SHARED + "thread"), f"{user}.json")
        for user in ("ana", "bo")
    ]
    runs = _runs(store)
    users = {runs[f"langfuse-trace-{u}"]["user_id"] for u in ("ana", "bo")}
    assert len(users) == 2 and all(CUT.match(u) for u in users)  # two users, not one merged by the cut
    threads = {r["thread_id"] for r in runs.values()}
    assert len(threads) == 1 and CUT.match(threads.pop())  # one thread: the same id is cut the same way
    whole = store.get_session("langfuse-trace-ana")["metadata"]["ids_cut"]
    assert whole == {"user_id": SHARED + "ana", "thread_id": SHARED + "thread"}
    assert [w for r in reports for w in r.warnings] == [
        f"run langfuse-trace-{u}: thread_id, user_id longer than 200 characters, kept cut (…#hash of the whole id), "
        "whole in the run's metadata (ids_cut)"
        for u in ("ana", "bo")
    ]
    assert store.session_ids(SessionFilter(user_id=SHARED + "bo")) == ["langfuse-trace-bo"]
    assert sorted(store.session_ids(SessionFilter(thread_id=SHARED + "thread"))) == ["langfuse-trace-ana", "langfuse-trace-bo"]
    again = import_bytes(store, _langfuse_trace("trace-ana", SHARED + "ana", SHARED + "thread"), "ana.json")
    assert again.steps == 0 and set(_runs(store)) == {"langfuse-trace-ana", "langfuse-trace-bo"}


def test_the_api_and_the_sdk_refuse_a_long_id_and_the_otlp_receiver_keeps_the_run(store, tmp_path):
    rec = Recorder(store.url, spool_dir=str(tmp_path / "spool"), flush_interval=0.05)
    try:
        with pytest.raises(ValueError, match=r"^session: thread_id: "):
            rec.session("turn", thread_id="t" * 201)
    finally:
        rec.close()
    with TestClient(create_app(store, access=Access(api_tokens=(TOKEN,)))) as client:
        for field in ("user_id", "thread_id"):
            refused = client.post("/api/v1/sessions", json={"session_id": "n1", field: "u" * 201}, headers=AUTH)
            assert refused.status_code == 422 and [e["loc"] for e in refused.json()["errors"]] == [field]
        traces = {"5b8efff798038103d269b633813fc60c": "a", "6c9f00a8a9149214e37ac744924fd71d": "b"}
        for trace, who in traces.items():
            span = _span("a1a1a1a1a1a1a1a1", {"user.id": SHARED + who, "session.id": SHARED + "conv-" + who}) | {"traceId": trace}
            answer = client.post("/v1/traces", content=_otlp(span), headers=AUTH | {"content-type": "application/json"})
            assert answer.status_code == 200
            assert "thread_id, user_id longer than 200 characters" in answer.json()["partialSuccess"]["errorMessage"]
    runs = _runs(store)
    assert len(runs) == 2 and all(CUT.match(sid) for sid in runs)  # the conversation (session.id) is the run: two runs
    assert all(CUT.match(r["user_id"]) and r["thread_id"] == sid for sid, r in runs.items())
    assert len({r["user_id"] for r in runs.values()}) == 2
    whole = sorted(list(store.get_session(sid)["metadata"]["ids_cut"].values()) for sid in runs)
    assert whole == [[SHARED + "a", SHARED + "conv-a"], [SHARED + "b", SHARED + "conv-b"]]

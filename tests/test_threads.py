"""Users and threads as they are read back, on SQLite and PostgreSQL: a thread's runs in order with totals that add
up to the runs list's, the latest threads, analytics' cost and failures per user or thread equal to a recomputation
from the runs list, `agent-replay thread`, `stats --by user` and `GET /api/v1/threads[/{id}]`."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete
from starlette.testclient import TestClient
from typer.testing import CliRunner

from replay_core.cli import app
from replay_core.events import SessionEndEvent, SessionEvent, StepEvent
from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.storage.store import SessionFilter, Store
from replay_core.storage.tables import metadata
from replay_core.understand import analytics
from replay_core.understand.thread import open_thread, recent_threads

T0 = datetime(2026, 9, 1, tzinfo=UTC)
TOKEN = "thread-token-0000"


def assert_accounts_recomputed(store: Store, by: str, column: str) -> None:
    """analytics.accounts per user or thread equals the runs list summed by hand (the runs list's totals are
    the one definition of a run's tokens and cost)."""
    rows = store.list_sessions(SessionFilter(), limit=10_000)
    want: dict = defaultdict(lambda: {"runs": 0, "failed": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0})
    for r in rows:
        w = want[r[column]]
        w["runs"] += 1
        w["failed"] += r["status"] == "failed"
        w["tokens_in"] += r["tokens_in"]
        w["tokens_out"] += r["tokens_out"]
        w["cost_usd"] += r["cost_usd"] or 0.0
    got = {g[by]: g for g in analytics.accounts(analytics.load(store), by).to_dicts()}
    assert set(got) == set(want), (by, got, want)
    for key, w in want.items():
        g = got[key]
        counts = ("runs", "failed", "tokens_in", "tokens_out")
        assert [g[k] for k in counts] == [w[k] for k in counts], (key, g, w)
        assert math.isclose(g["cost_usd"], w["cost_usd"], rel_tol=1e-9, abs_tol=1e-9), (key, g, w)


def _turns(store: Store) -> None:
    """Three turns of one support conversation (two users: a hand-over), one of another, one with no thread."""
    events = []
    for i, (sid, user, thread, status, cost) in enumerate(
        (
            ("turn-2", "ana", "support-1", "failed", 0.25),
            ("turn-1", "ana", "support-1", "succeeded", 0.5),
            ("turn-3", "bo", "support-1", "succeeded", None),
            ("other", "cy", "sales-9", "succeeded", 1.0),
            ("alone", None, None, "failed", 2.0),
        )
    ):
        start = T0 + timedelta(minutes={"turn-1": 0, "turn-2": 5, "turn-3": 9}.get(sid, 20 + i))
        events += [
            SessionEvent(session_id=sid, name=f"run {sid}", user_id=user, thread_id=thread, started_at=start),
            StepEvent(session_id=sid, type="think", content="…", tokens_in=100, tokens_out=10, cost_usd=cost, model="m"),
            SessionEndEvent(session_id=sid, status=status, ended_at=start + timedelta(minutes=2)),
        ]
    store.write(events)


def test_a_thread_lists_its_runs_oldest_first_with_totals(store):
    _turns(store)
    thread = open_thread(store, "support-1")
    assert [r["id"] for r in thread.runs] == ["turn-1", "turn-2", "turn-3"]
    assert thread.users == ["ana", "bo"] and not thread.more
    t = thread.totals()
    assert (t["runs"], t["succeeded"], t["failed"], t["steps"]) == (3, 2, 1, 3)
    assert (t["tokens_in"], t["tokens_out"], t["runs_cost_unknown"]) == (300, 30, 1)
    assert t["cost_usd"] == pytest.approx(0.75)
    assert t["span_s"] == 11 * 60  # first start to last end
    listed = store.list_sessions(SessionFilter(thread_id="support-1"))
    assert sum(r["tokens_in"] for r in listed) == t["tokens_in"]
    assert open_thread(store, "nobody") is None


def test_only_the_latest_runs_of_a_long_thread(store):
    _turns(store)
    thread = open_thread(store, "support-1", limit=2)
    assert [r["id"] for r in thread.runs] == ["turn-2", "turn-3"] and thread.more


def test_the_latest_threads_with_their_totals(store):
    _turns(store)
    rows = recent_threads(store)
    assert [r["thread_id"] for r in rows] == ["sales-9", "support-1"]
    support = rows[1]
    assert (support["runs"], support["failed"], support["users"], support["tokens_in"]) == (3, 1, 2, 300)
    assert support["cost_usd"] == pytest.approx(0.75)
    assert rows[0]["user_id"] == "cy" and rows[0]["users"] == 1
    assert [r["thread_id"] for r in recent_threads(store, SessionFilter(user_id="cy"))] == ["sales-9"]


def test_accounts_by_user_and_by_thread(store):
    _turns(store)
    for by, column in (("user", "user_id"), ("thread", "thread_id")):
        assert_accounts_recomputed(store, by, column)
    by_user = analytics.accounts(analytics.load(store), "user")
    assert by_user["user"].to_list()[0] is None  # the costliest first: the run without a user cost $2
    assert analytics.drill_filter(SessionFilter(), "user", "ana") == SessionFilter(user_id="ana")


runs = st.lists(
    st.tuples(
        st.none() | st.sampled_from(("u1", "u2", "u3")),
        st.none() | st.sampled_from(("t1", "t2")),
        st.sampled_from(("succeeded", "failed", "running")),
        st.none() | st.floats(0, 5, allow_nan=False),
        st.integers(0, 1000),
        st.none() | st.sampled_from(({"cost_usd": 0.3}, {"tokens_in": 7})),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(runs=runs)
def test_accounts_equal_a_recomputation_for_any_runs(store, runs):
    with store.engine.begin() as conn:
        for table in reversed(metadata.sorted_tables):
            conn.execute(delete(table))
    events = []
    for i, (user, thread, status, cost, tokens, meta) in enumerate(runs):
        sid = f"r{i}"
        events.append(SessionEvent(session_id=sid, user_id=user, thread_id=thread, started_at=T0, metadata=meta))
        if cost is not None or i % 2:
            events.append(StepEvent(session_id=sid, type="think", tokens_in=tokens, cost_usd=cost))
        if status != "running":
            events.append(SessionEndEvent(session_id=sid, status=status))
    store.write(events)
    for by, column in (("user", "user_id"), ("thread", "thread_id")):
        assert_accounts_recomputed(store, by, column)
    for row in recent_threads(store):
        thread = open_thread(store, row["thread_id"])
        assert (row["runs"], row["tokens_in"]) == (thread.totals()["runs"], thread.totals()["tokens_in"])


def test_the_thread_command(sqlite_store):
    _turns(sqlite_store)
    runner = CliRunner()
    res = runner.invoke(app, ["thread", "support-1", "--db", sqlite_store.url, "--json"])
    assert res.exit_code == 0, res.output
    body = json.loads(res.output)
    assert [r["id"] for r in body["runs"]] == ["turn-1", "turn-2", "turn-3"] and body["totals"]["failed"] == 1
    res = runner.invoke(app, ["thread", "support-1", "--db", sqlite_store.url])
    assert res.exit_code == 0 and "3 runs: 2 succeeded, 1 failed" in res.output
    res = runner.invoke(app, ["thread", "nobody", "--db", sqlite_store.url])
    assert res.exit_code != 0 and "no run has thread_id" in f"{res.output}{res.exception}"
    res = runner.invoke(app, ["sessions", "--user", "ana", "--db", sqlite_store.url, "--json"])
    assert sorted(r["id"] for r in json.loads(res.output)) == ["turn-1", "turn-2"]
    res = runner.invoke(app, ["stats", "--by", "user", "--db", sqlite_store.url, "--json"])
    assert {r["user"]: r["runs"] for r in json.loads(res.output)} == {"ana": 2, "bo": 1, "cy": 1, None: 1}


def test_the_thread_routes(store):
    _turns(store)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(create_app(store, access=Access(api_tokens=(TOKEN,)))) as client:
        body = client.get("/api/v1/threads/support-1", headers=headers).json()
        assert [r["id"] for r in body["runs"]] == ["turn-1", "turn-2", "turn-3"] and body["users"] == ["ana", "bo"]
        assert client.get("/api/v1/threads/nobody", headers=headers).status_code == 404
        listed = client.get("/api/v1/threads", params={"user_id": "cy"}, headers=headers).json()
        assert [t["thread_id"] for t in listed["threads"]] == ["sales-9"]
        assert client.get("/api/v1/threads", params={"status": "nope"}, headers=headers).status_code == 422
        assert client.get("/api/v1/threads/support-1").status_code == 401

"""Two served app processes (`streamlit run streamlit_app.py`) on one PostgreSQL database, as
deploy/ runs them behind a proxy: what one replica stores the other reads and streams, and the
hourly retention sweep runs once between them."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from apptest_helpers import served_app
from conftest import _empty
from test_stream import Listener

from replay_core.events import SessionEvent, StepEvent
from replay_core.storage.actor import DELETE
from replay_core.storage.store import RETENTION, Store

pytestmark = pytest.mark.postgres
TOKEN = "replica-token-3"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def replicas(pg_database):
    """Both replicas on the worker's test database, emptied first (a database of their own cost a
    CREATE, a migration and a DROP for each run of the module)."""
    store = Store(pg_database, migrate=False)
    _empty(store)
    old = datetime.now(UTC) - timedelta(days=30)
    for sid in ("old-1", "old-2"):
        store.write([SessionEvent(session_id=sid, started_at=old), StepEvent(session_id=sid, type="think", content="old")])
    # A stopped Listener hangs up at the next heartbeat; a replica stops only once its streams are closed.
    env = {"AGENT_REPLAY_API_TOKENS": TOKEN, "AGENT_REPLAY_RETENTION_DAYS": "7", "AGENT_REPLAY_STREAM_HEARTBEAT_S": "0.5"}
    try:
        with served_app(pg_database, **env) as a, served_app(pg_database, **env) as b:
            yield a, b, store
    finally:
        store.close()


def test_a_write_on_one_replica_is_read_and_searched_on_the_other(replicas):
    a, b, _ = replicas
    with httpx.Client(headers=AUTH, timeout=30) as http:
        assert (
            http.post(
                f"{a}/api/v1/sessions/shared-1/steps", json=[{"type": "think", "content": "written on replica A"}]
            ).status_code
            == 200
        )
        body = http.get(f"{b}/api/v1/sessions/shared-1").json()
        assert [s["content"] for s in body["steps"]] == ["written on replica A"]
        listed = http.get(f"{b}/api/v1/sessions", params={"q": "replica"}).json()
        assert [s["id"] for s in listed["sessions"]] == ["shared-1"]


def test_the_stream_on_one_replica_sees_writes_on_the_other(replicas):
    a, b, _ = replicas
    with httpx.Client(headers=AUTH, timeout=30) as http:
        http.post(f"{a}/api/v1/sessions/shared-2/steps", json=[{"type": "input", "content": "start"}]).raise_for_status()
        listener = Listener(b, "shared-2", AUTH)  # this module's token
        listener.start()
        listener.wait_for(1)
        for i in range(1, 6):
            http.post(
                f"{a}/api/v1/sessions/shared-2/steps", json=[{"type": "think", "content": f"from A {i}"}]
            ).raise_for_status()
        listener.wait_for(6)
        listener.stop.set()
    assert [i for i, _ in listener.events] == [1, 2, 3, 4, 5, 6]
    assert [d["content"] for _, d in listener.events[1:]] == [f"from A {i}" for i in range(1, 6)]


def test_the_retention_sweep_ran_once_between_the_replicas(replicas):
    _, _, store = replicas
    deadline = time.monotonic() + 30
    while store.get_session("old-1") is not None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert store.get_session("old-1") is None and store.get_session("old-2") is None
    time.sleep(1)  # both replicas' first pass is over by now (it runs as each starts)
    sweeps = [e for e in store.audit_entries(actions=[DELETE]) if e["who"] == RETENTION.who]
    assert len(sweeps) == 1, sweeps
    assert sweeps[0]["detail"] == {"sessions": 2}


def test_new_runs_of_one_day_posted_to_both_replicas_at_once_all_land_and_the_cells_stay_exact(replicas):
    """Eight agents, four on each replica, start runs of the same day at once: each write recomputes the
    same daily cell, in two processes (and, on each, in its two write lanes). Every request is answered
    200, every run is stored, and the cells equal a rebuild (the cells' recompute waits for the other
    writer's commit: daily.REFRESH_LOCK)."""
    from concurrent.futures import ThreadPoolExecutor

    from test_rollups_daily import _daily_tables

    a, b, store = replicas
    agents, runs = 8, 6

    def agent(n: int) -> list[int]:
        base = (a, b)[n % 2]
        with httpx.Client(base_url=base, headers=AUTH, timeout=60) as http:
            return [
                http.post(
                    f"/api/v1/sessions/day-{n}-{r}/steps",
                    json=[{"type": "think", "content": f"agent {n} run {r} step {s}"} for s in range(20)],
                ).status_code
                for r in range(runs)
            ]

    with ThreadPoolExecutor(agents) as pool:
        statuses = [s for one in pool.map(agent, range(agents)) for s in one]
    assert statuses == [200] * agents * runs
    assert len([sid for sid in store.session_ids() if sid.startswith("day-")]) == agents * runs
    kept = _daily_tables(store)
    store.rebuild_rollups()
    assert kept == _daily_tables(store)

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from replay_core.events import SessionEvent, StepEvent
from replay_core.ingest.pipeline import ingest
from replay_core.storage.retention import apply_policy, run_periodically


def _runs(store):
    old = datetime.now(UTC) - timedelta(days=10)
    for sid, start in (("old", old), ("old-noted", old), ("fresh", datetime.now(UTC))):
        ingest(store, [SessionEvent(session_id=sid, started_at=start), StepEvent(session_id=sid, type="think", content="x")])
    store.annotate("old-noted", "needs_attention", "keep for the postmortem")


def test_no_policy_keeps_everything(store, monkeypatch):
    monkeypatch.delenv("AGENT_REPLAY_RETENTION_DAYS", raising=False)
    _runs(store)
    assert apply_policy(store) == 0 and store.count_sessions() == 3


def test_policy_deletes_old_runs_and_can_keep_annotated(store, monkeypatch):
    _runs(store)
    monkeypatch.setenv("AGENT_REPLAY_RETENTION_DAYS", "7")
    monkeypatch.setenv("AGENT_REPLAY_RETENTION_KEEP_ANNOTATED", "1")
    assert apply_policy(store) == 1
    assert sorted(store.session_ids()) == ["fresh", "old-noted"]
    monkeypatch.setenv("AGENT_REPLAY_RETENTION_KEEP_ANNOTATED", "0")
    assert apply_policy(store) == 1
    assert store.session_ids() == ["fresh"]


def test_schedule_runs_passes_and_survives_a_failure(sqlite_store, monkeypatch):
    _runs(sqlite_store)
    monkeypatch.setenv("AGENT_REPLAY_RETENTION_DAYS", "7")
    calls = []

    def factory():
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("database briefly away")
        return sqlite_store

    async def main():
        task = asyncio.create_task(run_periodically(factory, every_s=0.01))
        for _ in range(500):
            await asyncio.sleep(0.01)
            if sqlite_store.count_sessions() == 1:
                break
        task.cancel()

    asyncio.run(main())
    assert len(calls) >= 2 and sqlite_store.session_ids() == ["fresh"]


def test_replicas_on_one_database_sweep_once_per_period(store, monkeypatch):
    from replay_core.storage.retention import sweep_once
    from replay_core.storage.store import Store

    _runs(store)
    monkeypatch.setenv("AGENT_REPLAY_RETENTION_DAYS", "7")
    other = Store(store.url, migrate=False)  # a second replica: its own engine and pool
    try:
        assert sweep_once(store) == 2
        assert sweep_once(other) is None and sweep_once(store) is None  # claimed for this hour
        now = datetime.now(UTC)
        assert other.claim_job("retention", timedelta(hours=1), now=now + timedelta(minutes=59)) is True  # within the 10% slack
        assert store.claim_job("retention", timedelta(hours=1), now=now + timedelta(minutes=59)) is False
    finally:
        other.close()


@pytest.mark.postgres
def test_a_sweep_in_progress_elsewhere_holds_the_advisory_lock(pg_store, monkeypatch):
    from replay_core.storage.retention import SWEEP_LOCK, sweep_once
    from replay_core.storage.store import Store

    _runs(pg_store)
    monkeypatch.setenv("AGENT_REPLAY_RETENTION_DAYS", "7")
    other = Store(pg_store.url, migrate=False)
    try:
        with other.advisory_lock(SWEEP_LOCK) as held:
            assert held
            assert sweep_once(pg_store) is None  # never two sweeps at once
            assert pg_store.count_sessions() == 3
        assert sweep_once(pg_store) == 2
    finally:
        other.close()

"""Monitors judged after a burst of ingests: once, a quiet interval after the burst's last write, never
inside a write (the HTTP answer comes first), and with the periodic pass in the same server loop."""

from __future__ import annotations

import asyncio
import os

from starlette.testclient import TestClient

from replay_core.monitors import check as monitors
from replay_core.monitors import debounce
from replay_core.monitors.debounce import Debounce
from replay_core.server.api import create_app
from replay_core.server.auth import Access

TOKEN = "t0ken-for-debounce"
RULE = {"metric": "failure_rate", "threshold": 0.5, "min_runs": 1}


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_a_burst_is_judged_once_after_it_quiets_down():
    clock = Clock()
    d = Debounce(30.0, clock)
    assert not d.due()  # nothing written
    for _ in range(50):  # a burst over 25 s
        d.poke()
        clock.t += 0.5
    assert not d.due()
    clock.t += 29.0
    assert not d.due()  # still within the quiet interval of the last write
    clock.t += 1.0
    assert d.due() and not d.due()  # once


def test_ingest_over_http_pokes_after_answering_and_judges_nothing_itself(sqlite_store, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(debounce, "INGESTED", Debounce(30.0, clock))
    made = monitors.add(sqlite_store, "failures", RULE)
    with TestClient(create_app(sqlite_store, access=Access(api_tokens=(TOKEN,)))) as client:
        for i in range(5):
            sent = {"session_id": f"s{i}", "name": "run"}
            assert client.post("/api/v1/sessions", json=sent, headers={"Authorization": f"Bearer {TOKEN}"}).is_success
        refused = client.post("/api/v1/sessions", json={"nope": 1}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert refused.status_code == 422
    assert sqlite_store.get_monitor(made["id"])["last_checked_at"] is None  # no write judged anything
    assert debounce.INGESTED.last == clock.t and not debounce.INGESTED.due()
    clock.t += 30
    assert debounce.INGESTED.due()


def test_the_server_loop_judges_a_burst_once(sqlite_store, monkeypatch):
    made = monitors.add(sqlite_store, "failures", RULE)
    judged: list[int] = []
    real = sqlite_store.record_checks

    def spy(checks):
        judged.extend(c.monitor_id for c in checks)
        return real(checks)

    monkeypatch.setattr(sqlite_store, "record_checks", spy)
    monkeypatch.setattr(monitors, "shared_url", lambda store: None)  # passes in this process, where the spy sees them
    d = Debounce(0.3)
    for _ in range(20):
        d.poke()

    async def serve_a_while() -> None:
        try:
            await asyncio.wait_for(monitors.run_periodically(lambda: sqlite_store, every_s=3600, debounce=d), timeout=2.5)
        except TimeoutError:
            pass

    asyncio.run(serve_a_while())
    mine = [m for m in judged if m == made["id"]]
    assert len(mine) == 2  # the periodic pass at start, then once after the burst


def test_the_servers_passes_judge_in_a_worker_behind_ingest(sqlite_store, monkeypatch):
    """A pass judges in a worker process of its own, nicer than the server: on busy cores it takes what
    ingest leaves, and a pass holding its GIL cannot hold up the server's requests."""
    made = monitors.add(sqlite_store, "failures", RULE)
    here: list = []
    monkeypatch.setattr(sqlite_store, "record_checks", here.append)
    try:
        assert "failures" in monitors.judge_behind_ingest(sqlite_store, 3600)
        worker = monitors.PASSES.current.process.pid
        ours = os.getpriority(os.PRIO_PROCESS, 0)
        assert worker != os.getpid() and os.getpriority(os.PRIO_PROCESS, worker) == min(19, ours + monitors.BEHIND)
    finally:
        monitors.PASSES.stop()
    assert here == []  # nothing judged in this process
    assert sqlite_store.get_monitor(made["id"])["last_checked_at"] is not None


def test_judging_many_rules_from_one_read_finds_what_judging_each_finds(store):
    from monitor_workload import NOW, runs

    from replay_core.monitors.judge import judge, judge_all
    from replay_core.monitors.rules import parse_rule

    runs(store, 80, day=2, fail=0.10, version="1.5.0", seed=1)
    runs(store, 80, day=1, fail=0.45, version="1.6.0", seed=2)
    runs(store, 60, day=1, fail=0.10, workflow="search", version="1.6.0", seed=3)
    rules = [
        parse_rule(r)
        for r in (
            {"metric": "failure_rate", "change": True, "min_runs": 20, "filters": {"workflow": "checkout"}},
            {"metric": "success_rate", "threshold": 0.8, "window_hours": 48},
            {"metric": "tool_failure_rate", "change": True, "filters": {"agent_version": "1.6.0"}},
            {"metric": "p95_duration_s", "change": True, "min_runs": 5},
            {"metric": "cost_per_run", "threshold": 1.0, "filters": {"workflow": "search"}},
            {"metric": "tokens_per_run", "change": True},
            {"metric": "incomplete_runs", "threshold": 3, "window_hours": 72},
            {"metric": "error_class_runs", "threshold": 10, "error_class": "PaymentDeclined"},  # read on its own
            {"metric": "failure_rate", "threshold": 0.2, "filters": {"tag": "none"}},  # read on its own
        )
    ]
    assert [j.to_dict() for j in judge_all(store, rules, NOW)] == [judge(store, r, NOW).to_dict() for r in rules]
    assert judge_all(store, [], NOW) == []


def test_the_schedules_pass_runs_the_loop_only_for_a_schedule_or_a_feed(sqlite_store, monkeypatch):
    """The server's schedules pass imports the loop (whatif's datasets, experiments, scorers: a seventh of the
    server's start) and runs it only once a schedule or a queue's feed exists; then every pass does."""
    from replay_core.events import SessionEvent
    from replay_core.monitors import loop
    from replay_core.storage.actor import EDITOR, Actor
    from replay_core.team import queues

    passes: list[float] = []
    monkeypatch.setattr(loop, "run_due", lambda store, every_s: passes.append(every_s))
    editor = Actor("ana", EDITOR)
    monitors.schedules_pass(sqlite_store, 300)
    assert passes == []
    sqlite_store.write([SessionEvent(session_id="r1")])
    made = queues.create(sqlite_store, "review", ids=["r1"])
    sqlite_store.set_queue_feed(made["id"], "regressions", ["Bad"], actor=editor)
    monitors.schedules_pass(sqlite_store, 300)
    assert passes == [300]
    sqlite_store.set_queue_feed(made["id"], None, [], actor=editor)
    sqlite_store.create_schedule("nightly", "regressions", "daily", {"variants": []}, [], actor=editor)
    monitors.schedules_pass(sqlite_store, 300)
    assert passes == [300, 300]

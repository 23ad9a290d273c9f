"""Concurrent HTTP writes joined into one transaction (storage/worker.py `JoinedWrites`): whatever the
batches (runs shared between them, duplicate event ids, steps with and without seq, ends that
conflict with a run already ended), writing them joined gives each request the counts or the
refusal it would have had alone, and stores what writing them one after another stores."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from replay_core.events import parse_event
from replay_core.server.routes.ingest import SOURCE
from replay_core.storage.store import WriteBatch, WriteRefused
from replay_core.storage.tables import run_rollups, sessions, steps
from replay_core.storage.worker import JoinedWrites, OffloadedWrites

step = st.fixed_dictionaries(
    {
        "kind": st.just("step"),
        "run": st.sampled_from("ab"),
        "event_id": st.sampled_from(["e0", "e1", "e2", "e3"]),
        "seq": st.none() | st.integers(1, 6),
        "type": st.sampled_from(["think", "tool_call", "error"]),
    }
)
end = st.fixed_dictionaries(
    {"kind": st.just("session_end"), "run": st.sampled_from("ab"), "status": st.sampled_from(["succeeded", "failed"])}
)
batches = st.lists(st.lists(step | end, min_size=1, max_size=5), min_size=2, max_size=5)


def events(batch: list[dict], prefix: str) -> list:
    out = []
    for item in batch:
        obj = {k: v for k, v in item.items() if k != "run" and v is not None}
        out.append(parse_event({**obj, "session_id": prefix + item["run"]}))
    return out


def outcome(call):
    try:
        result = call()
    except WriteRefused as exc:
        return ("refused", exc.status)
    return (result.steps, result.duplicates)


def stored(store, prefix: str) -> list[tuple]:
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(steps.c.session_id, steps.c.seq, steps.c.event_id, steps.c.type)
            .where(steps.c.session_id.like(prefix + "%"))
            .order_by(steps.c.session_id, steps.c.seq, steps.c.event_id)
        )
        runs = conn.execute(
            select(sessions.c.id, sessions.c.status, run_rollups.c.steps, run_rollups.c.max_seq, run_rollups.c.errored_steps)
            .outerjoin(run_rollups, run_rollups.c.session_id == sessions.c.id)
            .where(sessions.c.id.like(prefix + "%"))
            .order_by(sessions.c.id)
        )
        return [(r[0][len(prefix) :], *r[1:]) for r in [*rows, *runs]]


class Spy:
    """The store, counting the batches of each `write_batches` call."""

    def __init__(self, store):
        self.store, self.calls = store, []

    def __call__(self):
        return [self]

    def write_batches(self, batches, **kwargs):
        batches = list(batches)
        self.calls.append(len(batches))
        return self.store.write_batches(batches, **kwargs)


@contextmanager
def _lanes_busy(writes: JoinedWrites):
    """Every lane taken (as by writes in progress) while inside; then freed, and the waiting writers told."""
    with writes._state:
        writes._writing.update(range(len(writes._lanes())))
    try:
        yield
    finally:
        with writes._state:
            writes._writing.clear()
            writes._state.notify_all()


def joined(store, spy: Spy, given_batches: list[list], prefix: str) -> list:
    """Each batch from its own thread, queued in order while a write holds the lock, then written."""
    writes = JoinedWrites(spy, default_source=SOURCE, refuse_conflicts=True)
    results: list = [None] * len(given_batches)

    def send(i: int, batch: WriteBatch) -> None:
        results[i] = outcome(lambda: writes.write(batch))

    threads = []
    with _lanes_busy(writes):  # a write in progress: the batches queue behind it
        for i, items in enumerate(given_batches):
            batch = WriteBatch()
            for ev in events(items, prefix):
                batch.add(ev)
            threads.append(threading.Thread(target=send, args=(i, batch)))
            threads[-1].start()
            deadline = time.monotonic() + 60
            while len(writes._queued) <= i and time.monotonic() < deadline:
                time.sleep(0.001)
            assert len(writes._queued) == i + 1
    for t in threads:
        t.join(30)
    return results


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=batches)
def test_joined_writes_answer_and_store_as_one_by_one(store, batches):
    tag = f"{time.monotonic_ns()}-"
    alone = [
        outcome(lambda b=b: store.write(events(b, "s" + tag), default_source=SOURCE, refuse_conflicts=True)) for b in batches
    ]
    spy = Spy(store)
    assert joined(store, spy, batches, "j" + tag) == alone
    assert spy.calls[0] == len(batches)  # all of them in one transaction first
    refused = sum(1 for r in alone if r[0] == "refused")
    assert spy.calls[1:] == ([1] * len(batches) if refused else [])  # a refusal: each again alone
    assert stored(store, "j" + tag) == stored(store, "s" + tag)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=batches)
def test_joined_writes_in_the_write_worker_answer_and_store_as_one_by_one(store, batches):
    """The same through the worker process the served routes write in (storage.worker.OffloadedWrites):
    counts, refusals and a refused group's retries one by one come back from the other process as they are."""
    tag = f"{time.monotonic_ns()}-"
    alone = [
        outcome(lambda b=b: store.write(events(b, "s" + tag), default_source=SOURCE, refuse_conflicts=True)) for b in batches
    ]
    spy = Spy(OffloadedWrites(store))
    assert joined(store, spy, batches, "w" + tag) == alone
    assert spy.calls[0] == len(batches)
    assert stored(store, "w" + tag) == stored(store, "s" + tag)


class Gate:
    """A lane's store whose writes wait until opened, so a test can hold one lane mid-write."""

    def __init__(self, store):
        self.store, self.entered, self.open = store, threading.Event(), threading.Event()

    def write_batches(self, batches, **kwargs):
        batches = list(batches)
        self.entered.set()
        assert self.open.wait(30)
        return self.store.write_batches(batches, **kwargs)


def test_two_lanes_write_other_runs_at_once_and_a_runs_batches_in_their_order(store):
    """PostgreSQL's lanes: while lane 0 writes run a, a batch of b is written in lane 1 at once; the
    next batch of a, a batch of a and c behind it and a batch of c behind that wait for a's write (not
    lane 1), so each run's
    steps without seq are numbered in the order their batches came."""
    tag = f"{time.monotonic_ns()}-"
    gate = Gate(store)
    writes = JoinedWrites(lambda: [gate, store], default_source=SOURCE, refuse_conflicts=True)

    def batch(runs: str, n: int) -> WriteBatch:
        out = WriteBatch()
        for run in runs:
            out.add(parse_event({"kind": "step", "session_id": tag + run, "type": "think", "event_id": f"{run}{n}"}))
        return out

    results: dict[str, object] = {}

    def send(name: str, runs: str, n: int) -> threading.Thread:
        thread = threading.Thread(target=lambda: results.__setitem__(name, writes.write(batch(runs, n))))
        thread.start()
        return thread

    first = send("a1", "a", 1)
    assert gate.entered.wait(60)  # lane 0 holds run a
    waiting = [send("a2", "a", 2), send("ac3", "ac", 3), send("c4", "c", 4)]
    deadline = time.monotonic() + 60
    while len(writes._queued) < 3 and time.monotonic() < deadline:
        time.sleep(0.001)
    other = send("b1", "b", 1)
    other.join(60)
    assert results.get("b1") is not None and results["b1"].steps == 1  # lane 1, while lane 0 still writes
    assert set(results) == {"b1"} and len(writes._queued) == 3  # a's later batches wait for a, and c's behind them
    gate.open.set()
    for thread in (first, *waiting):
        thread.join(30)
    assert [results[k].steps for k in ("a1", "a2", "ac3", "c4")] == [1, 1, 2, 1]
    assert [(s.event_id, s.seq) for s in store.load_steps(tag + "a")] == [("a1", 1), ("a2", 2), ("a3", 3)]
    assert [(s.event_id, s.seq) for s in store.load_steps(tag + "c")] == [("c3", 1), ("c4", 2)]

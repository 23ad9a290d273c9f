"""Concurrent HTTP writes joined into one transaction (server/api.py `JoinedWrites`): whatever the
batches (runs shared between them, duplicate event ids, steps with and without seq, ends that
conflict with a run already ended), writing them joined gives each request the counts or the
refusal it would have had alone, and stores what writing them one after another stores."""

from __future__ import annotations

import threading
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from replay_core.events import parse_event
from replay_core.server.api import SOURCE, JoinedWrites
from replay_core.storage.store import WriteBatch, WriteRefused
from replay_core.storage.worker import OffloadedWrites
from replay_core.storage.tables import run_rollups, sessions, steps

step = st.fixed_dictionaries({"kind": st.just("step"), "run": st.sampled_from("ab"), "event_id": st.sampled_from(["e0", "e1", "e2", "e3"]),
                              "seq": st.none() | st.integers(1, 6), "type": st.sampled_from(["think", "tool_call", "error"])})
end = st.fixed_dictionaries({"kind": st.just("session_end"), "run": st.sampled_from("ab"), "status": st.sampled_from(["succeeded", "failed"])})
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
        rows = conn.execute(select(steps.c.session_id, steps.c.seq, steps.c.event_id, steps.c.type)
                            .where(steps.c.session_id.like(prefix + "%")).order_by(steps.c.session_id, steps.c.seq, steps.c.event_id))
        runs = conn.execute(select(sessions.c.id, sessions.c.status, run_rollups.c.steps, run_rollups.c.max_seq, run_rollups.c.errored_steps)
                            .outerjoin(run_rollups, run_rollups.c.session_id == sessions.c.id)
                            .where(sessions.c.id.like(prefix + "%")).order_by(sessions.c.id))
        return [(r[0][len(prefix):], *r[1:]) for r in [*rows, *runs]]


class Spy:
    """The store, counting the batches of each `write_batches` call."""

    def __init__(self, store):
        self.store, self.calls = store, []

    def __call__(self):
        return self

    def write_batches(self, batches, **kwargs):
        batches = list(batches)
        self.calls.append(len(batches))
        return self.store.write_batches(batches, **kwargs)


def joined(store, spy: Spy, given_batches: list[list], prefix: str) -> list:
    """Each batch from its own thread, queued in order while a write holds the lock, then written."""
    writes = JoinedWrites(spy, default_source=SOURCE, refuse_conflicts=True)
    results: list = [None] * len(given_batches)

    def send(i: int, batch: WriteBatch) -> None:
        results[i] = outcome(lambda: writes.write(batch))

    threads = []
    with writes._writing:  # a write in progress: the batches queue behind it
        for i, items in enumerate(given_batches):
            batch = WriteBatch()
            for ev in events(items, prefix):
                batch.add(ev)
            threads.append(threading.Thread(target=send, args=(i, batch)))
            threads[-1].start()
            deadline = time.monotonic() + 10
            while len(writes._queued) <= i and time.monotonic() < deadline:
                time.sleep(0.001)
            assert len(writes._queued) == i + 1
    for t in threads:
        t.join(30)
    return results


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=batches)
def test_joined_writes_answer_and_store_as_one_by_one(store, batches):
    tag = f"{time.monotonic_ns()}-"
    alone = [outcome(lambda b=b: store.write(events(b, "s" + tag), default_source=SOURCE, refuse_conflicts=True)) for b in batches]
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
    alone = [outcome(lambda b=b: store.write(events(b, "s" + tag), default_source=SOURCE, refuse_conflicts=True)) for b in batches]
    spy = Spy(OffloadedWrites(store))
    assert joined(store, spy, batches, "w" + tag) == alone
    assert spy.calls[0] == len(batches)
    assert stored(store, "w" + tag) == stored(store, "s" + tag)

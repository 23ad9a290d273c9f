"""A run's batches landing in a random order inside it, with `room` made to spread a window of seqs at every
landing short of free seqs (no stored step moved up past it; windows of a few seqs, so the windows double,
and the run is spread whole when dense): after every batch the run holds one request's steps in one
request's order, parents before children, seqs within room.GROWTH × its steps and rollups equal to a
rebuild; settled, it is numbered 1..n. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from replay_core.ingest import otlp_receiver
from replay_core.storage import room
from replay_core.storage.tables import steps
from tests.test_otlp_order_rollups import _body, _clear, _picture, _rollups, _trace, last_batch_first


@pytest.fixture
def spreading(monkeypatch):
    """Every landing short of free seqs spreads a window (of LEAF seqs up), and no run is settled at once."""
    monkeypatch.setattr(room, "SHIFT_LEAST", 0)
    monkeypatch.setattr(room, "SHIFT_BATCHES", 0)
    monkeypatch.setattr(room, "SETTLE_SMALL", 0)


def _spread_calls(monkeypatch) -> list[tuple[int, int, int]]:
    """The windows `room._renumber` is asked to renumber, as they happen: (first seq, last seq, the run's last seq)."""
    calls: list[tuple[int, int, int]] = []
    renumber = room._renumber

    def counted(conn, sid, spots, first, end):
        top = conn.scalar(select(func.max(steps.c.seq)).where(steps.c.session_id == sid))
        calls.append((first, end, top))
        renumber(conn, sid, spots, first, end)

    monkeypatch.setattr(room, "_renumber", counted)
    return calls


def _within_bound(store) -> bool:
    """Whether every run's seqs are within room.GROWTH × its steps (a trace's steps are in a provisional run
    of its own until its root names the session)."""
    s = steps.c
    with store.engine.connect() as conn:
        runs = conn.execute(select(func.max(s.seq), func.count()).group_by(s.session_id)).all()
    return all(top <= room.GROWTH * n for top, n in runs)


def _run(store) -> list[tuple]:
    """The steps of the one run the trace's batches went to so far (the session, or a provisional run)."""
    with store.engine.connect() as conn:
        (sid,) = conn.scalars(select(steps.c.session_id).distinct()).all()
    return [(s.seq, s.event_id, s.type, s.tool_call_id, s.parent_id, s.agent_id) for s in store.load_steps(sid)]


@settings(
    max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    kinds=st.lists(st.integers(0, 3), min_size=20, max_size=60),
    leaf=st.sampled_from([1, 2, 4, 8]),
    data=st.data(),
)
def test_batches_landing_anywhere_spread_windows_and_keep_the_run_right(store, spreading, monkeypatch, kinds, leaf, data):
    monkeypatch.setattr(room, "LEAF", leaf)
    spans = _trace(0, kinds)
    _clear(store)
    otlp_receiver.receive(store, _body(spans), "application/json")
    expected = _picture(store)
    named = {s[1] for s in expected}
    _clear(store)
    size = data.draw(st.integers(1, 4), label="spans a batch")
    batches = [spans[i : i + size] for i in range(0, len(spans), size)]
    order = data.draw(st.permutations(range(len(batches))), label="order of the batches")
    for n in order:
        otlp_receiver.receive(store, _body(batches[n]), "application/json")
        got = _run(store)
        seqs = [s[0] for s in got]
        assert seqs == sorted(set(seqs))  # rising, each once
        held = {s[1] for s in got}
        final = [s[1:5] for s in got if s[1] in named]  # not a tool call whose tool span has not come yet
        assert final == [s[1:5] for s in expected if s[1] in held]  # one request's order (agents come with the root)
        seen: set[str] = set()
        for _, event_id, _, _, parent, _ in got:
            assert parent is None or parent not in held or parent in seen  # a parent before its children
            seen.add(event_id)
        assert _within_bound(store)
        kept = _rollups(store)
        store.rebuild_rollups()
        assert kept == _rollups(store)
    store.otlp_settle(timedelta(0))
    assert _picture(store) == expected
    assert [s[0] for s in _picture(store)] == list(range(1, len(expected) + 1))
    kept = _rollups(store)
    store.rebuild_rollups()
    assert kept == _rollups(store)


def test_a_run_received_last_batch_first_stays_within_its_bound(store, spreading, monkeypatch):
    """Sent last batch first (the root first), every batch lands at the run's start, where the stored steps move up
    leaving room for the next (spread whole only were that to take it past its bound)."""
    monkeypatch.setattr(room, "LEAF", 4)
    batches, expected = last_batch_first(store, [0, 1, 2] * 30, 3)
    calls = _spread_calls(monkeypatch)
    for batch in batches:
        otlp_receiver.receive(store, _body(batch), "application/json")
        assert _within_bound(store)
    assert all(end > top for _, end, top in calls)  # no window spread: the moves at the start make the room
    got = _picture(store)
    assert [s[1:] for s in got] == [s[1:] for s in expected]
    kept = _rollups(store)
    store.rebuild_rollups()
    assert kept == _rollups(store)
    store.otlp_settle(timedelta(0))
    assert _picture(store) == expected


def test_a_batch_landing_at_many_spots_spreads_a_few_windows_then_the_run_whole(store, spreading, monkeypatch):
    """A batch of every other span lands at a spot between each two stored steps, in clusters of ten seqs with
    room between them. Each window spread re-reads the stored steps between the batch's ends; once those reads
    would cost more than the run, the run is spread whole, room for every spot at once: a few spreads for a
    batch, not one a spot (dozens here, and as many as a request's spans in a long run). The run stays right."""
    monkeypatch.setattr(room, "LEAF", 2)
    spans = _trace(0, [0, 1, 2] * 20)
    _clear(store)
    otlp_receiver.receive(store, _body(spans), "application/json")
    expected = _picture(store)
    _clear(store)
    children = spans[:-1]
    otlp_receiver.receive(store, _body(children[0::2]), "application/json")
    with store.engine.begin() as conn:  # clusters of 10 seqs, 25 free seqs after each (moved out of the way first)
        conn.exec_driver_sql("UPDATE steps SET seq = seq + ((seq - 1) / 10) * 25 + 100000")
        conn.exec_driver_sql("UPDATE steps SET seq = seq - 100000")
        stored, top = conn.execute(select(func.count(), func.max(steps.c.seq))).one()
    calls = _spread_calls(monkeypatch)
    otlp_receiver.receive(store, _body(children[1::2]), "application/json")
    assert 2 <= len(calls) <= -(-top // stored) + 1  # a window at a time while cheaper than the run, then the run
    assert calls[-1][0] == 1 and calls[-1][1] >= calls[-1][2]
    assert _within_bound(store)
    otlp_receiver.receive(store, _body(spans[-1:]), "application/json")
    store.otlp_settle(timedelta(0))
    assert _picture(store) == expected

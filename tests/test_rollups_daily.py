"""Per-day rollups stay exact: after any sequence of writes (new runs, late, duplicate and
out-of-order steps, changed dimensions, ends), idle expiry, deletes, retention and moves, they
equal a from-scratch rebuild, and the dashboard read from them equals the one read per run, on
SQLite and PostgreSQL; a filter they cannot answer falls back to the per-run rollups."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from sqlalchemy import select
from test_rollups import SIDS, T0, _apply, _clear, _event, step
from test_threads import assert_accounts_recomputed

from replay_core.demo import load_demo
from replay_core.events import SessionEndEvent, SessionEvent
from replay_core.storage.store import SessionFilter, Store, WriteRefused
from replay_core.storage.tables import daily_cells, daily_errors, daily_members, daily_tools, run_rollups
from replay_core.understand import analytics, headline

METRICS = (
    (analytics.headline, None),
    (analytics.headline, "model"),
    (analytics.headline, "day"),
    (analytics.volume, "day"),
    (analytics.volume, "status"),
    (analytics.step_latency, "model"),
    (analytics.usage, "model"),
    (analytics.usage, "agent"),
    (analytics.tools, None),
    (analytics.tools, "day"),
    (analytics.error_classes, None),
    (analytics.retries, "day"),
    (analytics.fallbacks, "day"),
    (analytics.interventions, "day"),
    (analytics.loops, "day"),
    (analytics.loops, None),
    (analytics.durations, "agent"),
)

session = st.builds(
    dict,
    model=st.none() | st.sampled_from(("m1", "m2")),
    agent_id=st.none() | st.sampled_from(("x", "y")),
    source=st.none() | st.sampled_from(("file", "experiment")),
    replay_of=st.none() | st.sampled_from(SIDS),
    hours=st.integers(-30, 30),  # the start moves across days
    metadata=st.none() | st.sampled_from(({"cost_usd": 0.3}, {"tokens_in": 7.9, "cost_usd": True}, {"tokens_out": 4})),
    error_class=st.none() | st.sampled_from(("Timeout", "Boom")),
    user_id=st.none() | st.sampled_from(("u1", "u2")),
    thread_id=st.none() | st.sampled_from(("t1", "t2")),
)

op = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(SIDS), st.lists(step, max_size=8), st.booleans(), st.booleans()),
    st.tuples(
        st.just("session"),
        st.sampled_from(SIDS),
        session,
        st.lists(step, max_size=3),
        st.none() | st.sampled_from(("succeeded", "failed", "unknown")),
    ),
    st.tuples(st.just("expire"), st.integers(0, 48)),
    st.tuples(st.just("delete"), st.sampled_from(SIDS)),
    st.tuples(st.just("retention"), st.integers(0, 3)),
    st.tuples(st.just("move"), st.sampled_from(SIDS), st.sampled_from(SIDS)),
)


def _run(store: Store, action: tuple) -> None:
    if action[0] == "session":
        _, sid, fields, specs, end = action
        fields = dict(fields)
        started = T0 + timedelta(hours=fields.pop("hours"))
        events = [SessionEvent(session_id=sid, started_at=started, **fields), *(_event(sid, s) for s in specs)]
        if end:
            events.append(SessionEndEvent(session_id=sid, status=end, error_class=fields["error_class"]))
        try:
            store.write(events, replace=True)
        except WriteRefused:  # a replay of a run not stored (yet)
            pass
    elif action[0] == "expire":
        store.expire_idle(timedelta(hours=1), now=T0 + timedelta(hours=action[1]))
    else:
        _apply(store, action)


def _daily_tables(store: Store) -> list[list]:
    with store.engine.connect() as conn:
        return [
            sorted((tuple(r) for r in conn.execute(select(t))), key=repr)
            for t in (daily_members, daily_cells, daily_tools, daily_errors)
        ]


def _same_dashboard(store: Store, flt: SessionFilter | None) -> None:
    for detail in (True, False):
        cells, runs = analytics.load(store, flt, daily=True, detail=detail), analytics.load(store, flt, detail=detail)
        assert cells.daily and not runs.daily
        for metric, by in METRICS:
            if metric is analytics.step_latency and not detail:
                continue
            assert_frame_equal(metric(cells, by), metric(runs, by), check_exact=True), (metric.__name__, by, flt, detail)


FILTERS = (
    None,
    SessionFilter(since=T0 - timedelta(hours=20), until=T0 + timedelta(hours=9)),  # part days at both ends
    SessionFilter(since=T0 - timedelta(days=1), until=T0 + timedelta(days=1), model="m1", include_replays=True),
    SessionFilter(experiments=True, until=T0 + timedelta(minutes=30), status="failed"),
)


@pytest.mark.load
@settings(
    max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(actions=st.lists(op, min_size=1, max_size=10))
def test_daily_rollups_equal_a_rebuild_and_the_per_run_numbers(store, actions):
    _clear(store)
    for action in actions:
        _run(store, action)
    kept = _daily_tables(store)
    store.rebuild_rollups()
    assert kept == _daily_tables(store)
    members = {row[0] for row in kept[0]}
    assert members == set(store.session_ids(SessionFilter(experiments=True, include_replays=True)))  # every run, once
    assert sum(row[7] for row in kept[1]) == len(members)  # cells' runs add up to the runs
    for flt in FILTERS:
        _same_dashboard(store, flt)
    for by, column in (("user", "user_id"), ("thread", "thread_id")):
        assert_accounts_recomputed(store, by, column)


@pytest.mark.parametrize(
    "flt",
    [
        None,
        SessionFilter(status="failed"),
        SessionFilter(experiments=True),
        SessionFilter(include_replays=True),
        SessionFilter(since=datetime(2020, 1, 1, 7, tzinfo=UTC)),
        SessionFilter(until=datetime.now(UTC) - timedelta(hours=5)),
    ],
)
def test_demo_dashboard_from_cells_equals_per_run(demo, flt):
    _same_dashboard(demo, flt)


@pytest.mark.parametrize(
    "flt",
    [
        SessionFilter(text="refund"),
        SessionFilter(tag="demo"),
        SessionFilter(workflow="customer-support"),
        SessionFilter(has="retry"),
        SessionFilter(failed_tool="search_flights"),
    ],
)
def test_a_filter_the_cells_cannot_answer_reads_per_run(demo, flt):
    assert demo.daily_rows(flt) is None
    cells, runs = analytics.load(demo, flt, daily=True), analytics.load(demo, flt)
    assert not cells.daily
    for metric, by in METRICS:
        assert_frame_equal(metric(cells, by), metric(runs, by), check_exact=True)


def test_per_run_dimensions_are_refused_on_cells(demo):
    with pytest.raises(ValueError, match="not kept per day"):
        analytics.volume(analytics.load(demo, daily=True), "workflow")


@pytest.mark.parametrize("by", [None, *headline.DAILY])
def test_stats_from_cells_equals_stats_per_run(demo, by, monkeypatch):
    cells = headline.headline(demo, None, by)
    monkeypatch.setattr(demo, "daily_rows", lambda *a, **k: None)
    assert cells == headline.headline(demo, None, by)


def test_migration_fills_daily_rollups_of_an_older_database(store):
    from alembic import command

    from replay_core.storage.migrations import alembic_config

    load_demo(store)
    expected = _daily_tables(store)
    command.downgrade(alembic_config(store.engine), "0010_search")
    command.upgrade(alembic_config(store.engine), "head")
    assert _daily_tables(store) == expected and expected[1]


def test_migration_copies_step_durations_onto_the_members(store):
    """0012_member_durations: a database at 0011 gets each run's step durations on its member row, as a rebuild puts them."""
    from alembic import command

    from replay_core.storage.migrations import alembic_config

    load_demo(store)
    expected = _daily_tables(store)
    assert any(row[-1] for row in expected[0])
    command.downgrade(alembic_config(store.engine), "0011_daily")
    command.upgrade(alembic_config(store.engine), "head")
    assert _daily_tables(store) == expected
    with store.engine.connect() as conn:
        copied = conn.execute(select(daily_members.c.session_id, daily_members.c.durations_us)).all()
        rolled = dict(conn.execute(select(run_rollups.c.session_id, run_rollups.c.durations_us)).all())
    assert all(durations == rolled.get(sid) for sid, durations in copied)


def test_a_cost_too_large_for_exact_sums_is_read_per_run(store):
    """Costs may be 10¹⁵ a step: nano-dollars would overflow the cells' sums, so such a period reads per run."""
    store.write(
        [
            SessionEvent(session_id="big", started_at=T0),
            _event("big", {"type": "decision", "minute": 1, "cost_usd": 1e12}),
            SessionEvent(session_id="small", started_at=T0),
            _event("small", {"type": "decision", "minute": 1, "cost_usd": 0.25}),
        ]
    )
    cells, runs = analytics.load(store, daily=True), analytics.load(store)
    assert not cells.daily and analytics.headline(cells)["cost_usd"][0] == 1e12 + 0.25
    assert analytics.headline(runs)["cost_usd"][0] == 1e12 + 0.25
    assert headline.headline(store)[0]["cost_usd"] == 1e12 + 0.25
    store.delete_sessions(["big"])
    assert analytics.load(store, daily=True).daily
    assert headline.headline(store)[0]["cost_usd"] == analytics.headline(analytics.load(store))["cost_usd"][0] == 0.25

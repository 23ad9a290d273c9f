"""Rollups stay exact: after any sequence of writes (late, duplicate, out-of-order steps, runs
ended or not), deletes, retention and OTLP moves, they equal a from-scratch rebuild, on SQLite
and PostgreSQL; and the migration fills them for a database written before it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select, text

from replay_core.events import SessionEndEvent, SessionEvent, StepEvent
from replay_core.storage import rollups
from replay_core.storage.bulk import _rows_query
from replay_core.storage.store import SessionFilter, Store
from replay_core.storage.tables import run_breakdown, run_rollups, steps

T0 = datetime(2026, 9, 1, tzinfo=UTC)
SIDS = ("a", "b", "c")
TYPES = ("think", "tool_call", "tool_result", "observation", "decision", "error", "input", "span")

step = st.builds(
    dict,
    event_id=st.sampled_from([f"e{i}" for i in range(12)]) | st.none(),
    seq=st.integers(1, 15) | st.none(),
    type=st.sampled_from(TYPES),
    status=st.sampled_from(("ok", "ok", "error", "blocked")),
    retry=st.sampled_from((0, 0, 1)),
    duration_ms=st.none() | st.floats(0, 5000, allow_nan=False),
    tokens_in=st.none() | st.integers(0, 500),
    tokens_out=st.none() | st.integers(0, 50),
    cost_usd=st.none() | st.sampled_from((0.0, 0.001, 0.25)),
    tool_name=st.none() | st.sampled_from(("search", "read")),
    tool_args=st.none() | st.sampled_from(({"q": 1}, {"q": 2}, {"a": 1, "b": 2}, {"b": 2, "a": 1})),
    tool_call_id=st.none() | st.sampled_from(("c1", "c2", "c3")),
    error_class=st.none() | st.sampled_from(("Timeout", "ValueError")),
    minute=st.integers(0, 600),
    metadata=st.none()
    | st.sampled_from(({"approval": True}, {"block": "fallback"}, {"block": "fallback", "agent_invoked": True})),
)

# a step of few tools, arguments and call ids: loops and redundant calls that span batches
call = st.builds(
    dict,
    type=st.sampled_from(("tool_call", "tool_call", "tool_result", "think")),
    retry=st.sampled_from((0, 0, 1)),
    status=st.sampled_from(("ok", "ok", "error")),
    tool_name=st.sampled_from(("search", "read")),
    tool_args=st.sampled_from(({"q": 1}, {"q": 1}, {"q": 2})),
    tool_call_id=st.sampled_from(("c1", "c2", "c3", "c4")),
    minute=st.integers(0, 600),
)

op = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(SIDS), st.lists(step, max_size=8), st.booleans(), st.booleans()),
    st.tuples(st.just("delete"), st.sampled_from(SIDS)),
    st.tuples(st.just("retention"), st.integers(0, 3)),
    st.tuples(st.just("move"), st.sampled_from(SIDS), st.sampled_from(SIDS)),
)


def _event(sid: str, spec: dict) -> StepEvent:
    spec = dict(spec)
    minute = spec.pop("minute")
    return StepEvent(session_id=sid, timestamp=T0 + timedelta(minutes=minute), **spec)


def _apply(store: Store, action: tuple) -> None:
    kind = action[0]
    if kind == "write":
        _, sid, specs, opened, ended = action
        events = [SessionEvent(session_id=sid, started_at=T0 - timedelta(days=SIDS.index(sid)))] if opened else []
        events += [_event(sid, spec) for spec in specs]
        if ended:
            events.append(SessionEndEvent(session_id=sid, status="failed"))
        store.write(events)
    elif kind == "delete":
        store.delete_sessions([action[1]])
    elif kind == "retention":
        store.delete_older_than(action[1] + 0.5, now=T0 + timedelta(days=1))
    else:
        store.move_session_steps(action[1], action[2])


def _tables(store: Store) -> tuple[list, list]:
    with store.engine.connect() as conn:
        main = sorted(tuple(r) for r in conn.execute(select(run_rollups)))
        parts = sorted((tuple(r) for r in conn.execute(select(run_breakdown))), key=repr)
    return main, parts


def keys_hold(store: Store) -> None:
    """Every stored step's call_key is the key of its stored tool, type and arguments (the keyed
    carry-on reads the column; the rebuild it is held to computes the keys from the arguments)."""
    s = steps.c
    with store.engine.connect() as conn:
        rows = conn.execute(select(s.type, s.tool_name, s.tool_args, s.call_key)).all()
    assert [r.call_key for r in rows] == [rollups.call_key(r.type, r.tool_name, r.tool_args) for r in rows]


def _clear(store: Store) -> None:
    store.delete_sessions(store.session_ids(SessionFilter(experiments=True)))


@settings(
    max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(actions=st.lists(op, min_size=1, max_size=10))
def test_rollups_equal_a_rebuild_after_any_writes(store, actions):
    _clear(store)
    for action in actions:
        _apply(store, action)
    kept = _tables(store)
    store.rebuild_rollups()
    assert kept == _tables(store)
    keys_hold(store)
    # and every run with steps has its row, none without
    with store.engine.connect() as conn:
        with_steps = set(conn.scalars(text("select distinct session_id from steps")))
    assert {row[0] for row in kept[0]} == with_steps


@pytest.mark.load
@settings(
    max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(batches=st.lists(st.lists(step | call, min_size=1, max_size=8), min_size=2, max_size=6))
def test_a_live_run_sent_in_batches_equals_a_rebuild(store, batches):
    """A run's later batches carry its stored rollup on (storage/rollups.py `append`): loops and
    redundant calls across batches, results arriving a batch after their calls, cycles going on."""
    _clear(store)
    for i, specs in enumerate(batches):  # each step placed after the stored ones, as an agent's next batch is
        store.write([_event("live", {**spec, "seq": None, "event_id": f"b{i}.{j}"}) for j, spec in enumerate(specs)])
    kept = _tables(store)
    store.rebuild_rollups()
    assert kept == _tables(store)
    keys_hold(store)


def test_a_loop_and_its_redundant_calls_across_batches(store):
    """Three calls of one tool and arguments, their first result in the next batch, a fourth call in the one after."""
    _clear(store)
    call = {"type": "tool_call", "tool_name": "search", "tool_args": {"q": 1}, "minute": 0}
    for batch in (
        [{**call, "tool_call_id": f"c{i}", "event_id": f"e{i}"} for i in (1, 2, 3)],
        [{"type": "tool_result", "tool_call_id": "c1", "event_id": "r1", "minute": 1}],
        [{**call, "tool_call_id": "c4", "event_id": "e4"}],
    ):
        store.write([_event("live", spec) for spec in batch])
    kept = _tables(store)
    store.rebuild_rollups()
    assert kept == _tables(store)
    row = dict(zip(rollups.ROLLUP_COLUMNS, kept[0][0], strict=True))
    assert (row["loops"], row["redundant_calls"]) == (1, 1)


def test_definitions_on_a_known_run():
    """One run, each number worked out by hand."""
    rows = [
        # seq, type, status, retry, dur, in, out, cost, ts, tool, class, args, call id, metadata
        (1, "think", "ok", 0, 10.0, 100, 5, None, T0, None, None, None, None, None),
        (2, "tool_call", "ok", 0, 1.5, None, None, None, T0, "search", None, {"q": 1}, "c1", None),
        (3, "tool_result", "ok", 0, None, None, None, None, T0, "search", None, None, "c1", None),
        (4, "tool_call", "ok", 0, None, None, None, None, T0, "search", None, {"q": 1}, "c2", None),
        (5, "tool_result", "error", 0, None, None, None, None, T0 + timedelta(seconds=5), "search", "Timeout", None, "c2", None),
        (6, "tool_call", "ok", 1, None, None, None, None, T0, "search", None, {"q": 1}, "c3", None),
        (7, "tool_call", "ok", 0, None, None, None, None, T0, "search", None, {"q": 1}, "c4", None),
        (8, "span", "ok", 0, None, None, None, None, T0, None, None, None, None, {"block": "fallback", "agent_invoked": True}),
        (9, "input", "blocked", 0, None, None, None, None, T0, None, None, None, None, {"approval": True}),
        (10, "decision", "ok", 0, None, 3, 0, 0.5, T0, None, None, None, None, None),
        (11, "think", "ok", 0, None, None, None, None, T0, None, None, None, None, None),
    ]
    rows = [(*r[:11], rollups.call_key(r[1], r[9], r[11]), *r[12:]) for r in rows]  # FIELDS: the call's key, not its args
    main, parts = rollups.rollup_of("r", rows)
    got = dict(zip(rollups.ROLLUP_COLUMNS, main, strict=True))
    assert got == {
        "session_id": "r",
        "steps": 11,
        "max_seq": 11,
        "tokens_in": 103,
        "tokens_out": 5,
        "cost_usd": 0.5,
        "cost_unknown_steps": 1,
        "retried_steps": 1,
        "errored_steps": 1,
        "first_error_at": T0 + timedelta(seconds=5),
        "blocked_steps": 1,
        "approvals": 1,
        "fallback_blocks": 1,
        "fallback_agent": 1,
        "tool_calls": 4,
        "tool_failures": 1,
        # phases 0 1 2 1 2 1 1 4 0: falls at seq 4, 6 and 11 -> 4 cycles; 3 calls of search {"q": 1} outside retries: a
        # loop, and the calls after the first ok result (seq 3) are redundant: seq 4 and 7
        "cycles": 4,
        "loops": 1,
        "redundant_calls": 2,
        "durations_us": "10000,1500",
    }
    assert sorted(parts, key=repr) == sorted([("r", "search", None, 4, 0), ("r", "search", "Timeout", 0, 1)], key=repr)
    assert rollups.rollup_of("r", []) is None
    assert rollups.rollup_of("r", [rows[-1]])[0][-1] is None  # no step recorded a duration


def test_migration_fills_rollups_of_an_older_database(store):
    from alembic import command

    from replay_core.storage.migrations import alembic_config

    store.write(
        [SessionEvent(session_id="x"), *(_event("x", {"type": t, "minute": i, "tokens_in": 2}) for i, t in enumerate(TYPES))]
    )
    expected = _tables(store)
    command.downgrade(alembic_config(store.engine), "0004_audit")
    command.upgrade(alembic_config(store.engine), "head")
    assert _tables(store) == expected and expected[0][0][1] == len(TYPES)


def test_migration_keys_the_stored_calls_and_a_live_run_carries_on_from_them(store):
    """0013_call_keys: a database at 0012 gets every stored call's key (its steps written before the
    column); the run's next batch then finds the loop its calls make with the stored ones."""
    from alembic import command

    from replay_core.storage.migrations import alembic_config

    _clear(store)
    call = {"type": "tool_call", "tool_name": "search", "minute": 0}
    store.write(
        [
            _event("live", {**call, "tool_args": args, "tool_call_id": f"c{i}", "event_id": f"e{i}"})
            for i, args in enumerate(({"q": 1, "n": [1, 2]}, {"n": [1, 2], "q": 1}, None, {"q": 2}))
        ]
    )
    command.downgrade(alembic_config(store.engine), "0012_member_durations")
    command.upgrade(alembic_config(store.engine), "head")
    keys_hold(store)
    with store.engine.connect() as conn:
        assert len(set(conn.scalars(select(steps.c.call_key)))) == 3  # the two orders of one set of arguments are one call
    store.write([_event("live", {**call, "tool_args": {"q": 1, "n": [1, 2]}, "tool_call_id": "c9", "event_id": "e9"})])
    kept = _tables(store)
    assert dict(zip(rollups.ROLLUP_COLUMNS, kept[0][0], strict=True))["loops"] == 1
    store.rebuild_rollups()
    assert kept == _tables(store)


@pytest.mark.parametrize("flag", ["retry", "error", "intervention", "fallback", "loop"])
def test_has_filters_read_the_rollups(store, flag):
    specs = {
        "retry": [{"type": "tool_call", "tool_name": "t", "retry": 1}],
        "error": [{"type": "error"}],
        "intervention": [{"type": "input", "metadata": {"approval": True}}],
        "fallback": [{"type": "span", "metadata": {"block": "fallback", "agent_invoked": True}}],
        "loop": [{"type": "tool_call", "tool_name": "t", "tool_args": {"a": 1}, "event_id": f"l{i}"} for i in range(3)],
    }[flag]
    store.write([_event("hit", {"minute": 0, **s}) for s in specs] + [_event("miss", {"minute": 0, "type": "think"})])
    assert store.session_ids(SessionFilter(has=flag)) == ["hit"]


def test_names_and_call_ids_of_any_text_carry_on_across_batches(store):
    """The ids a live run's next batch looks up go to the database as one JSON array (SQLite) or
    array (PostgreSQL): quotes, backslashes, brackets and non-ASCII text are matched as they are."""
    _clear(store)
    names = ['a"b', "c\\d", "é ü", "[x]", "it's"]
    call = {"type": "tool_call", "tool_args": {"q": 1}, "minute": 0}
    batches = (
        [{**call, "tool_name": n, "tool_call_id": f"{n}-1", "event_id": f"c{i}"} for i, n in enumerate(names)],
        [{"type": "tool_result", "tool_call_id": f"{n}-1", "event_id": f"r{i}", "minute": 1} for i, n in enumerate(names)],
        [{**call, "tool_name": n, "tool_call_id": f"{n}-2", "event_id": f"d{i}"} for i, n in enumerate(names)],
    )
    for batch in batches:
        store.write([_event("live", spec) for spec in batch])
    kept = _tables(store)
    store.rebuild_rollups()
    assert kept == _tables(store)
    row = dict(zip(rollups.ROLLUP_COLUMNS, kept[0][0], strict=True))
    assert row["redundant_calls"] == len(names)  # each second call repeats one whose result was seen


@pytest.mark.postgres
def test_a_new_postgres_database_gets_statistics_from_its_first_writes(pg_database):
    """Never analyzed, PostgreSQL planned the rollups' call lookups as a scan of the whole run (1.4 s a
    batch at 30,000 steps): the first 1,000 steps written run its first ANALYZE, and the lookups take
    their indexes."""
    import uuid

    import psycopg
    from conftest import PG_ADMIN_URL, _pg_url

    name = f"agent_replay_stats_{uuid.uuid4().hex[:10]}"
    admin = psycopg.connect(PG_ADMIN_URL, autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    store = Store(_pg_url(name))
    try:

        def analyzed() -> bool:
            with store.engine.connect() as conn:
                return conn.execute(
                    text("SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relid = 'steps'::regclass")
                ).scalar()

        call = {"type": "tool_call", "tool_name": "search", "minute": 0}
        store.write(
            [_event("live", {**call, "tool_args": {"q": i}, "tool_call_id": f"c{i}", "event_id": f"e{i}"}) for i in range(600)]
        )
        assert not analyzed()
        store.write(
            [
                _event("live", {**call, "tool_args": {"q": i}, "tool_call_id": f"c{i}", "event_id": f"e{i}"})
                for i in range(600, 1200)
            ]
        )
        assert analyzed()
        tail = rollups.stored_by("call_key", "postgresql")
        query = _rows_query(("k", "sid", "v"), ("bigint", "text", "text"), tail, "postgresql").compile(
            dialect=store.engine.dialect
        )
        params = {"c0": [0, 1], "c1": ["live", "live"], "c2": ["k1", "k2"]}
        with store.engine.connect() as conn:
            cursor = conn.connection.dbapi_connection.cursor()
            cursor.execute("EXPLAIN " + str(query), params)
            plan = "\n".join(r[0] for r in cursor.fetchall())
        assert "ix_steps_call_key" in plan, plan
    finally:
        store.close()
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()

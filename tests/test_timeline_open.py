"""Opening a run reads its steps through the driver's cursor (store.load_steps): the steps must be
exactly what SQLAlchemy's column types give, on SQLite and on PostgreSQL."""

from __future__ import annotations

import gc
import itertools
import weakref
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs
from sqlalchemy import select

from replay_core.events import SessionEvent, StepEvent
from replay_core.ingest.pipeline import collector_paused, ingest
from replay_core.storage.store import STEP_COLUMNS
from replay_core.storage.tables import steps as steps_table
from replay_core.understand.timeline import open_timeline

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
_text = hs.text(hs.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=12)  # NUL is refused on the way in
_scalars = (
    hs.none() | hs.booleans() | hs.integers(-(2**53), 2**53) | hs.floats(-1e6, 1e6) | _text
)  # (jsonb writes a big float as an integer)
_json = hs.recursive(
    _scalars, lambda inner: hs.lists(inner, max_size=3) | hs.dictionaries(_text, inner, max_size=3), max_leaves=8
)
_step = hs.fixed_dictionaries(
    {
        "type": hs.sampled_from(["input", "think", "tool_call", "tool_result", "error", "decision"]),
        "at": hs.none() | hs.integers(0, 10**12),  # microseconds after T0, or no timestamp
        "tool_args": _json,
        "metadata": hs.none() | hs.dictionaries(_text, _json, max_size=3),
        "status": hs.sampled_from(["ok", "error"]),
        "tokens_in": hs.none() | hs.integers(0, 10**6),
        "cost_usd": hs.none() | hs.floats(0, 10, allow_nan=False),
    }
)
_runs = itertools.count()


TYPED = tuple(name for name in STEP_COLUMNS if name not in ("tool_args", "metadata"))


def _typed_read(store, session_id: str) -> list[dict]:
    """The steps as SQLAlchemy's column types decode them, the JSON columns aside (its JSON type fails
    on a bare number SQLite hands back as a number): the reference the driver's rows must match."""
    cols = [steps_table.c[name] for name in TYPED]
    query = (
        select(*cols)
        .where(steps_table.c.session_id == session_id)
        .order_by(steps_table.c.seq, steps_table.c.timestamp, steps_table.c.id)
    )
    with store.engine.connect() as conn:
        return [dict(zip(TYPED, row, strict=True)) for row in conn.execute(query)]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=hs.lists(_step, min_size=1, max_size=6))
def test_a_loaded_step_is_what_the_column_types_give(store, specs):
    sid = f"open-{next(_runs)}"
    events = [SessionEvent(session_id=sid, started_at=T0)] + [
        StepEvent(
            session_id=sid,
            event_id=f"e{i}",
            seq=i + 1,
            type=spec["type"],
            status=spec["status"],
            timestamp=None if spec["at"] is None else T0 + timedelta(microseconds=spec["at"]),
            tool_args=spec["tool_args"],
            metadata=spec["metadata"],
            tokens_in=spec["tokens_in"],
            cost_usd=spec["cost_usd"],
        )
        for i, spec in enumerate(specs)
    ]
    ingest(store, events)
    loaded = store.load_steps(sid)
    expected = _typed_read(store, sid)
    assert len(loaded) == len(expected) == len(specs)
    for step, row, written in zip(loaded, expected, events[1:], strict=True):
        got = {name: getattr(step, name) for name in TYPED}
        assert got == row
        assert [type(v) for v in got.values()] == [type(v) for v in row.values()]  # 1 stays 1, not 1.0 or True
        assert (step.tool_args, step.metadata) == (written.tool_args, written.metadata)
        assert step.timestamp is None or step.timestamp.tzinfo is UTC
        assert step.session_id == sid
    assert [s.seq for s in open_timeline(store, sid).steps] == list(range(1, len(specs) + 1))


def test_a_bare_number_as_arguments_or_a_json_text_loads_as_written(store):
    """SQLite's numeric affinity stores a JSON number as a number: the step still opens (it raised before)."""
    values = [5, 1.5, -3, "5", "x", True, None, [1, "a"], {"k": 0.25}]
    ingest(
        store,
        [SessionEvent(session_id="n", started_at=T0)]
        + [StepEvent(session_id="n", event_id=f"e{i}", seq=i + 1, type="tool_call", tool_args=v) for i, v in enumerate(values)],
    )
    args = [s.tool_args for s in open_timeline(store, "n").steps]
    assert args == values and [type(a) for a in args] == [type(v) for v in values]


def test_what_is_built_while_paused_is_promoted_not_lost():
    """collector_paused hands what it made to the oldest generation: still collected when it is cyclic garbage."""

    class Node:
        pass

    with collector_paused():
        node = Node()
        node.me = node  # a cycle, unreachable once `node` is dropped
        gc_was_on_inside = gc.isenabled()
    assert not gc_was_on_inside and gc.isenabled() and gc.get_freeze_count() == 0
    assert gc.is_tracked(node) and gc.get_count()[0] < 100  # the young generation was emptied by the promotion, not scanned
    gone = weakref.ref(node)
    del node
    gc.collect()
    assert gone() is None

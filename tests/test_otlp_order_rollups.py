"""A session's OTLP traces split into batches posted in any order: the run holds the steps, seqs and agents
one request gives, and its rollups equal a from-scratch rebuild, although each batch's provisional steps are
moved, placed among the stored ones and rolled up inside the batch's one write transaction (the rollups carried
on, not recomputed, when everything lands after what the run holds). On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import timedelta
from itertools import pairwise
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select, update

from replay_core.ingest import otlp_receiver
from replay_core.storage import rollups, room
from replay_core.storage.store import SessionFilter, Store
from replay_core.storage.tables import otlp_traces, run_breakdown, run_rollups
from replay_core.vocabulary import now_utc

T0 = 1_764_000_000_000_000_000


def _attrs(**values: str) -> list[dict]:
    return [{"key": k, "value": {"stringValue": v}} for k, v in values.items()]


TOOLS = (1, 3)  # the kinds of tool spans: answering the call before them, ok or failing


def _trace(t: int, kinds: list[int], inputs: bool = False) -> list[dict]:
    """One turn of the conversation: a root naming the session, then model calls asking a tool, the tools
    answering them (kind 1, or 3 failing) and bare spans, one after the other; turn `t` starts after turn
    t - 1 ends. With `inputs`, each model call's input holds the result of the call before it (the tool
    spans carry none: a result stored without text takes it from there, in a later batch too)."""
    trace = f"{t + 1:032x}"
    start = T0 + t * 10_000_000
    spans = []
    asked = None  # the call id of the turn's last model call
    for i, kind in enumerate(kinds, start=2):
        at = start + i * 1000
        if kind == 0:
            messages = [
                {
                    "role": "assistant",
                    "parts": [{"type": "tool_call", "id": f"c{t}-{i}", "name": "search", "arguments": {"q": "x"}}],
                }
            ]
            received = [{"role": "user", "parts": [{"type": "text", "content": "go"}]}]
            if asked is not None:
                received.append({"role": "tool", "parts": [{"type": "tool_call_response", "id": asked, "result": f"r {i}"}]})
            attrs = _attrs(
                **{
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.output.messages": json.dumps(messages),
                    **({"gen_ai.input.messages": json.dumps(received)} if inputs else {}),
                }
            )
            asked = f"c{t}-{i}"
        elif kind in TOOLS:
            attrs = _attrs(
                **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search", "gen_ai.tool.call.id": f"c{t}-{i - 1}"}
            )
        else:
            attrs = []
        spans.append(_span(trace, t * 100 + i, t * 100 + 1, at, at + 500, attrs))
        if kind == 3:
            spans[-1]["status"] = {"code": 2, "message": f"boom {i}"}
    root = _attrs(**{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "worker", "session.id": "conv"})
    spans.append(_span(trace, t * 100 + 1, None, start, start + (len(kinds) + 3) * 1000, root))
    return spans


def _span(trace: str, n: int, parent: int | None, start: int, end: int, attrs: list[dict]) -> dict:
    out = {
        "traceId": trace,
        "spanId": f"{n:016x}",
        "name": f"span {n}",
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": attrs,
    }
    if parent is not None:
        out["parentSpanId"] = f"{parent:016x}"
    return out


def _body(spans: list[dict]) -> bytes:
    return json.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": spans}]}]}).encode()


def _picture(store: Store) -> list[tuple]:
    return [(s.seq, s.event_id, s.type, s.tool_call_id, s.parent_id, s.agent_id) for s in store.load_steps("conv")]


def _rollups(store: Store) -> tuple[list, list]:
    with store.engine.connect() as conn:
        main = sorted(tuple(r) for r in conn.execute(select(run_rollups)))
        parts = sorted((tuple(r) for r in conn.execute(select(run_breakdown))), key=repr)
    return main, parts


def _clear(store: Store) -> None:
    store.delete_sessions(store.session_ids(SessionFilter(experiments=True)))


@pytest.mark.parametrize("inputs", [False, True], ids=["no inputs", "inputs"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(turns=st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=6), min_size=1, max_size=3), data=st.data())
def test_batches_in_any_order_give_one_requests_steps_and_exact_rollups(store, inputs, turns, data):
    """Late tool spans (drawn) go in the batch sent after their model call's: each takes over the call an
    earlier batch stored; with model inputs, a model call gives a result stored without text its text,
    whichever came first. The rollups are carried over each such swap, and left as they are by a fill."""
    spans = [s for t, kinds in enumerate(turns) for s in _trace(t, kinds, inputs)]
    _clear(store)
    otlp_receiver.receive(store, _body(spans), "application/json")
    expected = _picture(store)
    _clear(store)
    batch_of = data.draw(st.lists(st.integers(0, 3), min_size=len(spans), max_size=len(spans)), label="batch of each span")
    order = data.draw(st.permutations(range(4)), label="order of the batches")
    if data.draw(st.booleans(), label="tool spans in the batch after their model call's"):
        kinds = [k for t in turns for k in [*t, None]]  # as `spans`: each turn's spans, then its root
        for j, kind in enumerate(kinds):
            sent = order.index(batch_of[j - 1]) if j else 3
            if kind in TOOLS and kinds[j - 1] == 0 and sent < 3:
                batch_of[j] = order[sent + 1]
    settle_small = data.draw(st.sampled_from([0, room.SETTLE_SMALL]), label="runs settled at once up to")  # 0: gaps kept
    swap_from = data.draw(st.sampled_from([0, rollups.SWAP_FROM]), label="steps a swap from which it is carried")
    # set once both are drawn: a draw may stop the example (hypothesis' StopTest), which must leave them as they were
    with mock.patch.object(room, "SETTLE_SMALL", settle_small), mock.patch.object(rollups, "SWAP_FROM", swap_from):
        for n in order:
            batch = [s for s, b in zip(spans, batch_of, strict=True) if b == n]
            if batch:
                otlp_receiver.receive(store, _body(batch), "application/json")
                kept = _rollups(store)  # carried on over seqs with gaps too
                store.rebuild_rollups()
                assert kept == _rollups(store)
    store.otlp_settle(timedelta(0))
    assert [r["id"] for r in store.list_sessions(limit=10)] == ["conv"]
    assert _picture(store) == expected
    kept = _rollups(store)
    store.rebuild_rollups()
    assert kept == _rollups(store)


@pytest.mark.parametrize("inputs", [False, True], ids=["no inputs", "inputs"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rounds=st.lists(st.sampled_from([(0, 1), (0, 1), (0, 3), (0,), (2,)]), min_size=2, max_size=8), data=st.data())
def test_tool_spans_and_results_after_a_batch_boundary_keep_exact_rollups(store, rounds, inputs, data):
    """A turn's spans sent in the order they end, cut into batches anywhere: a tool span whose model call the
    batch before stored takes it over, and (with model inputs) a result the batch before stored without text
    gets it from the next model call. After every batch the rollups equal a rebuild; at the end the run is
    one request's."""
    spans = _trace(0, [kind for kinds in rounds for kind in kinds], inputs)
    _clear(store)
    otlp_receiver.receive(store, _body(spans), "application/json")
    expected = _picture(store)
    _clear(store)
    cuts = sorted(data.draw(st.sets(st.integers(1, len(spans) - 1), max_size=len(spans) - 1), label="batch cuts"))
    swap_from = rollups.SWAP_FROM
    rollups.SWAP_FROM = 0  # every run carried over its swaps, however short
    try:
        for first, end in pairwise([0, *cuts, len(spans)]):
            otlp_receiver.receive(store, _body(spans[first:end]), "application/json")
            kept = _rollups(store)
            store.rebuild_rollups()
            assert kept == _rollups(store)
    finally:
        rollups.SWAP_FROM = swap_from
    assert _picture(store) == expected


def last_batch_first(store: Store, kinds: list[int], size: int) -> tuple[list[list[dict]], list[tuple]]:
    """A turn's spans in batches of `size`, the root with the last, sent last batch first; and the run one
    request of them gives (the store cleared after)."""
    spans = _trace(0, kinds)
    root, children = spans[-1], spans[:-1]
    batches = [children[i : i + size] for i in range(0, len(children), size)]
    batches[-1].append(root)
    _clear(store)
    otlp_receiver.receive(store, _body(spans), "application/json")
    expected = _picture(store)
    _clear(store)
    return batches[::-1], expected


def test_a_run_sent_last_batch_first_stays_in_order_with_gaps_then_settles(store):
    """The worst order for positions: each batch lands before every stored step but the root (sent with the
    last batch, so first). Between batches the run holds one request's steps in one request's order, seqs
    increasing with gaps (room left for the next batch), exact rollups; once quiet, it is numbered 1..n."""
    batches, expected = last_batch_first(store, [0, 1, 2] * 20, 6)
    small = room.SETTLE_SMALL
    room.SETTLE_SMALL = 0
    try:
        for batch in batches:
            otlp_receiver.receive(store, _body(batch), "application/json")
            got = _picture(store)
            seqs = [s[0] for s in got]
            assert seqs == sorted(set(seqs)) and seqs[0] == 1
            held = {s[1] for s in got}
            assert [s[1:] for s in got] == [s[1:] for s in expected if s[1] in held]
            kept = _rollups(store)
            store.rebuild_rollups()
            assert kept == _rollups(store)
    finally:
        room.SETTLE_SMALL = small
    assert [s[0] for s in _picture(store)] != list(range(1, len(expected) + 1))  # gaps were left
    assert store.otlp_settle(timedelta(0)) == ["conv"]
    assert _picture(store) == expected
    kept = _rollups(store)
    store.rebuild_rollups()
    assert kept == _rollups(store)


def _gapped_run(store: Store) -> list[int]:
    """A 31-step run sent last batch first, whose seqs keep the gaps its batches left: its seqs."""
    spans = _trace(0, [2] * 30)
    root, children = spans[-1], spans[:-1]
    _clear(store)
    small = room.SETTLE_SMALL
    room.SETTLE_SMALL = 0
    try:
        for start in range(27, -1, -3):  # the last batch (with the root) first; a run past 4 × its batches
            batch = children[start : start + 3] + ([root] if start == 27 else [])
            otlp_receiver.receive(store, _body(batch), "application/json")
    finally:
        room.SETTLE_SMALL = small
    gapped = [s.seq for s in store.load_steps("conv")]
    assert gapped != list(range(1, len(gapped) + 1))
    return gapped


def _quiet_for(store: Store, seconds: float) -> None:
    """The traces' last batch `seconds` ago."""
    with store.engine.begin() as conn:
        conn.execute(update(otlp_traces).values(updated_at=now_utc() - timedelta(seconds=seconds)))


def test_idle_expiry_settles_a_run_whose_traces_went_quiet(store):
    """Gaps a batch left stay while the run's traces receive batches, and go when they have been quiet for
    AGENT_REPLAY_OTLP_SETTLE_S (30 s): idle expiry (run by the pages and the CLI) settles them too."""
    gapped = _gapped_run(store)
    store.expire_idle()  # the traces are not quiet yet
    assert [s.seq for s in store.load_steps("conv")] == gapped
    _quiet_for(store, 29)
    store.expire_idle()
    assert [s.seq for s in store.load_steps("conv")] == gapped
    _quiet_for(store, 31)
    store.expire_idle()
    assert [s.seq for s in store.load_steps("conv")] == list(range(1, len(gapped) + 1))
    kept = _rollups(store)
    store.rebuild_rollups()
    assert kept == _rollups(store)


def test_a_shorter_settle_setting_settles_a_quiet_run_sooner(store, monkeypatch):
    """AGENT_REPLAY_OTLP_SETTLE_S set to 2: a run whose traces were quiet 3 s is settled by idle expiry; set to 0,
    the receiver's next batch (of another trace) settles it, the receiver looking that often."""
    gapped = _gapped_run(store)
    _quiet_for(store, 3)
    store.expire_idle()
    assert [s.seq for s in store.load_steps("conv")] == gapped
    monkeypatch.setenv("AGENT_REPLAY_OTLP_SETTLE_S", "2")
    store.expire_idle()
    assert [s.seq for s in store.load_steps("conv")] == list(range(1, len(gapped) + 1))
    monkeypatch.delenv("AGENT_REPLAY_OTLP_SETTLE_S")
    gapped = _gapped_run(store)
    monkeypatch.setenv("AGENT_REPLAY_OTLP_SETTLE_S", "0")
    other = _span("f" * 32, 999, None, T0, T0 + 1000, _attrs(**{"gen_ai.operation.name": "invoke_agent"}))
    otlp_receiver.receive(store, _body([other]), "application/json")
    assert [s.seq for s in store.load_steps("conv")] == list(range(1, len(gapped) + 1))

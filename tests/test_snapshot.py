"""Timeline (cycles, gaps, totals) and the state at step n."""

from datetime import UTC, datetime, timedelta

from replay_core.events import SessionEndEvent, SessionEvent, StepEvent
from replay_core.ingest.pipeline import ingest
from replay_core.understand.snapshot import rebuild_messages, state_at
from replay_core.understand.timeline import find_gaps, open_timeline

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def s(seq, kind, **kw):
    return StepEvent(session_id="r1", event_id=f"e{seq}", seq=seq, type=kind, timestamp=T0 + timedelta(seconds=seq * 2), **kw)


RUN = [
    SessionEvent(session_id="r1", name="refund", started_at=T0),
    s(1, "input", content="I want a refund for order A-17"),
    s(
        2,
        "think",
        content="Look the order up.",
        tokens_in=100,
        tokens_out=10,
        cost_usd=0.01,
        metadata={"state": {"goal": "refund A-17", "memory": "none yet"}},
    ),
    s(3, "tool_call", tool_name="get_order", tool_args={"order_id": "A-17"}, tool_call_id="c1"),
    s(4, "tool_result", tool_name="get_order", tool_call_id="c1", content='{"status": "delivered"}'),
    s(
        5,
        "think",
        content="Check policy.",
        tokens_in=150,
        tokens_out=12,
        cost_usd=0.02,
        metadata={"state": {"memory": "order delivered"}},
    ),
    s(6, "tool_call", tool_name="policy", tool_args={"q": "refund"}, tool_call_id="c2"),
    s(
        7,
        "error",
        tool_name="policy",
        tool_call_id="c2",
        status="error",
        error_class="TimeoutError",
        content="policy service timed out",
    ),
    s(8, "tool_call", tool_name="policy", tool_args={"q": "refund"}, tool_call_id="c3", retry=1),
    s(
        9,
        "tool_result",
        tool_name="policy",
        tool_call_id="c3",
        content="30 days",
        context=[{"role": "system", "content": "recorded ctx"}],
    ),
    s(12, "decision", content="Refund issued.", tokens_in=200, tokens_out=20),
    SessionEndEvent(session_id="r1", status="succeeded"),
]


def test_timeline_cycles_gaps_totals_and_summary(store):
    ingest(store, RUN)
    tl = open_timeline(store, "r1")
    assert [c.first_seq for c in tl.cycles] == [2, 5]  # the retried call stays in its cycle
    assert tl.cycle_index[0] is None
    assert [g.label for g in tl.gaps] == ["steps 10–11 missing"]
    last = tl.totals.at(len(tl.steps) - 1)
    assert last["tokens_in"] == 450 and last["tool_calls"] == 3 and last["errors"] == 1 and last["retries"] == 1
    assert last["cost_usd"] == 0.03 and last["cost_unknown_steps"] == 1
    assert last["elapsed_s"] == 22.0
    assert tl.summary().startswith(
        "Succeeded after 2 cycles (10 steps); first error at step 7 (policy TimeoutError): policy service"
    )
    assert "steps 10–11 missing" in tl.summary()


def test_state_at_rebuilds_messages_before_n(store):
    ingest(store, RUN)
    tl = open_timeline(store, "r1")
    snap = state_at(tl, 5, store)
    assert snap.context_source == "rebuilt"
    assert snap.context == [
        {"role": "user", "content": "I want a refund for order A-17"},
        {
            "role": "assistant",
            "content": "Look the order up.",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": '{"order_id":"A-17"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "delivered"}'},
    ]
    assert snap.totals["tokens_in"] == 250 and snap.cycle == 1
    assert snap.state == {"goal": "refund A-17", "memory": "order delivered"}


def test_state_at_prefers_recorded_context(store):
    ingest(store, RUN)
    tl = open_timeline(store, "r1")
    snap = state_at(tl, 12, store)
    # the context recorded at step 9 is what the agent sent to get step 9; step 9 itself is rebuilt after it
    assert snap.context_source == "recorded+rebuilt" and snap.context_seq == 9
    assert snap.context == [
        {"role": "system", "content": "recorded ctx"},
        {"role": "user", "content": "Result of policy: 30 days"},
    ]
    assert snap.agent.origins == [{"source": "recorded", "seq": 9}, {"source": "rebuilt", "seq": 9}]
    assert "1 message as recorded at step 9, then 1 rebuilt from steps 9–9" in snap.agent.note()
    at9 = state_at(tl, 9, store)
    assert at9.context_source == "recorded" and at9.context == [{"role": "system", "content": "recorded ctx"}]
    assert state_at(tl, 8, store).context_source == "rebuilt"  # before the first recorded context
    # a seq inside the gap lands on the next real step
    assert state_at(tl, 10, store).step.seq == 12


def test_tool_error_answers_its_call():
    msgs = rebuild_messages([x for x in RUN if isinstance(x, StepEvent)][:7])
    assert msgs[-1] == {"role": "tool", "tool_call_id": "c2", "content": "policy service timed out"}


def test_result_without_call_id_matches_pending_call_by_tool():
    steps = [
        StepEvent(session_id="r", seq=1, type="tool_call", tool_name="ls", tool_args={"path": "."}),
        StepEvent(session_id="r", seq=2, type="tool_result", tool_name="ls", content="a.py"),
        StepEvent(session_id="r", seq=3, type="observation", content="the page changed"),
    ]
    msgs = rebuild_messages(steps)
    assert msgs[1] == {"role": "tool", "tool_call_id": "call_1", "content": "a.py"}
    assert msgs[2] == {"role": "user", "content": "the page changed"}


def test_find_gaps():
    assert find_gaps([1, 2, 5, 5, 6, 9]) == find_gaps([1, 2, 5, 6, 9])
    assert [g.label for g in find_gaps([1, 3])] == ["step 2 missing"]
    assert find_gaps([]) == []


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from replay_core.understand.snapshot import messages_before  # noqa: E402
from replay_core.understand.timeline import build_timeline  # noqa: E402

KINDS = st.sampled_from(["think", "tool_call", "tool_result", "observation", "decision", "error", "input", "span"])


def generated_steps(spec: list[tuple[str, str | None, bool]]) -> list[StepEvent]:
    """Steps of run "p" from (type, tool, with a call id) triples; call ids pair each two steps."""
    return [
        StepEvent(
            session_id="p",
            event_id=f"e{i}",
            seq=i + 1,
            type=kind,
            tool_name=tool,
            tool_call_id=f"c{i // 2}" if with_id else None,
            content=f"text {i}",
            tool_args={"i": i},
        )
        for i, (kind, tool, with_id) in enumerate(spec)
    ]


@given(st.lists(st.tuples(KINDS, st.sampled_from(["ls", "cat", None]), st.booleans()), max_size=40))
def test_messages_before_is_a_prefix_rebuild_at_every_step(spec):
    """The cut from the one rebuild equals rebuilding the prefix from scratch, everywhere."""
    steps = generated_steps(spec)
    if not steps:
        return
    tl = build_timeline({"id": "p"}, steps)
    for pos in range(len(steps)):
        assert messages_before(tl, pos) == rebuild_messages(steps[:pos])
    assert messages_before(tl, len(steps) - 1) == rebuild_messages(steps[:-1])  # cutting never changes the index


@settings(deadline=None)
@given(
    st.lists(st.tuples(KINDS, st.sampled_from(["ls", "cat", None]), st.booleans()), min_size=7, max_size=40),
    st.lists(st.integers(0, 45), min_size=1, max_size=10),
    st.integers(0, 10),
)
def test_a_state_near_the_start_is_cut_from_a_prefix_while_the_rest_is_rebuilt_behind(spec, positions, released_after):
    """With the whole rebuild held back in its thread, states within PREFIX steps of the start come from the
    prefix's rebuild, a state past it waits for the whole one, and every state equals rebuilding the steps
    before it from scratch, messages and origins alike, before, during and after the thread."""
    import threading
    from unittest import mock

    from replay_core.understand import snapshot

    steps = generated_steps(spec)
    tl = build_timeline({"id": "p"}, steps)
    whole = snapshot._rebuilt_range(build_timeline({"id": "p"}, steps), 0, len(steps))
    release, waited = threading.Event(), []
    rebuild_whole = snapshot._rebuild_whole

    def held_back(timeline, start, end, hurry):
        waited.append(release.wait(timeout=10))
        rebuild_whole(timeline, start, end, hurry)

    with mock.patch.object(snapshot, "PREFIX", 3), mock.patch.object(snapshot, "_rebuild_whole", held_back):
        for i, pos in enumerate(p % len(steps) for p in positions):
            if i == released_after or pos >= 3:  # a state past the prefix waits for the whole rebuild
                release.set()
            got = snapshot.agent_context(tl, pos, behind=True)
            assert got.messages == rebuild_messages(steps[:pos])
            assert (got.messages, got.origins) == whole.cut(pos)
        release.set()
        pending = tl.cache.get(("snapshot pending", 0, len(steps)))
        if pending is not None:
            pending[1].join()
    assert waited in ([], [True])  # the thread ran at most once, and never timed out
    assert ("snapshot", 0, len(steps)) in tl.cache or not waited
    without = build_timeline({"id": "p"}, steps)  # not asked to: the whole range rebuilt at once, no thread
    with mock.patch.object(snapshot, "PREFIX", 3):
        snapshot.agent_context(without, 0)
    assert ("snapshot", 0, len(steps)) in without.cache and ("snapshot pending", 0, len(steps)) not in without.cache


def test_the_whole_rebuild_behind_the_page_equals_the_one_made_at_once():
    """What the thread makes (yielding the GIL as it goes) is the rebuild made in one go."""
    from replay_core.understand import snapshot

    steps = [
        StepEvent(
            session_id="p", event_id=f"e{i}", seq=i + 1, type=kind, tool_name="ls", tool_call_id=f"c{i // 3}", content=f"text {i}"
        )
        for i, kind in enumerate(["think", "tool_call", "tool_result"] * 700)
    ]
    tl = build_timeline({"id": "p"}, steps)
    import threading

    hurry = threading.Event()
    assert snapshot._rebuilt_range(tl, 0, len(steps), hurry=hurry) == snapshot._rebuilt_range(tl, 0, len(steps))


@settings(deadline=None)
@given(
    st.lists(st.tuples(KINDS, st.sampled_from(["ls", "cat", None]), st.booleans()), min_size=1, max_size=40),
    st.data(),
)
def test_a_rebuild_going_on_from_a_checkpoint_equals_one_from_scratch(spec, data):
    """The messages at step p, cut from the cached rebuild at its checkpoint before p and fed the steps
    since (what a replay from p starts with), then fed the steps up to q, equal rebuilding the steps before
    p, then before q, from scratch; what was taken at p, a copy, and the cache never change after."""
    from unittest import mock

    from replay_core.understand import snapshot

    steps = generated_steps(spec)
    tl = build_timeline({"id": "p"}, steps)
    p = data.draw(st.integers(0, len(steps)), label="p")
    q = data.draw(st.integers(p, len(steps)), label="q")
    with mock.patch.object(snapshot, "CHECKPOINT", data.draw(st.sampled_from([1, 3, 128]), label="checkpoint")):
        going = snapshot.agent_context(tl, min(q, len(steps) - 1)).going_on(p)
        assert going.messages == rebuild_messages(steps[:p])
        taken, copy = going.taken(), going.copy()
        going.extend(steps[p:q])
        assert going.messages == rebuild_messages(steps[:q])
        assert taken == copy.messages == rebuild_messages(steps[:p])
        copy.extend(steps[p:q])
        assert copy.messages == going.messages
        assert [messages_before(tl, pos) for pos in range(len(steps))] == [
            rebuild_messages(steps[:pos]) for pos in range(len(steps))
        ]


@settings(deadline=None)
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.dictionaries(st.sampled_from(["goal", "memory", "page"]), st.one_of(st.none(), st.integers(0, 9)), max_size=3),
        ),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from([1, 2, 5, 64]),
)
def test_the_source_state_at_every_step_equals_merging_the_steps_before_it(states, every):
    """state_at's source state, from the index's state every `every` steps with one and the steps since,
    equals merging every step up to n from scratch (source_state), at every step."""
    from unittest import mock

    from replay_core.understand import snapshot

    steps = [
        StepEvent(
            session_id="p",
            event_id=f"e{i}",
            seq=i + 1,
            type="think",
            content=f"text {i}",
            metadata=None if state is None else {"state": state, "other": i},
        )
        for i, state in enumerate(states)
    ]
    with mock.patch.object(snapshot, "STATES", every):
        tl = build_timeline({"id": "p"}, steps)
        for pos in range(len(steps)):
            assert state_at(tl, pos + 1).state == snapshot.source_state(steps[: pos + 1]), pos

"""compare: alignment, first divergence and its kind, per-pair diffs, totals, CLI."""

from __future__ import annotations

import random
from collections import defaultdict
from functools import cache

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from replay_core.cli import app
from replay_core.demo import load_demo, read_demo
from replay_core.events import StepEvent
from replay_core.understand.compare import KINDS, align, compare, compare_steps, lcs_pairs, normalise

A, B = "demo-08-flight-bos-sfo-a", "demo-09-flight-bos-sfo-b"


def demo_runs() -> dict[str, list[StepEvent]]:
    runs: dict[str, list[StepEvent]] = defaultdict(list)
    for ev in read_demo():
        if ev.kind == "step":
            runs[ev.session_id].append(ev)
    return {sid: sorted(steps, key=lambda s: s.seq) for sid, steps in runs.items()}


RUNS = demo_runs()
SMALL_RUNS = sorted(sid for sid, steps in RUNS.items() if len(steps) < 100)


def renumber(steps: list[StepEvent]) -> list[StepEvent]:
    """Seqs 1..n; a step already at its place is kept as it is, not copied."""
    return [s if s.seq == i + 1 else s.model_copy(update={"seq": i + 1}) for i, s in enumerate(steps)]


def lcs_length(a, b) -> int:
    dp = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            dp[i + 1][j + 1] = dp[i][j] + 1 if x == y else max(dp[i][j + 1], dp[i + 1][j])
    return dp[-1][-1]


# ---------------------------------------------------------------------------- alignment


@given(st.lists(st.sampled_from("abcd"), max_size=14), st.lists(st.sampled_from("abcd"), max_size=14))
def test_lcs_pairs_are_a_longest_common_subsequence(a, b):
    pairs = lcs_pairs(a, b)
    assert len(pairs) == lcs_length(a, b)
    assert all(a[i] == b[j] for i, j in pairs)
    assert all(p[0] < q[0] and p[1] < q[1] for p, q in zip(pairs, pairs[1:], strict=False))


@given(st.lists(st.sampled_from("abc"), max_size=12), st.lists(st.sampled_from("abc"), max_size=12))
def test_alignment_rows_cover_both_runs_in_order(a, b):
    rows = align(a, b, a, b)
    assert [i for i, _ in rows if i is not None] == list(range(len(a)))
    assert [j for _, j in rows if j is not None] == list(range(len(b)))


def test_thousands_of_differences_are_still_aligned_exactly():
    """Past the 1,200 edits where a Myers walk in Python used to give way to a greedy one."""
    rng = random.Random(3)
    a = [rng.randrange(40) for _ in range(20_000)]
    b = list(a)
    for i in rng.sample(range(len(b)), 3000):
        b[i] = 1000 + i
    for i in sorted(rng.sample(range(len(b)), 1500), reverse=True):
        del b[i]
    for i in rng.sample(range(len(b)), 1500):
        b.insert(i, -i)
    pairs = lcs_pairs(a, b)
    assert all(a[i] == b[j] for i, j in pairs)
    assert all(p[0] < q[0] and p[1] < q[1] for p, q in zip(pairs, pairs[1:], strict=False))
    # every untouched step is matched: an LCS at least as long as the steps no edit reached
    assert len(pairs) >= len(a) - 3000 - 1500
    rows = align(a, b, a, b)
    assert [i for i, _ in rows if i is not None] == list(range(len(a)))
    assert [j for _, j in rows if j is not None] == list(range(len(b)))


def test_a_dropped_repeat_at_the_end_is_reported_at_the_end():
    """Ties between equally long alignments go to the common prefix: the extra step is the last one."""
    rows = align(["x", "x", "x"], ["x", "x"], ["x", "x", "x"], ["x", "x"])
    assert rows == [(0, 0), (1, 1), (2, None)]


@given(st.sampled_from(SMALL_RUNS), st.sampled_from(SMALL_RUNS), st.sampled_from([(), ("tokens",), ("ids", "timing")]))
def test_a_rows_sameness_is_its_normalised_fields_equal(sid_a, sid_b, include):
    """Rows whose keys are equal skip normalising: their verdict must be what normalising says."""
    result = compare_steps(renumber(RUNS[sid_a]), renumber(RUNS[sid_b]), {"id": "a"}, {"id": "b"}, include=include)
    for row in result.rows:
        if row.paired:
            fresh_a, fresh_b = normalise(row.a, include), normalise(row.b, include)
            assert row.same == (fresh_a == fresh_b)
            assert set(row.changed) == {k for k in fresh_a if fresh_a[k] != fresh_b[k]}
        else:
            assert not row.same and row.changed == ()


# ---------------------------------------------------------------------------- the demo pair


def test_demo_pair_diverges_at_step_6_with_different_arguments(demo):
    result = compare(demo, A, B)
    div = result.first_divergence
    assert (div.a_seq, div.b_seq, div.kind) == (6, 6, "different arguments")
    assert div.summary == (
        "Step 6: both called search_flights, with different arguments — depart_date: A “2026-12-17”, B “2025-12-17”; "
        "return_date: A “2026-12-21”, B “2025-12-21”."
    )
    assert [r.kind for r in result.rows] == [
        None,
        None,
        None,
        None,
        None,
        "different arguments",
        "different result",
        "different text",
        "missing step",
        "missing step",
        "different text",
    ]
    assert result.only_a == [9, 10] and result.only_b == []
    assert result.rows[5].diff == (
        "Value of ['tool_args']['depart_date'] changed from \"2026-12-17\" to \"2025-12-17\".\n"
        "Value of ['tool_args']['return_date'] changed from \"2026-12-21\" to \"2025-12-21\"."
    )
    assert result.totals["a"]["steps"] == 11 and result.totals["b"]["steps"] == 9
    assert result.totals["a"]["status"] == "succeeded" and result.totals["b"]["error_class"] == "InvalidArgument"
    assert result.totals["a"]["cycles"] == 3
    a_steps = demo.load_steps(A)
    assert result.totals["a"]["tokens_in"] == sum(s.tokens_in or 0 for s in a_steps)
    assert result.totals["a"]["cost_usd"] == round(sum(s.cost_usd or 0 for s in a_steps), 6)


def test_a_run_compared_with_itself_has_no_divergence(demo):
    result = compare(demo, A, A)
    assert result.first_divergence is None
    assert all(r.same for r in result.rows) and len(result.rows) == 11


def test_unknown_session_and_unknown_field_group(demo):
    with pytest.raises(KeyError):
        compare(demo, A, "nope")
    with pytest.raises(ValueError, match="include: unknown field group 'colour'"):
        compare(demo, A, B, include=["colour"])


def test_ids_times_tokens_and_costs_are_ignored_unless_asked():
    steps = RUNS[A]
    other = [
        s.model_copy(
            update={
                "event_id": f"x{s.seq}",
                "duration_ms": 1.0,
                "cost_usd": 9.0,
                "tokens_in": s.tokens_in and s.tokens_in + 1,
                "tool_call_id": "other",
                "model": "another-model",
            }
        )
        for s in steps
    ]
    session_a, session_b = {"id": "a", "status": "succeeded"}, {"id": "b", "status": "succeeded"}
    assert compare_steps(steps, other, session_a, session_b).first_divergence is None
    asked = compare_steps(steps, other, session_a, session_b, include=["tokens"]).first_divergence
    assert (asked.a_seq, asked.kind) == (2, "different text")  # the first step with tokens


def test_same_steps_different_outcome():
    steps = RUNS[A]
    div = compare_steps(
        steps, steps, {"id": "a", "status": "succeeded"}, {"id": "b", "status": "failed", "error_class": "Boom"}
    ).first_divergence
    assert (div.a_seq, div.b_seq, div.kind) == (None, None, "different outcome")
    assert div.summary == "Every step matches, but A ended succeeded and B ended failed (Boom)."
    running = compare_steps(steps, steps, {"id": "a", "status": "running"}, {"id": "b", "status": "failed"})
    assert running.first_divergence is None  # a run still going has no outcome to compare


def test_a_call_of_another_tool_is_a_different_tool():
    steps = RUNS[A]
    swapped = [s.model_copy(update={"tool_name": "search_trains"}) if s.seq in (6, 7) else s for s in steps]
    div = compare_steps(steps, swapped, {"id": "a"}, {"id": "b"}).first_divergence
    assert (div.a_seq, div.b_seq, div.kind) == (6, 6, "different tool")
    assert div.summary.startswith("Step 6: A called search_flights(") and "; B called search_trains(" in div.summary


# ---------------------------------------------------------------------------- property: change step k


MUTATIONS = ("arguments", "result", "text", "drop", "insert")
EXPECTED_KIND = {
    "arguments": "different arguments",
    "result": "different result",
    "text": "different text",
    "drop": "missing step",
    "insert": "extra step",
}
ELIGIBLE = {
    "arguments": lambda s: s.type == "tool_call" and isinstance(s.tool_args, dict),
    "result": lambda s: s.type == "tool_result",
    "text": lambda s: s.type in ("think", "decision", "input"),
    "drop": lambda s: True,
    "insert": lambda s: True,
}


def mutate(steps: list[StepEvent], k: int, how: str) -> list[StepEvent]:
    """The run with step at position k changed; seqs renumbered as a recorder would."""
    out = list(steps)
    step = out[min(k, len(out) - 1)]
    if how == "arguments":
        out[k] = step.model_copy(update={"tool_args": {**step.tool_args, "page": 2}})
    elif how == "result":
        out[k] = step.model_copy(update={"content": (step.content or "") + " (stale copy)"})
    elif how == "text":
        out[k] = step.model_copy(update={"content": "A different thought entirely."})
    elif how == "drop":
        del out[k]
    else:
        out.insert(k, StepEvent(session_id=step.session_id, seq=step.seq, type="think", content="An extra look first."))
    return renumber(out)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SMALL_RUNS), st.sampled_from(MUTATIONS), st.integers(min_value=0, max_value=10_000))
def test_changing_step_k_puts_the_first_divergence_at_k(sid, how, pick):
    steps = renumber(RUNS[sid])
    candidates = [i for i, s in enumerate(steps) if ELIGIBLE[how](s)]
    if how == "insert":
        candidates.append(len(steps))
    assume(candidates)
    k = candidates[pick % len(candidates)]
    changed = mutate(steps, k, how)
    div = compare_steps(steps, changed, {"id": "a"}, {"id": "b"}).first_divergence
    expected_a = k
    if how == "drop":  # dropping one of identical neighbours reads as dropping the last of them
        norms = [normalise(s) for s in steps]
        while expected_a + 1 < len(steps) and norms[expected_a + 1] == norms[expected_a]:
            expected_a += 1
    assert div.kind == EXPECTED_KIND[how] and div.kind in KINDS
    if how == "insert":
        assert div.b_seq == k + 1
        assert div.a_seq == (k + 1 if k < len(steps) else None)
    else:
        assert div.a_seq == expected_a + 1
        if how != "drop":
            assert div.b_seq == k + 1


@pytest.mark.parametrize("k", [0, 1, 2, 1000, 2998, 2999, 4998, 4999])
@pytest.mark.parametrize("how", MUTATIONS)
def test_long_runs_diverge_at_k_too(how, k):
    steps = list(long_run(5000, k))
    if how != "insert":  # the eligible step nearest to k
        k = min((i for i, s in enumerate(steps) if ELIGIBLE[how](s)), key=lambda i: abs(i - k))
    div = compare_steps(steps, mutate(steps, k, how), {"id": "a"}, {"id": "b"}).first_divergence
    assert (div.a_seq, div.kind) == (k + 1, EXPECTED_KIND[how])


@cache
def long_run(n: int, seed: int) -> tuple[StepEvent, ...]:
    """A run of n steps, built once for the five ways each position is changed."""
    rng = random.Random(seed)
    kinds = ["think", "tool_call", "tool_result", "decision"]
    out = []
    for i in range(n):
        kind = kinds[i % 4]
        fields = {"content": f"step {i}: {rng.random():.6f}"}
        if kind in ("tool_call", "tool_result"):
            fields = {
                "tool_name": "lookup",
                "tool_args": {"row": i - (i % 4)},
                "content": None if kind == "tool_call" else f"row {i}",
            }
        out.append(StepEvent(session_id="long", seq=i + 1, type=kind, **fields))
    return tuple(out)


# ---------------------------------------------------------------------------- CLI


def test_cli_compare_json(sqlite_store):
    load_demo(sqlite_store, only_if_empty=False)
    res = CliRunner().invoke(app, ["compare", A, B, "--json", "--db", sqlite_store.url])
    assert res.exit_code == 0, res.output
    body = orjson.loads(res.stdout)
    assert body["first_divergence"]["a_seq"] == 6 and body["first_divergence"]["b_seq"] == 6
    assert body["first_divergence"]["kind"] == "different arguments"
    assert body["first_divergence"]["summary"].startswith("Step 6: both called search_flights")
    assert [(r["a_seq"], r["b_seq"], r["same"]) for r in body["aligned"]][4:7] == [(5, 5, True), (6, 6, False), (7, 7, False)]
    assert body["aligned"][5]["diff"].startswith("Value of ['tool_args']['depart_date'] changed")
    assert body["only_a"] == [9, 10] and body["only_b"] == []
    assert body["totals"]["a"]["steps"] == 11 and body["totals"]["b"]["status"] == "failed"


def test_cli_compare_human_and_errors(sqlite_store):
    load_demo(sqlite_store, only_if_empty=False)
    res = CliRunner().invoke(app, ["compare", A, A, "--db", sqlite_store.url])
    assert res.exit_code == 0 and "no divergence: same steps, same outcome" in res.stdout
    res = CliRunner().invoke(app, ["compare", A, "nope", "--db", sqlite_store.url])
    assert res.exit_code == 1 and type(res.exception).__name__ == "CliError" and str(res.exception) == "no such session: nope"


# ---------------------------------------------------------------------------- what one recording keeps and another cannot


def _empty_thought(step: StepEvent) -> StepEvent:
    return StepEvent(session_id=step.session_id, seq=step.seq, type="think", content="", model="m", tokens_in=5)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SMALL_RUNS), st.integers(min_value=0, max_value=10_000), st.booleans(), st.sampled_from(["", None, " \n"]))
def test_a_thought_without_text_on_one_side_only_is_no_divergence(sid, pick, on_a, text):
    """A model call that only asked for tools leaves a textless thought in one recording and none in
    another (a replay): wherever it sits, on either side, the runs did the same."""
    steps = RUNS[sid]
    k = pick % (len(steps) + 1)
    anchor = steps[min(k, len(steps) - 1)]
    more = renumber([*steps[:k], _empty_thought(anchor).model_copy(update={"content": text}), *steps[k:]])
    a, b = (more, steps) if on_a else (steps, more)
    assert compare_steps(a, b, {"id": "a"}, {"id": "b"}).first_divergence is None


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SMALL_RUNS), st.integers(min_value=0, max_value=10_000))
def test_a_real_divergence_next_to_a_textless_thought_is_still_found(sid, pick):
    """The textless thought is passed over, the step after it is not: a call dropped behind it is missing."""
    steps = RUNS[sid]
    calls = [i for i, s in enumerate(steps) if s.type == "tool_call"]
    assume(calls)
    k = calls[pick % len(calls)]
    recorded = renumber([*steps[:k], _empty_thought(steps[k]), *steps[k:]])
    replayed = renumber([*steps[:k], *steps[k + 1 :]])
    div = compare_steps(recorded, replayed, {"id": "a"}, {"id": "b"}).first_divergence
    assert div is not None and div.a_seq == k + 2 and div.kind in ("missing step", "different tool"), div


def test_a_textless_thought_against_a_thought_with_text_is_a_divergence():
    steps = RUNS[A]
    k = next(i for i, s in enumerate(steps) if s.type == "tool_call")
    a = renumber([*steps[:k], _empty_thought(steps[k]), *steps[k:]])
    b = renumber([*steps[:k], _empty_thought(steps[k]).model_copy(update={"content": "Let me search."}), *steps[k:]])
    div = compare_steps(a, b, {"id": "a"}, {"id": "b"}).first_divergence
    assert (div.a_seq, div.kind) == (k + 1, "different text")
    assert div.summary == f"Step {k + 1}: A thought “”; B thought “Let me search.”."


def test_span_identity_is_not_behaviour_but_other_metadata_is():
    steps = RUNS[A]
    traced = [s.model_copy(update={"metadata": {**(s.metadata or {}), "otel": {"span_id": f"{s.seq:016x}"}}}) for s in steps]
    assert compare_steps(steps, traced, {"id": "a"}, {"id": "b"}).first_divergence is None
    approved = [s.model_copy(update={"metadata": {**(s.metadata or {}), "approval": True}}) if s.seq == 3 else s for s in steps]
    div = compare_steps(steps, approved, {"id": "a"}, {"id": "b"}).first_divergence
    assert (div.a_seq, div.kind) == (3, "different text") and "metadata" in div.summary


def test_a_live_replay_is_compared_without_the_sources_metadata():
    """A live model's steps say only where they came from; the source's span attributes are not
    something it could reproduce. Between two recordings the same metadata difference counts."""
    steps = [s.model_copy(update={"metadata": {"attributes": {"input.mime_type": "text/plain"}}}) for s in RUNS[A]]
    live = [s.model_copy(update={"metadata": {"live": True}}) for s in RUNS[A]]
    assert compare_steps(steps, live, {"id": "a"}, {"id": "b"}).first_divergence is None
    recorded = [s.model_copy(update={"metadata": {"recorded": True}}) for s in RUNS[A]]
    div = compare_steps(steps, recorded, {"id": "a"}, {"id": "b"}).first_divergence
    assert div is not None and div.a_seq == 1 and "metadata" in div.summary

"""A sentence per group of decision cycles (understand/cycle_groups.py): on demo runs, and as properties."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from replay_core.demo import load_demo
from replay_core.events import StepEvent
from replay_core.understand.cycle_groups import MAX_GROUPS, CycleGroup, action, cycle_groups, story
from replay_core.understand.cycles import group_cycles
from replay_core.understand.timeline import columns_of, open_timeline


def test_demo_runs_are_told_a_group_at_a_time(sqlite_store):
    load_demo(sqlite_store, only_if_empty=False)
    coding = open_timeline(sqlite_store, "demo-02-coding-format-price-failed")
    assert story(coding.columns, coding.cycles) == [
        "Steps 2–4: searched code once.",
        "Steps 5–7: read file once.",
        "Steps 8–10: wrote file once.",
        "Steps 11–15: edited file twice.",
        "Steps 16–18: ran tests once (failed).",
        "Steps 19–21: edited file once.",
        "Steps 22–23: ran tests once (failed).",
        "Steps 24–25: reasoned without calling a tool; 1 error recorded.",
    ]
    sql = open_timeline(sqlite_store, "demo-12-sql-churn-by-plan-failed")
    assert story(sql.columns, sql.cycles)[0] == "Steps 2–11: ran sql three times (failed every time); 1 error recorded."
    retries = open_timeline(sqlite_store, "demo-03-shipment-status-retries")
    assert "Steps 5–12: called http_get three times (failed twice); 1 error recorded." in story(retries.columns, retries.cycles)
    long = open_timeline(sqlite_store, "demo-07-crm-migration-batch7")
    told = story(long.columns, long.cycles)
    groups = cycle_groups(long.columns, long.cycles)
    assert len(told) == MAX_GROUPS + 1 and len(groups) > MAX_GROUPS  # the rest is counted, not dropped
    rest = groups[MAX_GROUPS:]
    assert told[-1].startswith(f"Steps {rest[0].first_seq}–{rest[-1].last_seq}: {len(rest)} more groups of cycles")


def test_verbs_come_from_the_tool_name():
    assert action("search_flights") == "searched flights"
    assert action("browser.click") == "clicked"
    assert action("Bash") == "ran shell commands"
    assert action("getTravelerProfile") == "got traveler profile"
    assert action("tms_lookup") == "called tms_lookup"


KINDS = ["think", "tool_call", "tool_result", "decision", "error", "input", "observation"]
step_specs = st.lists(
    st.tuples(st.sampled_from(KINDS), st.sampled_from(["a_tool", "search_x", None]), st.booleans()), max_size=60
)


@settings(deadline=None)
@given(step_specs)
def test_groups_cover_every_cycle_once_and_count_every_call(specs):
    steps = [
        StepEvent(
            session_id="s",
            seq=i + 1,
            type=kind,
            tool_name=tool if kind.startswith("tool") else None,
            status="error" if failed and kind in ("tool_result", "error") else "ok",
        )
        for i, (kind, tool, failed) in enumerate(specs)
    ]
    cycles = group_cycles(steps)
    groups = cycle_groups(columns_of(steps), cycles)
    assert sum(g.cycles for g in groups) == len(cycles)
    assert [g.first_seq for g in groups] == sorted(g.first_seq for g in groups)
    assert all(a.last_seq < b.first_seq for a, b in pairwise(groups))
    in_cycles = [steps[p] for c in cycles for p in c.positions]
    calls = sum(1 for s in in_cycles if s.type == "tool_call" and s.tool_name)
    counted = sum(n for g in groups for n in g.calls.values())
    # a group with no tool_call step counts its results instead
    assert counted >= calls
    for g in groups:
        assert all(
            g.failures.get(t, 0) <= sum(1 for s in in_cycles if s.tool_name == t and g.first_seq <= s.seq <= g.last_seq)
            for t in g.tools
        )
        members = [s for s in in_cycles if g.first_seq <= s.seq <= g.last_seq]
        counted_kinds = ("tool_call",) if any(s.type == "tool_call" for s in members) else ("tool_result", "observation")
        assert g.calls == {t: sum(1 for s in members if s.tool_name == t and s.type in counted_kinds) for t in g.tools}
        failed = [s for s in members if s.type == "error" or s.status in ("error", "blocked")]
        assert g.errors == sum(1 for s in failed if s.tool_name not in g.tools)
        assert g.failures == {
            t: n for t in g.tools if (n := sum(1 for s in failed if s.tool_name == t and s.type != "tool_call"))
        }
        assert g.sentence.startswith(f"Step {g.first_seq}" if g.first_seq == g.last_seq else f"Steps {g.first_seq}–{g.last_seq}")
    assert len(story(columns_of(steps), cycles)) == min(len(groups), MAX_GROUPS) + (len(groups) > MAX_GROUPS)


def _groups_of_steps(steps: list[StepEvent], cycles) -> list[CycleGroup]:
    """The grouping over step objects that cycle_groups replaced, verbatim but for its helper's name."""
    counted = []
    for cycle in cycles:
        called: dict = {}
        answered: dict = {}
        failed: dict = {}
        failed_results: dict = {}
        for p in cycle.positions:
            s = steps[p]
            kind, name = s.type, s.tool_name
            if kind == "tool_call":
                called[name] = called.get(name, 0) + 1
            elif kind in ("tool_result", "observation"):
                answered[name] = answered.get(name, 0) + 1
            if s.type == "error" or s.status in ("error", "blocked"):
                failed[name] = failed.get(name, 0) + 1
                if kind != "tool_call":
                    failed_results[name] = failed_results.get(name, 0) + 1
        named = called if called else answered
        counted.append((cycle, tuple(t for t in named if t), called, answered, failed, failed_results))
    runs: list[list] = []
    keys: list[frozenset] = []
    for c in counted:
        key = frozenset(c[1])
        if runs and keys[-1] == key:
            runs[-1].append(c)
        else:
            runs.append([c])
            keys.append(key)
    out = []
    for group in runs:
        tools = tuple(dict.fromkeys(t for c in group for t in c[1]))
        any_call = any(c[2] for c in group)
        calls = {t: sum((c[2] if any_call else c[3]).get(t, 0) for c in group) for t in tools}
        failures = {t: n for t in tools if (n := sum(c[5].get(t, 0) for c in group))}
        errors = sum(n for c in group for name, n in c[4].items() if name not in calls)
        out.append(CycleGroup(group[0][0].first_seq, group[-1][0].last_seq, len(group), tools, calls, failures, errors))
    return out


def _story_of_steps(steps: list[StepEvent], cycles) -> list[str]:
    """The story over step objects, as it was told before it was counted from columns."""
    groups = _groups_of_steps(steps, cycles)
    lines = [g.sentence for g in groups[:MAX_GROUPS]]
    rest = groups[MAX_GROUPS:]
    if rest:
        calls = sum(sum(g.calls.values()) for g in rest)
        lines.append(
            f"Steps {rest[0].first_seq}–{rest[-1].last_seq}: {len(rest)} more groups of cycles "
            f"({sum(g.cycles for g in rest)} cycles, {calls} tool call{'s' if calls != 1 else ''}), not told one by one."
        )
    return lines


_TOLD_TOOLS = ["a_tool", "search_x", "run_b", "", None]
_told_step = st.tuples(st.sampled_from(KINDS), st.sampled_from(_TOLD_TOOLS), st.sampled_from(["ok", "ok", "error", "blocked"]))
# a think then a step past it opens each cycle, so that runs have more groups than are told (MAX_GROUPS) often
_told_cycles = st.lists(
    st.tuples(st.sampled_from(_TOLD_TOOLS), st.lists(_told_step, max_size=3)).map(
        lambda c: [("think", None, "ok"), ("tool_call", c[0], "ok"), *c[1]]
    ),
    max_size=30,
)


@settings(deadline=None)
@given(_told_cycles | st.lists(_told_step, max_size=60).map(lambda steps: [steps]))  # or steps in any order
def test_the_story_from_columns_is_the_story_from_steps(cycles_of_specs):
    specs = [spec for cycle in cycles_of_specs for spec in cycle]
    steps = [
        StepEvent(session_id="s", seq=i + 1, type=kind, tool_name=tool, status=status)
        for i, (kind, tool, status) in enumerate(specs)
    ]
    cycles = group_cycles(steps)
    assert cycle_groups(columns_of(steps), cycles) == _groups_of_steps(steps, cycles)
    assert story(columns_of(steps), cycles) == _story_of_steps(steps, cycles)

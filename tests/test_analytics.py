"""Analytics on a small fixed dataset, with every expected number worked out by hand
(comments show the arithmetic), on SQLite and PostgreSQL; then on the demo runs."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest
from cli_helpers import Ran, run_program
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from replay_core.cli import understand as cli_understand
from replay_core.cli.output import make_console
from replay_core.demo import load_demo
from replay_core.events import parse_event
from replay_core.ingest.pipeline import ingest
from replay_core.storage.store import HAS_FLAGS, SessionFilter
from replay_core.understand import analytics
from replay_core.understand.compare import compare
from replay_core.understand.timeline import count_cycles

T0 = datetime(2026, 5, 1, tzinfo=UTC)


def at(day: int, hour: int, second: int = 0) -> str:
    return (T0 + timedelta(days=day - 1, hours=hour, seconds=second)).isoformat()


def session(sid, day, hour, **fields):
    return {"kind": "session", "session_id": sid, "started_at": at(day, hour), **fields}


def step(sid, seq, kind, day, hour, second, **fields):
    return {
        "kind": "step",
        "session_id": sid,
        "event_id": f"{sid}-{seq}",
        "seq": seq,
        "type": kind,
        "timestamp": at(day, hour, second),
        **fields,
    }


def end(sid, status, day, hour, second, **fields):
    return {"kind": "session_end", "session_id": sid, "status": status, "ended_at": at(day, hour, second), **fields}


FALLBACK = {"block": "fallback", "success": True}

# A: succeeded in 10 s; an approval; `search` called twice with the same arguments, the second
#    time after an ok result (one redundant call); cycles 0-1-2 | 1-2-4 = 2.
RUN_A = [
    session("a", 1, 10, model="gpt-4o", agent_id="bot-1", environment="prod", tags=["x", "y"]),
    step("a", 1, "input", 1, 10, 0, content="go", metadata={"approval": True}),
    step("a", 2, "think", 1, 10, 1, duration_ms=100, tokens_in=100, tokens_out=10, cost_usd=0.01),
    step("a", 3, "tool_call", 1, 10, 2, duration_ms=10, tool_name="search", tool_args={"q": "a"}, tool_call_id="c1"),
    step("a", 4, "tool_result", 1, 10, 3, duration_ms=200, tool_name="search", tool_call_id="c1"),
    step("a", 5, "tool_call", 1, 10, 4, duration_ms=10, tool_name="search", tool_args={"q": "a"}, tool_call_id="c2"),
    step("a", 6, "tool_result", 1, 10, 5, duration_ms=200, tool_name="search", tool_call_id="c2"),
    step("a", 7, "decision", 1, 10, 6, duration_ms=50, tokens_in=50, tokens_out=5, cost_usd=0.005),
    end("a", "succeeded", 1, 10, 10),
]
# B: failed (Boom) in 20 s; `fetch` fails, is retried and fails again (2 retried steps, 2 tool
#    failures); first error 5 s after the start; cycles 0-1-2 | 1-2-e = 2; the retry is no loop.
RUN_B = [
    session("b", 1, 12, model="gpt-4o", agent_id="bot-2", environment="prod", tags=["x"]),
    step("b", 1, "think", 1, 12, 1, duration_ms=300, tokens_in=200, tokens_out=20, cost_usd=0.02),
    step("b", 2, "tool_call", 1, 12, 2, duration_ms=10, tool_name="fetch", tool_args={"u": 1}, tool_call_id="c1"),
    step(
        "b",
        3,
        "tool_result",
        1,
        12,
        5,
        duration_ms=1000,
        tool_name="fetch",
        tool_call_id="c1",
        status="error",
        error_class="TimeoutError",
    ),
    step("b", 4, "tool_call", 1, 12, 6, duration_ms=10, tool_name="fetch", tool_args={"u": 1}, tool_call_id="c1r", retry=1),
    step(
        "b",
        5,
        "tool_result",
        1,
        12,
        7,
        duration_ms=1000,
        tool_name="fetch",
        tool_call_id="c1r",
        retry=1,
        status="error",
        error_class="TimeoutError",
    ),
    step("b", 6, "error", 1, 12, 8, duration_ms=0, status="error", error_class="Boom", content="gave up"),
    end("b", "failed", 1, 12, 20, error_class="Boom"),
]
# C: succeeded in 30 s; tokens and cost only as session totals; a fallback block the agent took
#    over; `grep` three times with the same arguments (a loop; calls 2 and 3 redundant), the
#    third blocked; cycles 1-2 | 1-2 | 1-2-4 = 3. Written last step first: order comes from seq.
RUN_C = [
    session(
        "c",
        2,
        9,
        model="claude",
        agent_id="bot-1",
        environment="dev",
        metadata={"tokens_in": 1000, "tokens_out": 100, "cost_usd": 0.5},
    ),
    *reversed(
        [
            step("c", 1, "span", 2, 9, 0, duration_ms=5000, metadata={**FALLBACK, "agent_invoked": True}),
            step(
                "c",
                2,
                "tool_call",
                2,
                9,
                1,
                duration_ms=10,
                tool_name="grep",
                tool_args={"p": "x"},
                tool_call_id="c1",
                parent_id="c-1",
            ),
            step("c", 3, "tool_result", 2, 9, 2, duration_ms=20, tool_name="grep", tool_call_id="c1", parent_id="c-1"),
            step(
                "c",
                4,
                "tool_call",
                2,
                9,
                3,
                duration_ms=10,
                tool_name="grep",
                tool_args={"p": "x"},
                tool_call_id="c2",
                parent_id="c-1",
            ),
            step("c", 5, "tool_result", 2, 9, 4, duration_ms=20, tool_name="grep", tool_call_id="c2", parent_id="c-1"),
            step(
                "c",
                6,
                "tool_call",
                2,
                9,
                5,
                duration_ms=10,
                tool_name="grep",
                tool_args={"p": "x"},
                tool_call_id="c3",
                parent_id="c-1",
            ),
            step(
                "c",
                7,
                "tool_result",
                2,
                9,
                6,
                duration_ms=40,
                tool_name="grep",
                tool_call_id="c3",
                status="blocked",
                parent_id="c-1",
            ),
            step("c", 8, "decision", 2, 9, 7, duration_ms=60, parent_id="c-1"),
        ]
    ),
    end("c", "succeeded", 2, 9, 30),
]
# D: still running; a fallback block the script handled; a priced model without a price (cost unknown).
RUN_D = [
    session("d", 2, 10, model="claude", agent_id="bot-2", environment="dev", tags=["y"]),
    step("d", 1, "span", 2, 10, 1, duration_ms=100, metadata={**FALLBACK, "agent_invoked": False}),
    step("d", 2, "think", 2, 10, 2, duration_ms=400, tokens_in=300, tokens_out=30),
]
# E: incomplete (no end event); its duration runs to its last event, 4 s after the start.
RUN_E = [
    session("e", 2, 11, model="gpt-4o", agent_id="bot-1", environment="prod", status="incomplete"),
    step("e", 1, "think", 2, 11, 4, duration_ms=500, tokens_in=10, tokens_out=1, cost_usd=0.001),
]
RUNS = [RUN_A, RUN_B, RUN_C, RUN_D, RUN_E]


@pytest.fixture
def fixed(store):
    ingest(store, [parse_event({"schema": "agent-replay/v1", **obj}) for run in RUNS for obj in run], source="test")
    return store


@pytest.fixture
def data(fixed):
    return analytics.load(fixed)


def rows(frame: pl.DataFrame) -> list[dict]:
    return frame.to_dicts()


def test_per_run_facts(data):
    runs = data.runs.sort("session_id")
    assert runs["session_id"].to_list() == ["a", "b", "c", "d", "e"]
    assert runs["duration_ms"].to_list() == [10_000, 20_000, 30_000, None, 4_000]
    assert runs["first_error_ms"].to_list() == [None, 5_000, None, None, None]
    assert runs["cycles"].to_list() == [2, 2, 3, 1, 1]
    assert runs["loops"].to_list() == [0, 0, 1, 0, 0]
    assert runs["redundant_calls"].to_list() == [1, 0, 2, 0, 0]
    assert runs["tokens_in"].to_list() == [150, 200, 1000, 300, 10]
    assert runs["cost_known"].to_list() == [True, True, True, False, True]
    assert runs["tool_calls"].to_list() == [2, 2, 3, 0, 0]
    assert runs["tool_failures"].to_list() == [0, 2, 0, 0, 0]


def test_cycles_agree_with_the_timeline(fixed, data):
    expected = count_cycles(fixed, fixed.session_ids())
    assert dict(zip(data.runs["session_id"], data.runs["cycles"], strict=True)) == expected


def test_headline(data):
    (row,) = rows(analytics.headline(data))
    assert row == {
        "runs": 5,
        "success_rate": 0.5,  # a and c of the 4 runs not still running
        "p50_ms": 15_000.0,  # durations 4000 10000 20000 30000: halfway between 10000 and 20000
        "p95_ms": pytest.approx(28_500.0),  # position 3 × 0.95 = 2.85 → 20000 + 0.85 × 10000
        "tokens_in": 1660,  # 150 + 200 + 1000 (session total) + 300 + 10
        "tokens_out": 166,
        "cost_usd": pytest.approx(0.536),  # 0.015 + 0.02 + 0.5 + 0.001; d's cost is unknown
        "retry_rate": 0.2,  # b
        "tool_failure_rate": pytest.approx(2 / 7),  # fetch failed twice; 2 + 2 + 3 calls
        "fallback_rate": 0.5,  # c's block took the agent, d's did not
    }


def test_volume_by_model_and_by_day(data):
    assert rows(analytics.volume(data, "model")) == [
        {
            "model": "claude",
            "runs": 2,
            "succeeded": 1,
            "failed": 0,
            "incomplete": 0,
            "unknown": 0,
            "running": 1,
            "success_rate": 1.0,
        },
        {
            "model": "gpt-4o",
            "runs": 3,
            "succeeded": 1,
            "failed": 1,
            "incomplete": 1,
            "unknown": 0,
            "running": 0,
            "success_rate": pytest.approx(1 / 3),
        },
    ]
    by_day = analytics.volume(data, "day")
    assert by_day["day"].to_list() == [T0, T0 + timedelta(days=1)]
    assert by_day.select("runs", "succeeded", "failed", "incomplete", "running").rows() == [(2, 1, 1, 0, 0), (3, 1, 0, 1, 1)]


def test_volume_by_hour_and_status(data):
    assert analytics.volume(data, "hour")["hour"].to_list() == [T0 + timedelta(hours=h) for h in (10, 12, 33, 34, 35)]
    assert analytics.volume(data, "status").select("status", "runs").rows() == [
        ("failed", 1),
        ("incomplete", 1),
        ("running", 1),
        ("succeeded", 2),
    ]


def test_by_tag_counts_a_run_under_each_tag(data):
    assert analytics.headline(data, "tag").select("tag", "runs", "success_rate").rows() == [
        ("x", 2, 0.5),
        ("y", 2, 1.0),
        (None, 2, 0.5),
    ]  # x: a b; y: a d(running); untagged: c e(incomplete)


def test_durations(data):
    (row,) = rows(analytics.durations(data))
    assert row == {
        "runs": 5,
        "duration_p50_ms": 15_000.0,
        "duration_p95_ms": pytest.approx(28_500.0),
        "duration_p99_ms": pytest.approx(29_700.0),  # 2.97 → 20000 + 0.97 × 10000
        "runs_with_error": 1,
        "first_error_p50_ms": 5_000.0,
        "first_error_p95_ms": 5_000.0,
        "first_error_p99_ms": 5_000.0,
    }


def test_step_latency(data):
    # 23 step durations; sorted: 0, 10 ×7, 20, 20, 40, 50, 60, 100, 100, 200, 200, 300, 400, 500, 1000, 1000, 5000
    (row,) = rows(analytics.step_latency(data))
    assert row == {"steps": 23, "p50_ms": 50.0, "p95_ms": 1000.0, "p99_ms": pytest.approx(4120.0)}  # 21.78 → 1000 + 0.78 × 4000
    assert rows(analytics.step_latency(data, "model")) == [
        # 10 10 10 20 20 40 60 100 400 5000: 4.5 → 30; 8.55 → 400 + 0.55 × 4600; 8.91 → 400 + 0.91 × 4600
        {"model": "claude", "steps": 10, "p50_ms": 30.0, "p95_ms": pytest.approx(2930.0), "p99_ms": pytest.approx(4586.0)},
        # 0 10 10 10 10 50 100 200 200 300 500 1000 1000: 6 → 100; 11.4 and 11.88 → 1000
        {"model": "gpt-4o", "steps": 13, "p50_ms": 100.0, "p95_ms": 1000.0, "p99_ms": 1000.0},
    ]


def test_usage(data):
    (row,) = rows(analytics.usage(data))
    assert row == {
        "runs": 5,
        "tokens_in": 1660,
        "tokens_out": 166,
        "cost_usd": pytest.approx(0.536),
        "runs_cost_unknown": 1,
        "tokens_in_per_run": 332.0,
        "tokens_out_per_run": pytest.approx(33.2),
        "cost_per_run": pytest.approx(0.134),  # 0.536 over the 4 runs whose cost is known
    }
    by_agent = analytics.usage(data, "agent").select("agent", "tokens_in", "cost_usd", "runs_cost_unknown").rows()
    assert by_agent == [("bot-1", 1160, pytest.approx(0.516), 0), ("bot-2", 500, pytest.approx(0.02), 1)]


def test_retries_interventions_fallbacks_loops(data):
    assert rows(analytics.retries(data)) == [{"runs": 5, "runs_with_retry": 1, "retry_rate": 0.2, "retried_steps": 2}]
    assert rows(analytics.interventions(data)) == [
        {"runs": 5, "blocked_steps": 1, "approvals": 1, "runs_with_intervention": 2, "intervention_rate": 0.4}
    ]
    assert rows(analytics.fallbacks(data)) == [
        {"runs": 5, "blocks": 2, "agent_invoked": 1, "fallback_rate": 0.5, "runs_with_fallback": 1}
    ]
    assert rows(analytics.loops(data)) == [
        {"runs": 5, "cycles": 9, "cycles_per_run": 1.8, "loops": 1, "runs_with_loops": 1, "redundant_calls": 3}
    ]
    assert analytics.fallbacks(data, "environment").select("environment", "blocks", "fallback_rate").rows() == [
        ("dev", 2, 0.5),
        ("prod", 0, None),
    ]


def test_tools_and_error_classes(data):
    assert rows(analytics.tools(data)) == [
        {"tool_name": "fetch", "calls": 2, "failures": 2, "failure_rate": 1.0, "runs_with_failure": 1},
        {"tool_name": "grep", "calls": 3, "failures": 0, "failure_rate": 0.0, "runs_with_failure": 0},  # blocked is no failure
        {"tool_name": "search", "calls": 2, "failures": 0, "failure_rate": 0.0, "runs_with_failure": 0},
    ]
    assert rows(analytics.error_classes(data)) == [
        {"error_class": "Boom", "errors": 1, "runs": 1},  # the error step, and b's final class
        {"error_class": "TimeoutError", "errors": 2, "runs": 1},
    ]
    assert analytics.tools(data, "environment").select("environment", "tool_name", "calls").rows() == [
        ("dev", "grep", 3),
        ("prod", "fetch", 2),
        ("prod", "search", 2),
    ]


def test_filtered_load_sees_only_those_runs(fixed):
    data = analytics.load(fixed, SessionFilter(environment="dev"))
    assert sorted(data.runs["session_id"]) == ["c", "d"]
    (row,) = rows(analytics.headline(data))
    assert (row["runs"], row["tokens_in"], row["tool_failure_rate"], row["fallback_rate"]) == (2, 1300, 0.0, 0.5)
    assert rows(analytics.tools(data)) == [
        {"tool_name": "grep", "calls": 3, "failures": 0, "failure_rate": 0.0, "runs_with_failure": 0}
    ]


@pytest.mark.parametrize(
    ("narrow", "expected"),
    [
        ({"has": "retry"}, ["b"]),
        ({"has": "error"}, ["b"]),
        ({"has": "intervention"}, ["a", "c"]),
        ({"has": "fallback"}, ["c"]),
        ({"has": "loop"}, ["c"]),
        ({"failed_tool": "fetch"}, ["b"]),
        ({"failed_tool": "grep"}, []),
        ({"error_class": "Boom"}, ["b"]),
        ({"error_class": "TimeoutError"}, ["b"]),
    ],
)
def test_drill_filters(fixed, narrow, expected):
    flt = analytics.drill_filter(SessionFilter(), **narrow)
    assert fixed.session_ids(flt) == expected


def test_drill_into_time_buckets_and_dimensions(fixed):
    flt = SessionFilter(since=T0, until=T0 + timedelta(days=3))
    day2 = analytics.drill_filter(flt, "day", T0 + timedelta(days=1))
    assert (day2.since, day2.until) == (T0 + timedelta(days=1), T0 + timedelta(days=2))
    assert fixed.session_ids(day2) == ["c", "d", "e"]
    assert fixed.session_ids(analytics.drill_filter(flt, "hour", T0 + timedelta(hours=12), status="failed")) == ["b"]
    assert fixed.session_ids(analytics.drill_filter(flt, "agent", "bot-2", has="fallback")) == []
    assert fixed.session_ids(analytics.drill_filter(flt, "tag", "y")) == ["a", "d"]
    assert analytics.drill_filter(flt, "model", None) is None  # runs without a model cannot be filtered on
    clipped = analytics.drill_filter(SessionFilter(since=T0 + timedelta(hours=11)), "day", T0)
    assert (clipped.since, clipped.until) == (T0 + timedelta(hours=11), T0 + timedelta(days=1))


def test_every_flag_filter_matches_the_metrics(fixed, data):
    counts = {"retry": "retried_steps", "error": "errored_steps", "fallback": "fallback_agent", "loop": "loops"}
    runs = data.runs.with_columns(intervention=pl.col("blocked_steps") + pl.col("approvals"))
    for flag in HAS_FLAGS:
        column = counts.get(flag, flag)
        expected = sorted(runs.filter(pl.col(column) > 0)["session_id"])
        assert sorted(fixed.session_ids(SessionFilter(has=flag))) == expected, flag


def test_unknown_inputs_are_refused(fixed, data):
    with pytest.raises(ValueError, match="by: unknown dimension 'colour'"):
        analytics.volume(data, "colour")
    with pytest.raises(ValueError, match="has: expected one of retry, error"):
        fixed.session_ids(SessionFilter(has="mood"))


def test_previous_period_and_change(fixed):
    flt = SessionFilter(since=T0 + timedelta(days=1), until=T0 + timedelta(days=2))
    prev = analytics.previous_period(flt)
    assert (prev.since, prev.until) == (T0, T0 + timedelta(days=1))
    assert analytics.previous_period(SessionFilter()) is None
    now = analytics.headline(analytics.load(fixed, flt))
    before = analytics.headline(analytics.load(fixed, prev))
    delta = {r["metric"]: r for r in rows(analytics.change(now, before))}
    assert delta["runs"] == {"metric": "runs", "current": 3.0, "previous": 2.0, "change": 1.0}
    assert delta["success_rate"] == {"metric": "success_rate", "current": 0.5, "previous": 0.5, "change": 0.0}
    assert delta["retry_rate"] == {"metric": "retry_rate", "current": 0.0, "previous": 0.5, "change": -0.5}
    assert delta["tool_failure_rate"]["previous"] == 0.5 and delta["tool_failure_rate"]["current"] == 0.0


def test_empty_database(store):
    data = analytics.load(store)
    assert data.runs.height == 0
    (row,) = rows(analytics.headline(data))
    assert row["runs"] == 0 and row["success_rate"] is None and row["p50_ms"] is None and row["fallback_rate"] is None
    for metric in (analytics.volume, analytics.tools, analytics.error_classes, analytics.step_latency, analytics.loops):
        assert metric(data, "day").height == 0
    empty = analytics.change(analytics.headline(data), analytics.headline(data))
    assert empty.filter(pl.col("metric") == "runs").row(0) == ("runs", 0.0, 0.0, 0.0)


def test_fanout_side_by_side(store):
    def run(sid, hour, query, *, ms, cost, **fields):
        return [
            session(sid, 1, hour, **fields),
            step(sid, 1, "think", 1, hour, 1, content="look it up", duration_ms=ms, tokens_in=100, tokens_out=10, cost_usd=cost),
            step(sid, 2, "tool_call", 1, hour, 2, tool_name="search", tool_args={"q": query}, tool_call_id="c1", duration_ms=10),
            step(sid, 3, "tool_result", 1, hour, 3, tool_name="search", tool_call_id="c1", content="found", duration_ms=30),
            step(sid, 4, "decision", 1, hour, 4, content="done", duration_ms=ms, tokens_in=120, tokens_out=12, cost_usd=cost),
        ]

    def replay(model):
        return {"model": model, "replay_of": "s", "replay_from": 1, "replay_to": 4, "replay_config": {"model": model}}

    events = [
        *run("s", 8, "x", ms=400, cost=0.01, model="gpt-4o"),
        end("s", "succeeded", 1, 8, 5),
        *run("r1", 9, "x", ms=200, cost=None, **replay("gpt-4o-mini"), metadata={"replay_outcome": "completed"}),
        end("r1", "succeeded", 1, 9, 6),
        *run("r2", 10, "y", ms=900, cost=0.05, **replay("claude"), metadata={"replay_outcome": "diverged"})[:3],
        end("r2", "incomplete", 1, 10, 3),
    ]
    ingest(store, [parse_event({"schema": "agent-replay/v1", **o}) for o in events])
    table = analytics.fanout(store, "s")
    assert table.drop("divergence").to_dicts() == [
        {
            "role": "original",
            "session_id": "s",
            "model": "gpt-4o",
            "status": "succeeded",
            "replay_outcome": None,
            "divergence_seq": None,
            "tokens_in": 220,
            "tokens_out": 22,
            "cost_usd": 0.02,
            "duration_ms": 5000.0,
            "step_p50_ms": 215.0,
        },  # durations 10 30 400 400: (30 + 400) / 2
        {
            "role": "replay",
            "session_id": "r2",
            "model": "claude",
            "status": "incomplete",
            "replay_outcome": "diverged",
            "divergence_seq": 2,
            "tokens_in": 100,
            "tokens_out": 10,
            "cost_usd": 0.05,
            "duration_ms": 3000.0,
            "step_p50_ms": 455.0,
        },  # think 900, call 10
        {
            "role": "replay",
            "session_id": "r1",
            "model": "gpt-4o-mini",
            "status": "succeeded",
            "replay_outcome": "completed",
            "divergence_seq": None,
            "tokens_in": 220,
            "tokens_out": 22,
            "cost_usd": None,
            "duration_ms": 6000.0,
            "step_p50_ms": 115.0,
        },
    ]
    said = dict(zip(table["session_id"], table["divergence"], strict=True))
    assert said == {"s": None, "r1": None, "r2": compare(store, "s", "r2").first_divergence.summary}
    assert said["r2"].startswith("Step 2:")


# ---------------------------------------------------------------------------- the demo runs


@pytest.fixture
def demo(sqlite_store):
    load_demo(sqlite_store, only_if_empty=False)
    return sqlite_store, analytics.load(sqlite_store)


def _ids(frame: pl.DataFrame) -> list[str]:
    return sorted(frame["session_id"])


def test_demo_shows_failures_retries_and_the_fallback_where_expected(demo):
    store, data = demo
    runs = data.runs
    assert _ids(runs.filter(pl.col("status") == "failed")) == [
        "demo-02-coding-format-price-failed",
        "demo-09-flight-bos-sfo-b",
        "demo-12-sql-churn-by-plan-failed",
        "demo-17-inbox-triage-context-overflow",
    ]
    assert _ids(runs.filter(pl.col("retried_steps") > 0)) == [
        "demo-03-shipment-status-retries",
        "demo-07-crm-migration-batch7",
        "demo-17-inbox-triage-context-overflow",
    ]
    assert _ids(runs.filter(pl.col("fallback_agent") > 0)) == ["demo-05-fallback-invoice-portal"]
    (fb,) = rows(analytics.fallbacks(data))
    assert (fb["blocks"], fb["agent_invoked"]) == (3, 1)  # 05 has two blocks (one taken over), 06 one
    coding = analytics.volume(data, "workflow").filter(pl.col("workflow") == "code-change").row(0, named=True)
    assert (coding["runs"], coding["failed"], coding["succeeded"]) == (2, 1, 1)
    http = analytics.tools(data).filter(pl.col("tool_name") == "http_get").row(0, named=True)
    assert (http["calls"], http["failures"]) == (3, 2)  # the shipment run: timeout, timeout, ok
    tests = analytics.error_classes(data).filter(pl.col("error_class") == "TestFailure").row(0, named=True)
    assert tests["runs"] == 1
    assert dict(zip(runs["session_id"], runs["cycles"], strict=True)) == count_cycles(store, store.session_ids())


def test_demo_clicks_open_exactly_the_runs_behind_the_bar(demo):
    store, data = demo
    base = SessionFilter()
    failed = analytics.drill_filter(base, "status", "failed")
    assert _ids(data.runs.filter(pl.col("status") == "failed")) == sorted(store.session_ids(failed))
    assert sorted(store.session_ids(analytics.drill_filter(base, has="retry"))) == _ids(
        data.runs.filter(pl.col("retried_steps") > 0)
    )
    assert store.session_ids(analytics.drill_filter(base, has="fallback")) == ["demo-05-fallback-invoice-portal"]
    assert store.session_ids(analytics.drill_filter(base, failed_tool="run_tests")) == ["demo-02-coding-format-price-failed"]
    for day, n in analytics.volume(data, "day").select("day", "runs").rows():
        assert len(store.session_ids(analytics.drill_filter(base, "day", day))) == n


# ---------------------------------------------------------------------------- agent-replay stats


def _stats(monkeypatch, url: str, *args: str) -> Ran:
    """`python -m replay_core.cli stats --db url …`, run in this process (cli_helpers.run_program), 200 columns
    wide: the command's console, made when it is first imported, with the width of that moment, is made here."""
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(cli_understand, "out", make_console(soft_wrap=True))
    return run_program(monkeypatch, ["stats", "--db", url, *args], {"COLUMNS": "200"})


def test_stats_command(sqlite_store, monkeypatch):
    ingest(sqlite_store, [parse_event({"schema": "agent-replay/v1", **obj}) for run in RUNS for obj in run])
    whole = json.loads(_stats(monkeypatch, sqlite_store.url, "--json").stdout)
    # like every command, stats first marks silent runs incomplete: d (2 s of events) no longer runs
    assert whole == {
        "runs": 5,
        "success_rate": 0.4,
        "p50_ms": 10_000.0,
        "p95_ms": pytest.approx(28_000.0),
        "tokens_in": 1660,
        "tokens_out": 166,
        "cost_usd": pytest.approx(0.536),
        "retry_rate": 0.2,
        "tool_failure_rate": pytest.approx(2 / 7),
        "fallback_rate": 0.5,
    }
    per_day = json.loads(_stats(monkeypatch, sqlite_store.url, "--by", "day", "--since", "2026-05-02", "--json").stdout)
    assert [(g["day"], g["runs"], g["tokens_in"], g["fallback_rate"]) for g in per_day] == [
        ("2026-05-02T00:00:00+00:00", 3, 1310, 0.5)
    ]
    table = _stats(monkeypatch, sqlite_store.url, "--by", "model", "--until", "2026-05-01")
    assert table.returncode == 0
    lines = [line for line in table.stdout.splitlines() if "gpt-4o" in line or "claude" in line]
    assert len(lines) == 1 and "50.0%" in lines[0] and "350" in lines[0]  # a and b only: 150 + 200 tokens in


def test_stats_refuses_bad_options(sqlite_store, monkeypatch):
    bad_by = _stats(monkeypatch, sqlite_store.url, "--by", "colour")
    assert bad_by.returncode == 1
    assert bad_by.stderr.strip().startswith("error: --by: unknown dimension 'colour'; expected one of day, hour, model")
    bad_since = _stats(monkeypatch, sqlite_store.url, "--since", "yesterday")
    assert bad_since.returncode == 1 and "--since: expected a date (2026-05-01) or an ISO date-time" in bad_since.stderr


def test_drill_parameters_parse_from_links(fixed):
    from replay_core.storage.filter_params import session_filter

    flt = session_filter({"has": "loop", "failed_tool": "grep", "error_class": "Boom", "since": "2026-05-01"})
    assert (flt.has, flt.failed_tool, flt.error_class, flt.since) == ("loop", "grep", "Boom", T0)
    assert fixed.session_ids(flt) == []  # c loops, but never failed grep
    with pytest.raises(ValueError, match="has: expected one of retry, error, intervention, fallback, loop, got 'mood'"):
        session_filter({"has": "mood"})
    assert session_filter({"has": "mood"}, strict=False).has is None


def test_a_light_load_has_the_headline_and_leaves_the_rest_out(fixed, data):
    light = analytics.load(fixed, detail=False)
    assert analytics.headline(light).to_dicts() == analytics.headline(data).to_dicts()
    assert light.runs.select("cycles", "loops", "redundant_calls", "step_durations").null_count().row(0) == (5, 5, 5, 5)


durations_lists = st.lists(st.none() | st.lists(st.integers(0, 10**15) | st.sampled_from((0, 5, 5000)), max_size=12), max_size=12)


@settings(deadline=None)
@given(per_run=durations_lists, models=st.lists(st.none() | st.sampled_from(("m1", "m2", "m3")), min_size=12, max_size=12))
def test_step_latency_equals_percentiles_over_all_steps_at_once(per_run, models):
    """step_latency puts each group's runs together before its percentiles: the numbers of one
    pass over all steps (polars' quantiles over the exploded durations), per group and in all."""
    cells = [f"c{i}" for i in range(len(per_run))]
    runs = pl.DataFrame({"cell": cells, "model": models[: len(per_run)]}, schema={"cell": pl.String, "model": pl.String})
    step_times = pl.DataFrame(
        {"cell": cells, "step_durations": [None if d is None else [v / 1000 for v in d] for d in per_run]},
        schema={"cell": pl.String, "step_durations": pl.List(pl.Float64)},
    )
    empty = pl.DataFrame()
    data = analytics.RunData(runs=runs, tools=empty, errors=empty, times=empty, step_times=step_times)
    for by in (None, "model"):
        keys = [by] if by else []
        steps = (
            step_times.join(runs, on="cell")
            .select(*keys, "step_durations")
            .explode("step_durations")
            .drop_nulls("step_durations")
        )
        aggs = [
            pl.len().cast(pl.Int64).alias("steps"),
            *(pl.col("step_durations").quantile(p / 100, "linear").alias(f"p{p}_ms") for p in analytics.PERCENTILES),
        ]
        want = steps.group_by(keys).agg(*aggs).sort(keys, nulls_last=True) if keys else steps.select(*aggs)
        assert_frame_equal(analytics.step_latency(data, by), want, check_exact=True)

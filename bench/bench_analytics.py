"""The analytics dashboard (and `agent-replay stats`) over 1,000,000 steps in 20,000 sessions spread over 90 days
(`--scale N`: N times that; `--postgres URL`: on PostgreSQL).

The database is generated straight into SQLite with executemany, or PostgreSQL by COPY (not
through the ingest pipeline: that has its own bench). Timed: the dashboard page's work for two
periods, cold (fresh Store, nothing cached) and warm (the page's cache hit), and each of its
reads of the per-day rollups cold; baselines: one polars read of the same narrow step columns,
and a plain COUNT(*) over steps. The rollups (per run and per day) are rebuilt after generation
(as migrations 0009 and 0011 do for an older database). The stats CLI
is timed as a whole process beside the interpreter's own start. Peak RSS is the process maximum.

    python bench/bench_analytics.py [--keep PATH]   # --keep: reuse/keep the generated file
    python bench/bench_analytics.py --postgres postgresql+psycopg://postgres@127.0.0.1:5432/postgres --scale 2
"""

from __future__ import annotations

import argparse
from functools import partial
import random
import resource
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import TOOLS, report  # noqa: E402

import streamlit as st  # noqa: E402

from replay_core.understand import analytics  # noqa: E402
from replay_core.storage.store import SessionFilter, Store  # noqa: E402

SESSIONS = 20_000
STEPS = 1_000_000
DAYS = 90
T0 = datetime(2026, 9, 1, tzinfo=UTC)
MODELS = ["gpt-4o", "gpt-4o-mini", "claude-sonnet-4", "ollama/llama3.1:70b"]
AGENTS = ["support-agent", "coding-agent", "sql-analyst", "trip-planner", "web-navigator"]
WORKFLOWS = ["customer-support", "code-change", "analytics-qa", "flight-search"]
ENVIRONMENTS = ["prod", "staging", "dev"]
VERSIONS = ["1.4.0", "1.5.0", "1.5.1"]
TAGS = ["support", "coding", "sql", "travel", "browser", "weekly"]
ERRORS = ["TimeoutError", "RateLimitError", "TestFailure", "InvalidArgument"]
# Step content as long as real runs write it (the dashboard must not read any of it).
WORDS = ("the order lookup returned three rows so check the refund policy before answering and keep the customer "
         "informed about the shipment status while the retry budget lasts ").split()
TEXT = " ".join(WORDS[i % len(WORDS)] for i in range(2000))
CONTENT = {"input": (50, 400), "think": (100, 900), "decision": (60, 500), "tool_result": (80, 1500), "observation": (80, 600),
           "error": (40, 300)}


def _ts(value: datetime) -> str:
    """The text SQLAlchemy's SQLite DateTime stores: naive UTC with microseconds."""
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")


def _lengths(rng: random.Random) -> list[int]:
    """Steps per session: 20–80, summing to exactly STEPS."""
    mean = STEPS // SESSIONS
    out = [mean] * SESSIONS
    for i in range(0, SESSIONS - 1, 2):
        d = rng.randint(0, 30)
        out[i] += d
        out[i + 1] -= d
    return out


def _session_steps(sid: str, n: int, start: datetime, rng: random.Random, failed: bool) -> list[tuple]:
    """One run's steps: input, then think → tool_call → tool_result → decision loops,
    with retries, tool failures, blocked actions, approvals, fallback blocks and loops."""
    rows: list[tuple] = []
    clock = start
    model = MODELS[rng.randrange(len(MODELS))]
    looping = rng.random() < 0.05
    fallback = rng.random() < 0.1
    seq = 0

    def add(kind, *, tool=None, args=None, call_id=None, status="ok", error=None, retry=0, tokens=False, meta=None, parent=None):
        nonlocal seq, clock
        seq += 1
        duration = rng.randint(5, 3000)
        clock += timedelta(milliseconds=duration + 20)
        tin = rng.randint(200, 4000) if tokens else None
        tout = rng.randint(10, 300) if tokens else None
        cost = None if not tokens or model.startswith("ollama") and rng.random() < 0.5 else round(tin * 2.5e-6 + tout * 1e-5, 6)
        low, high = CONTENT.get(kind, (0, 0))
        start = rng.randrange(len(TEXT) - high - 1)
        content = TEXT[start : start + rng.randint(low, high)] if high else None
        rows.append((sid, seq, f"e{seq}", parent, kind, _ts(clock), float(duration), model if tokens else None, content, tool,
                     None if args is None else orjson.dumps(args).decode(), call_id, status, error, retry, tin, tout, cost,
                     None if meta is None else orjson.dumps(meta).decode()))

    add("input", meta={"approval": True} if rng.random() < 0.05 else None)
    if fallback:
        add("span", meta={"block": "fallback", "agent_invoked": rng.random() < 0.3, "success": rng.random() < 0.9})
    last = n - 1 if failed else n
    while seq < last:
        left = last - seq
        if left < 4:
            add("decision" if left == 1 else "observation", tokens=left == 1)
            continue
        tool = TOOLS[rng.randrange(len(TOOLS))]
        args = {"query": f"item {0 if looping else rng.randrange(1000)}", "limit": 10}
        add("think", tokens=True)
        cid = f"c{seq + 1}"
        add("tool_call", tool=tool, args=args, call_id=cid, tokens=True)
        roll = rng.random()
        if roll < 0.04 and left >= 6:
            add("tool_result", tool=tool, call_id=cid, status="error", error=ERRORS[rng.randrange(2)])
            add("tool_call", tool=tool, args=args, call_id=cid + "r", retry=1)
            add("tool_result", tool=tool, call_id=cid + "r")
        elif roll < 0.05:
            add("tool_result", tool=tool, call_id=cid, status="blocked", error="ApprovalDenied")
        else:
            add("tool_result", tool=tool, call_id=cid)
        if seq < last:
            add("decision", tokens=True)
    if failed:
        add("error", status="error", error=ERRORS[2 + rng.randrange(2)])
    return rows


def _batches(seed: int = 11):
    """The sessions' and steps' rows, in batches of about 100,000 steps."""
    rng = random.Random(seed)
    session_rows, step_rows = [], []
    for i, n in enumerate(_lengths(rng)):
        sid = f"run-{i:06d}"
        start = T0 + timedelta(seconds=rng.randrange(DAYS * 86400))
        roll = rng.random()
        status = "succeeded" if roll < 0.85 else "failed" if roll < 0.95 else "incomplete" if roll < 0.99 else "running"
        steps = _session_steps(sid, n, start, rng, status == "failed")
        end = datetime.fromisoformat(steps[-1][5]).replace(tzinfo=UTC)
        session_rows.append((
            sid, f"bench run {i}", AGENTS[i % len(AGENTS)], MODELS[rng.randrange(len(MODELS))], WORKFLOWS[rng.randrange(len(WORKFLOWS))],
            ENVIRONMENTS[rng.randrange(len(ENVIRONMENTS))], VERSIONS[rng.randrange(len(VERSIONS))], status,
            ERRORS[2] if status == "failed" else None, _ts(start), _ts(end) if status in ("succeeded", "failed") else None,
            _ts(end), orjson.dumps(rng.sample(TAGS, rng.randint(0, 2))).decode(), "bench", _ts(start),
        ))
        step_rows += steps
        if len(step_rows) >= 100_000:
            yield session_rows, step_rows
            session_rows, step_rows = [], []
    yield session_rows, step_rows


SESSION_COLUMNS = ("id, name, agent_id, model, workflow, environment, agent_version, status, error_class, started_at, ended_at,"
                   " last_event_at, tags, source, created_at")
STEP_COLUMNS = ("session_id, seq, event_id, parent_id, type, timestamp, duration_ms, model, content, tool_name, tool_args,"
                " tool_call_id, status, error_class, retry, tokens_in, tokens_out, cost_usd, metadata, redacted")


def build_database(url: str) -> None:
    """Generate the bench database at `url` (schema by the Store's migrations): SQLite by
    executemany, PostgreSQL by COPY; then every rollup, rebuilt as a migration does for an older database."""
    Store(url).close()
    if url.startswith("sqlite"):
        db = sqlite3.connect(url.removeprefix("sqlite:///"))
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=OFF")
        for session_rows, step_rows in _batches():
            db.executemany(f"insert into sessions ({SESSION_COLUMNS}) values ({','.join('?' * 15)})", session_rows)
            db.executemany(f"insert into steps ({STEP_COLUMNS}) values ({','.join('?' * 19)},0)", step_rows)
            db.commit()
        db.close()
    else:
        import psycopg

        from replay_core.storage import search

        with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as db:
            # The GIN search index is built once at the end (as a bulk build; minutes less at 10M steps).
            db.execute("DROP INDEX ix_steps_search")
            db.commit()
            for session_rows, step_rows in _batches():
                with db.cursor() as cur:
                    with cur.copy(f"COPY sessions ({SESSION_COLUMNS}) FROM STDIN") as copy:
                        for row in session_rows:
                            copy.write_row(row)
                    with cur.copy(f"COPY steps ({STEP_COLUMNS}) FROM STDIN") as copy:
                        for row in step_rows:
                            copy.write_row((*row, 0))
                db.commit()
            db.execute("SET maintenance_work_mem = '1GB'")
            db.execute(search.PG_INDEX)
            db.commit()
    store = Store(url, migrate=False)
    t = time.perf_counter()
    runs = store.rebuild_rollups()
    print(f"rollups of {runs} runs rebuilt in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    with store.engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE")
    store.close()


def dashboard(store: Store, flt: SessionFilter, load=partial(analytics.load, daily=True)) -> None:
    """Everything the analytics page computes for one period: both periods' reads, every chart's frame."""
    data = load(store, flt)
    before = analytics.previous_period(flt)
    analytics.change(analytics.headline(data), analytics.headline(load(store, before, detail=False)))
    for metric, by in ((analytics.volume, "day"), (analytics.step_latency, "model"), (analytics.usage, "model"),
                       (analytics.tools, None), (analytics.error_classes, None), (analytics.retries, "day"),
                       (analytics.fallbacks, "day"), (analytics.interventions, "day"), (analytics.loops, "day")):
        metric(data, by)


def baseline_scan(url: str) -> float:
    """One polars read of the step columns the dashboard aggregates (no computing at all)."""
    import polars as pl

    store = Store(url, migrate=False)
    query = "select " + ", ".join(BASELINE_COLUMNS) + " from steps"
    start = time.perf_counter()
    with store.engine.connect() as conn:
        frame = pl.read_database(query, conn, infer_schema_length=None)
    elapsed = time.perf_counter() - start
    assert frame.height == STEPS
    store.close()
    return elapsed


BASELINE_COLUMNS = ("session_id", "seq", "type", "status", "retry", "duration_ms", "tokens_in", "tokens_out", "cost_usd",
                    "timestamp", "tool_name", "error_class")


def _postgres(admin_url: str) -> str:
    """A database of its own on the server of `admin_url` (kept between runs: generating it is the slow part)."""
    import psycopg

    name = f"agent_replay_bench_{SESSIONS}"
    with psycopg.connect(admin_url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as admin:
        if not admin.execute("select 1 from pg_database where datname = %s", (name,)).fetchone():
            admin.execute(f'CREATE DATABASE "{name}"')
    return admin_url.rsplit("/", 1)[0] + "/" + name


def _generated(url: str) -> bool:
    store = Store(url)
    with store.engine.connect() as conn:
        n = conn.exec_driver_sql("select count(*) from sessions").scalar()
    store.close()
    return n == SESSIONS


def main() -> None:
    global SESSIONS, STEPS
    parser = argparse.ArgumentParser()
    parser.add_argument("--keep", type=Path, help="generate into this SQLite file (reused when it exists)")
    parser.add_argument("--postgres", help="measure on PostgreSQL: an admin URL; the bench makes (and keeps) its own database there")
    parser.add_argument("--scale", type=int, default=1, help="times 1M steps / 20k runs (10: the PostgreSQL goal's size)")
    args = parser.parse_args()
    SESSIONS, STEPS = SESSIONS * args.scale, STEPS * args.scale
    size = f"{STEPS // 1_000_000}M_steps" + ("_postgres" if args.postgres else "")
    goal = "<= 1.5 (10M steps, PostgreSQL)" if args.postgres else "<= 0.3"
    with tempfile.TemporaryDirectory() as tmp:
        url = _postgres(args.postgres) if args.postgres else f"sqlite:///{args.keep or Path(tmp) / 'analytics.db'}"
        if url.startswith("sqlite") and not Path(url.removeprefix("sqlite:///")).exists() or not url.startswith("sqlite") and not _generated(url):
            t = time.perf_counter()
            build_database(url)
            print(f"generated {url} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        Store(url).close()  # an older kept database: migrated (the migration builds what it lacks)
        halves = SessionFilter(since=T0 + timedelta(days=DAYS / 2), until=T0 + timedelta(days=DAYS))  # and the half before
        whole = SessionFilter(since=T0, until=T0 + timedelta(days=DAYS))

        def cold(flt: SessionFilter) -> tuple[float, float]:
            """Wall and CPU seconds (all threads) of the dashboard on a new engine: nothing cached."""
            store = Store(url, migrate=False)
            start, cpu = time.perf_counter(), _cpu()
            dashboard(store, flt)
            elapsed = time.perf_counter() - start, _cpu() - cpu
            store.close()
            return elapsed

        cold(halves)  # the OS file cache is warm for every figure below, as on a running server
        cold_halves, cpu_halves = min(cold(halves) for _ in range(3))
        cold_whole, _ = min(cold(whole) for _ in range(3))
        queries = _queries(url, halves)

        cached = st.cache_data(show_spinner=False)(
            lambda url, key, detail, _flt: analytics.load(Store(url, migrate=False), _flt, detail=detail, daily=True))
        store = Store(url, migrate=False)
        page_load = lambda s, f, detail=True: cached(url, repr(f), detail, f)  # noqa: E731  (the page's cache, keyed like it)
        dashboard(store, halves, page_load)
        warm = min(_timed(dashboard, store, halves, page_load) for _ in range(5))
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        base = baseline_scan(url)
        load = os.getloadavg()
        count = _count_steps(url)
        report(f"analytics_dashboard_cold_{size}_two_periods", cold_halves, "s", goal, base, higher_is_better=False, load=load,
               count_steps_s=round(count, 4))
        report(f"analytics_dashboard_cold_{size}_90_days_one_period", cold_whole, "s", goal, base, higher_is_better=False, load=load)
        for name, seconds in queries.items():  # each read of the dashboard's current period, beside COUNT(*) over steps
            report(f"analytics_query_cold_{size}_{name}", seconds * 1000, "ms", "part of the dashboard", count * 1000,
                   higher_is_better=False, load=os.getloadavg())
        stats, start_only = _stats_process(url)
        report(f"stats_cli_{size}", stats, "s", "<= 0.4 past process start (1M steps)", start_only, higher_is_better=False,
               load=os.getloadavg(), past_start_s=round(stats - start_only, 3))
        # CPU seconds over 2 cores: what the wall time is on an otherwise idle 2-core machine, about
        report(f"analytics_dashboard_cold_cpu_seconds_{size}", cpu_halves, "cpu s", "<= 3 (2 cores)", None, higher_is_better=False)
        report(f"analytics_dashboard_warm_cached_{size}", warm * 1000, "ms", "cached", cold_halves * 1000, higher_is_better=False)
        report(f"analytics_peak_rss_{size}", rss_mb, "MB", "<= 1536", None, higher_is_better=False)


def _queries(url: str, flt: SessionFilter) -> dict[str, float]:
    """Each read behind the current period (Store.daily_rows' queries), cold on a new engine, best of 3."""
    from replay_core.storage import daily
    from replay_core.storage.store import EXPERIMENT_SOURCE

    best: dict[str, float] = {}
    for _ in range(3):
        store = Store(url, migrate=False)
        for name, query in daily.reads(flt, EXPERIMENT_SOURCE, detail=True).items():
            with store.engine.connect() as conn:
                start = time.perf_counter()
                conn.execute(query).cursor.fetchall()
                best[name] = min(best.get(name, 9e9), time.perf_counter() - start)
        store.close()
    return best


def _count_steps(url: str) -> float:
    """The plain baseline: SELECT COUNT(*) FROM steps on a new connection."""
    store = Store(url, migrate=False)
    with store.engine.connect() as conn:
        start = time.perf_counter()
        assert conn.exec_driver_sql("select count(*) from steps").scalar() == STEPS
        elapsed = time.perf_counter() - start
    store.close()
    return elapsed


def _stats_process(url: str) -> tuple[float, float]:
    """`agent-replay stats` as a user runs it (best of 3, whole process), and the same
    interpreter starting and exiting (`python -c pass`), its process start."""
    def best(cmd):
        times = []
        for _ in range(3):
            start = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            times.append(time.perf_counter() - start)
        return min(times)

    return best([sys.executable, "-m", "replay_core.cli", "stats", "--db", url]), best([sys.executable, "-c", "pass"])


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()

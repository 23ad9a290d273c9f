"""Monitors at scale: 50 rules judged over 1,000,000 steps (20,000 runs, 90 days) from the rollups, and
ingest throughput with those 50 rules active against none, in the same run.

The database is bench_analytics' generator (runs, steps and their rollups written in bulk, as
`db rebuild-rollups` would). Timed:
- judging 50 rules as the server does (`judge_all`: the widest window read once, cut per rule) —
  success / failure / tool-failure rates, p50 / p95 durations, cost and tokens per run, incomplete
  runs, error-class counts; thresholds and changes; over all runs or a workflow, model, agent or
  environment; windows of 7 to 30 days ending at the data's last day — best of 3, beside one read
  per rule (`judge` each: the extra figure); baseline: one read of every run's row and rollup over
  the 30-day window (`judge.sample`); goal <= 1 s.
- ingest: runs of 12 steps through the pipeline (`ingest`), batch by batch, for `--seconds` each
  way, each side into a fresh copy of that database (a side's runs all start in the last hour, so
  the day's cell grew side after side, and the ingest's CPU a step with it: a side later in the run
  was slower whichever it was), beside the server's monitor loop (check.run_periodically in another
  process, as in the app, whose writes go to a write worker process, with its passes' worker
  `check.PASSES`; both started before the side is timed, as a server is up before it ingests; its
  periodic pass every 10 s (`--every`) — 30 times as often as the server's default — and every batch
  poking the ingest debounce, as the HTTP routes do), alternating "no rule" (the built-in release
  monitor only) and "the 50 rules"; after an untimed warm-up side, the pairs' ratios and their
  median, the side that goes first alternating; per side the ingest's CPU seconds (what it costs) and
  the loop's with its worker (what it takes from the cores); goal: within 5 %.

    python bench/bench_monitors.py [--keep PATH] [--seconds 20] [--rounds 3] [--every 10] [--ingest-only]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_analytics as ba  # noqa: E402
from common import report  # noqa: E402

from replay_core.events import SessionEndEvent, SessionEvent, StepEvent  # noqa: E402
from replay_core.ingest.pipeline import ingest  # noqa: E402
from replay_core.monitors import check  # noqa: E402
from replay_core.monitors import debounce as debounced  # noqa: E402
from replay_core.monitors.judge import judge, judge_all, sample, window_filter  # noqa: E402
from replay_core.monitors.rules import parse_rule  # noqa: E402
from replay_core.storage.actor import Actor  # noqa: E402
from replay_core.storage.store import Store  # noqa: E402

NOW = ba.T0 + timedelta(days=ba.DAYS)
EDITOR = Actor("bench", "editor", "bench")
BATCH = 50  # runs per ingest call


def rules() -> list[dict]:
    """50 rules of every kind, over all runs or one slice, with 7- to 30-day windows."""
    metrics = [
        ("failure_rate", {"threshold": 0.2}),
        ("success_rate", {"change": True}),
        ("tool_failure_rate", {"threshold": 0.1}),
        ("p95_duration_s", {"change": True}),
        ("p50_duration_s", {"threshold": 60.0}),
        ("cost_per_run", {"change": True}),
        ("tokens_per_run", {"threshold": 50_000.0}),
        ("incomplete_runs", {"threshold": 100.0}),
        ("error_class_runs", {"threshold": 50.0, "error_class": "TestFailure"}),
        ("failure_rate", {"change": True}),
    ]
    slices = [
        {},
        {"workflow": ba.WORKFLOWS[0]},
        {"model": ba.MODELS[1]},
        {"agent_id": ba.AGENTS[2]},
        {"environment": ba.ENVIRONMENTS[0]},
    ]
    out = []
    for i, (metric, judged) in enumerate(metrics):
        for j, filters in enumerate(slices):
            window = 24.0 * (7 if (i + j) % 3 else 30)
            out.append({"metric": metric, "window_hours": window, "min_runs": 20, "filters": filters, **judged})
    return out


def time_judging(url: str) -> tuple[float, float, float, int]:
    """Seconds to judge the 50 rules as the server does (`judge_all`: one read) and one read per rule (`judge`),
    best of 3 each; the baseline read; how many fired."""
    store = Store(url, migrate=False)
    parsed = [parse_rule(r) for r in rules()]
    best, each, fired = float("inf"), float("inf"), 0
    for _ in range(3):
        start = time.perf_counter()
        verdicts = [j.verdict for j in judge_all(store, parsed, NOW)]
        best = min(best, time.perf_counter() - start)
        fired = verdicts.count("firing")
        start = time.perf_counter()
        assert [judge(store, rule, NOW).verdict for rule in parsed] == verdicts
        each = min(each, time.perf_counter() - start)
    widest = window_filter(parsed[0], NOW - timedelta(days=30), NOW)
    floor = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        sample(store, widest)
        floor = min(floor, time.perf_counter() - start)
    store.close()
    return best, each, floor, fired


def batches(prefix: str):
    """Endless batches of BATCH runs of 12 steps each (a call, its result, thoughts and a decision)."""
    n = 0
    while True:
        events: list = []
        for _ in range(BATCH):
            sid = f"{prefix}-{n}"
            t = NOW - timedelta(hours=1) + timedelta(milliseconds=n)
            events.append(SessionEvent(session_id=sid, name=f"ingest {n}", workflow="ingest-bench", started_at=t))
            for seq in range(1, 13):
                kind = ("think", "tool_call", "tool_result", "decision")[seq % 4]
                fields = {"tool_name": "lookup", "tool_call_id": f"c{seq // 4}"} if kind in ("tool_call", "tool_result") else {}
                events.append(
                    StepEvent(session_id=sid, seq=seq, type=kind, content=f"step {seq} of run {n}", timestamp=t, **fields)
                )
            events.append(SessionEndEvent(session_id=sid, status="succeeded", ended_at=t + timedelta(seconds=13)))
            n += 1
        yield events


def ingest_for(store: Store, seconds: float, prefix: str) -> float:
    """Steps stored per second, ingesting batch after batch for `seconds`."""
    steps, start = 0, time.perf_counter()
    for events in batches(prefix):
        ingest(store, events)
        debounced.INGESTED.poke()  # what the HTTP ingest routes do after answering (its own cost)
        steps += BATCH * 12
        if time.perf_counter() - start >= seconds:
            break
    return steps / (time.perf_counter() - start)


def _serve_monitors(url: str, every_s: float, ready) -> None:
    from replay_core.monitors import loop  # noqa: F401  (the schedules' pass imports it; a running server has)

    store = Store(url, migrate=False)
    check.PASSES.run(url, "replay_core.monitors.check:find", "none")  # its worker started and warm, as a server's
    ready.set()
    asyncio.run(check.run_periodically(lambda: store, every_s))


def _cpu_s(pid: int) -> float:
    """A process's and its running children's CPU seconds so far (user and system; Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") + sum(_cpu_s(int(c)) for c in children)


class MonitorLoop:
    """The server's monitor loop (check.run_periodically) in another process, as in the app, whose HTTP writes
    go to a write worker process (storage.worker) beside the app's own loop. Entered once the process has
    imported the app and started its passes' worker (a server is up before it ingests): its first pass
    starts with the timed side."""

    def __init__(self, url: str, every_s: float):
        context = multiprocessing.get_context("spawn")
        self.ready = context.Event()
        self.process = context.Process(target=_serve_monitors, args=(url, every_s, self.ready), daemon=True)

    def __enter__(self) -> MonitorLoop:
        self.process.start()
        if not self.ready.wait(timeout=300):
            raise RuntimeError("the monitor loop's process did not start")
        self.cpu_s = _cpu_s(self.process.pid)
        return self

    def __exit__(self, *exc) -> None:
        self.cpu_s = _cpu_s(self.process.pid) - self.cpu_s  # what the loop took from the cores during the side
        worker = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        self.process.terminate()
        self.process.join(timeout=30)
        for pid in map(int, worker):  # the passes' worker, which a pass may keep busy a while after its server
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


class Sides:
    """Each side ingests into a fresh copy of the generated database (the copy untimed, and written to disk
    first: a side whose checkpoint flushed the copy's 766 MB ran slower, whichever side it was)."""

    def __init__(self, source: Path, folder: Path):
        self.source, self.path = source, folder / "ingest.db"

    def fresh(self) -> str:
        for leftover in (self.path, self.path.with_name(self.path.name + "-wal"), self.path.with_name(self.path.name + "-shm")):
            leftover.unlink(missing_ok=True)
        shutil.copy(self.source, self.path)
        with self.path.open(
            "rb+"
        ) as copied:  # on disk before the side: else its first checkpoint waits for the copy's write-back
            os.fsync(copied.fileno())
        return f"sqlite:///{self.path}"


def ingest_side(url: str, seconds: float, prefix: str, every_s: float, rules_made: int) -> tuple[float, float, float, int]:
    """Steps/s of one side beside the server's monitor loop with `rules_made` of the 50 rules, the ingest's
    CPU seconds in it, the loop's with its worker's, and how many monitors it checked."""
    store = Store(url, migrate=False)
    try:
        for i, rule in enumerate(rules()[:rules_made]):
            check.add(store, f"rule {i}", rule, actor=EDITOR)
        with MonitorLoop(url, every_s=every_s) as running:
            cpu = time.process_time()
            rate = ingest_for(store, seconds, prefix)
            cpu = time.process_time() - cpu
        checks = sum(1 for m in store.list_monitors() if m["last_checked_at"])
        return rate, cpu, running.cpu_s, checks
    finally:
        store.close()


def time_ingest(sides: Sides, seconds: float, rounds: int, every_s: float) -> list[dict]:
    """Each round's pair: steps/s beside the monitor loop without rules and with the 50, the ingest's CPU
    seconds each side, the loop's, and how many monitors it checked."""
    ingest_side(sides.fresh(), seconds, "warm-up", every_s, 0)  # untimed: the process's first statements and imports
    pairs = []
    for r in range(rounds):
        got = {}
        for side in ("none", "fifty") if r % 2 == 0 else ("fifty", "none"):
            got[side] = ingest_side(sides.fresh(), seconds, f"{side}-{r}", every_s, 50 if side == "fifty" else 0)
        (none, none_cpu, none_loop, _), (fifty, fifty_cpu, loop_cpu, checks) = got["none"], got["fifty"]
        pairs.append(
            {
                "without": round(none),
                "with": round(fifty),
                "ratio": round(fifty / none, 3),
                "ingest_cpu_s": [round(none_cpu, 2), round(fifty_cpu, 2)],
                "loop_cpu_s": [round(none_loop, 2), round(loop_cpu, 2)],
                "monitors_checked": checks,
                "load": round(os.getloadavg()[0], 1),
            }
        )
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keep", type=Path, help="generate into this SQLite file (reused when it exists)")
    parser.add_argument("--seconds", type=float, default=20.0, help="ingest time per side and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--every", type=float, default=10.0, help="the monitor loop's period (the server's: 300)")
    parser.add_argument("--ingest-only", action="store_true", help="skip the judging figure")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "monitors.db"
        url = f"sqlite:///{path}"
        if not path.exists():
            t = time.perf_counter()
            ba.build_database(url, ba.SESSIONS, ba.STEPS)
            print(f"generated {url} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        Store(url).close()
        if not args.ingest_only:
            report_judging(url)
        pairs = time_ingest(Sides(path, Path(tmp)), args.seconds, args.rounds, args.every)
        ratio = statistics.median(p["ratio"] for p in pairs)
        report(
            "ingest_with_50_monitors",
            statistics.median(p["with"] for p in pairs),
            "steps/s",
            "within 5 % of no monitor (median of the pairs' ratios)",
            statistics.median(p["without"] for p in pairs),
            pairs_ratio=ratio,
            rounds=args.rounds,
            seconds=args.seconds,
            every_s=args.every,
            pairs=pairs,
        )


def report_judging(url: str) -> None:
    seconds, each, floor, fired = time_judging(url)
    report(
        "monitors_judge_50_rules_1M_steps",
        seconds,
        "s",
        "<= 1.0",
        floor,
        higher_is_better=False,
        rules=50,
        firing=fired,
        one_read_per_rule_s=round(each, 3),
        baseline_is="one read of the widest window's runs and rollups",
    )


if __name__ == "__main__":
    main()

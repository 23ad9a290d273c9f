"""An experiment of 100 cases × 3 variants through litellm against the local fake server.

Figures, each beside a baseline measured in the same run (with the load average, before
and after: the machine is shared):
- the experiment's time per case × variant outside the model call, end to end (the run's
  wall time at concurrency 1 minus the time spent waiting for the model and the judge,
  per replay: claiming, opening the case, replaying, compare, scoring, storing), beside the
  same figure for bare what-if replays of the same cases and variants, one after another
  (`replay()` wall time minus its model time). Their difference is what the experiment adds
  on top of a replay: goal ≤ 20 ms;
- the replay's own overhead inside the experiment (stored per run) for context;
- the wall time of the whole experiment at concurrency 1 and 8;
- because wall time on a shared 2-core machine swings with the load, the same comparison
  in process CPU time and in SQL statements per case × variant (the statement count does
  not depend on the load at all).

    python bench/bench_experiment.py [--cases 100]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent / "tests"))
from common import report  # noqa: E402
from experiment_cases import Agent, make_cases  # noqa: E402
from openai_server import OpenAIServer  # noqa: E402
from sqlalchemy import event  # noqa: E402

from replay_core.storage.store import Store  # noqa: E402
from replay_core.whatif import dataset as ds  # noqa: E402
from replay_core.whatif import experiment as ex  # noqa: E402
from replay_core.whatif.provider import load_litellm  # noqa: E402
from replay_core.whatif.replay import replay  # noqa: E402
from replay_core.whatif.replay_config import ReplayConfig  # noqa: E402

MODELS = ("fake-a", "fake-b", "fake-c")


def load(when: str) -> None:
    print(
        json.dumps(
            {"bench": f"load average ({when})", "loadavg": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count()}
        ),
        flush=True,
    )


class Statements:
    """SQL statements the store's engine runs (a figure the machine's load cannot move)."""

    def __init__(self, store: Store):
        self.count = 0
        event.listen(store.engine, "before_cursor_execute", self._seen)

    def _seen(self, *_args) -> None:
        self.count += 1


def bare_overheads(
    store: Store, ids: list[str], configs: list[ReplayConfig], sql: Statements
) -> tuple[list[float], float, float]:
    """ms outside the model call for each bare replay (case-major, like the experiment); CPU ms and statements per replay."""
    for config in configs:  # warm-up: first calls pay for connection pools and caches
        replay(store, ids[0], 2, None, config)
    out = []
    cpu, statements = time.process_time(), sql.count
    for sid in ids:
        for config in configs:
            started = time.perf_counter()
            result = replay(store, sid, 2, None, config)
            out.append((time.perf_counter() - started) * 1000 - result.latency_ms)
    n = len(ids) * len(configs)
    return out, (time.process_time() - cpu) * 1000 / n, (sql.count - statements) / n


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=100)
    args = parser.parse_args()
    load("start")
    load_litellm()
    with tempfile.TemporaryDirectory() as tmp, OpenAIServer() as server:
        for i, model in enumerate(MODELS):
            server.route(model, Agent(server, wrong=lambda n, i=i: n % (i + 3) == 0))
        store = Store(f"sqlite:///{Path(tmp) / 'bench.db'}")
        ids = make_cases(store, args.cases)
        ds.create(store, "bench", [ds.Case(i) for i in ids])
        configs = [
            ReplayConfig(model=f"openai/{m}", api_base=server.base_url, input_cost_per_token=1e-6, output_cost_per_token=2e-6)
            for m in MODELS
        ]
        n = args.cases * len(MODELS)
        sql = Statements(store)
        bare, bare_cpu, bare_sql = bare_overheads(store, ids, configs, sql)
        walls, per_replay, inside = {}, {}, []
        for concurrency in (1, 8):
            eid, _ = ex.start(store, "bench", configs, concurrency=concurrency)
            started, cpu, statements = time.perf_counter(), time.process_time(), sql.count
            status = ex.run(store, eid)
            walls[concurrency] = time.perf_counter() - started
            if concurrency == 1:
                exp_cpu, exp_sql = (time.process_time() - cpu) * 1000 / n, (sql.count - statements) / n
            assert status == "done", status
            runs = store.experiment_runs(eid)
            assert len(runs) == n and all(r["state"] == "done" for r in runs)
            model_ms = sum(r["latency_ms"] for r in runs)
            per_replay[concurrency] = (walls[concurrency] * 1000 - model_ms) / n
            if concurrency == 1:
                inside = [r["overhead_ms"] for r in runs]
        store.close()
    bare_mean = statistics.mean(bare)
    report(
        "experiment time per case × variant outside the model call, end to end, concurrency 1 (ms)",
        per_replay[1],
        "ms",
        "≤ bare replay + 20 ms",
        bare_mean,
        higher_is_better=False,
    )
    report(
        "experiment overhead over a bare replay, per case × variant (ms)",
        per_replay[1] - bare_mean,
        "ms",
        "≤ 20 ms",
        None,
        higher_is_better=False,
    )
    report(
        "bare replay time outside the model call, p50 (ms)",
        statistics.median(bare),
        "ms",
        "baseline",
        None,
        higher_is_better=False,
    )
    report(
        "experiment run's own overhead (stored overhead_ms), p50 (ms)",
        statistics.median(inside),
        "ms",
        "context",
        statistics.median(bare),
        higher_is_better=False,
    )
    report(
        "CPU time per case × variant, experiment at concurrency 1 (ms, model server in-process on both sides)",
        exp_cpu,
        "ms",
        "≤ bare replay + 20 ms",
        bare_cpu,
        higher_is_better=False,
    )
    report(
        "SQL statements per case × variant, experiment",
        exp_sql,
        "statements",
        "close to a bare replay's",
        bare_sql,
        higher_is_better=False,
    )
    report(
        f"experiment wall time, {args.cases} cases × {len(MODELS)} variants, concurrency 1 (s)",
        walls[1],
        "s",
        f"{n} replays",
        None,
        higher_is_better=False,
    )
    report(
        f"experiment wall time, {args.cases} cases × {len(MODELS)} variants, concurrency 8 (s)",
        walls[8],
        "s",
        "faster than concurrency 1",
        walls[1],
        higher_is_better=False,
    )
    load("end")


if __name__ == "__main__":
    main()

"""An experiment of 100 cases × 3 variants through litellm against the local fake server.

Figures: the experiment's overhead per case × variant outside the model call (claiming,
replaying machinery, compare, scoring, storing: wall time of the run minus the time spent
waiting for the model; goal ≤ 20 ms), beside the same overhead of a bare what-if replay of
the same case (the baseline: what the experiment adds on top of replay); and the wall time
of the whole experiment at concurrency 1 and 8.

    python bench/bench_experiment.py [--cases 100]
"""

from __future__ import annotations

import argparse
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

from replay_core.storage.store import Store  # noqa: E402
from replay_core.whatif import dataset as ds  # noqa: E402
from replay_core.whatif import experiment as ex  # noqa: E402
from replay_core.whatif.provider import load_litellm  # noqa: E402
from replay_core.whatif.replay import replay  # noqa: E402
from replay_core.whatif.replay_config import ReplayConfig  # noqa: E402

MODELS = ("fake-a", "fake-b", "fake-c")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=100)
    args = parser.parse_args()
    load_litellm()
    with tempfile.TemporaryDirectory() as tmp, OpenAIServer() as server:
        for i, model in enumerate(MODELS):
            server.route(model, Agent(server, wrong=lambda n, i=i: n % (i + 3) == 0))
        store = Store(f"sqlite:///{Path(tmp) / 'bench.db'}")
        ids = make_cases(store, args.cases)
        ds.create(store, "bench", [ds.Case(i) for i in ids])
        configs = [ReplayConfig(model=f"openai/{m}", api_base=server.base_url, input_cost_per_token=1e-6,
                                output_cost_per_token=2e-6) for m in MODELS]
        # baseline: bare replays of the first 30 cases (replay's own overhead, model time left out)
        bare = []
        for sid in ids[:30]:
            r = replay(store, sid, 2, None, configs[0])
            bare.append(r.overhead_ms)
        walls = {}
        overheads: list[float] = []
        for concurrency in (1, 8):
            eid, _ = ex.start(store, "bench", configs, concurrency=concurrency)
            started = time.perf_counter()
            status = ex.run(store, eid)
            walls[concurrency] = time.perf_counter() - started
            assert status == "done", status
            runs = store.experiment_runs(eid)
            assert len(runs) == args.cases * len(MODELS) and all(r["state"] == "done" for r in runs)
            if concurrency == 1:
                overheads = [r["overhead_ms"] for r in runs]
        model_ms = statistics.mean(r["latency_ms"] for r in runs)
        store.close()
    n = args.cases * len(MODELS)
    report("experiment overhead per case × variant outside the model call, p50 (ms)", statistics.median(overheads), "ms",
           "≤ 20 ms", statistics.median(bare), higher_is_better=False)
    report("experiment overhead per case × variant, mean (ms)", statistics.mean(overheads), "ms", "≤ 20 ms",
           statistics.mean(bare), higher_is_better=False)
    report(f"experiment wall time, {args.cases} cases × {len(MODELS)} variants, concurrency 1 (s)", walls[1], "s",
           f"{n} replays", None, higher_is_better=False)
    report(f"experiment wall time, {args.cases} cases × {len(MODELS)} variants, concurrency 8 (s)", walls[8], "s",
           "faster than concurrency 1", walls[1], higher_is_better=False)
    report("model time per replay (2 calls to the local server), mean (ms)", model_ms, "ms", "context", None)


if __name__ == "__main__":
    main()

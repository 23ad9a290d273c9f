"""The MCP server's answers through the SDK's own client (in process: JSON-RPC framing, schema checks,
audit line and all), beside the library call each wraps in the same run:

- get_state_at_step on a 100,000-step run, past start-up (the run opened by a first call), at 50
  random steps, worst and median; baseline state_at on the open timeline;
- search_runs for a word over 1,000,000 steps (20,000 runs × 50), baseline the CLI's `sessions --search`
  query (Store.list_sessions + search_matches) on the same database.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_search import COMMON, fill_sqlite, generate  # noqa: E402
from common import generated_jsonl, report, timed  # noqa: E402
from mcp import Client  # noqa: E402

from replay_core.ingest.pipeline import import_bytes  # noqa: E402
from replay_core.mcp.server import build  # noqa: E402
from replay_core.storage.store import SessionFilter, Store  # noqa: E402
from replay_core.understand.snapshot import state_at  # noqa: E402
from replay_core.understand.timeline import open_timeline  # noqa: E402


async def _timed_calls(server, calls: list[tuple[str, dict]]) -> list[float]:
    out = []
    async with Client(server) as client:
        for tool, args in calls:
            start = time.perf_counter()
            result = await client.call_tool(tool, args)
            out.append(time.perf_counter() - start)
            assert not result.is_error, result.content[0].text
    return out


def state_at_step(tmp: str) -> None:
    store = Store(f"sqlite:///{tmp}/long.db")
    import_bytes(store, generated_jsonl(1, 100_000), "long.jsonl")
    sid = "bench-0"
    rng = random.Random(3)
    seqs = [rng.randint(1, 100_000) for _ in range(50)]
    calls = [("get_state_at_step", {"run_id": sid, "step": q}) for q in [1, *seqs]]
    times = asyncio.run(_timed_calls(build(lambda: store), calls))
    tl = open_timeline(store, sid)
    state_at(tl, 1, store)
    base = [timed(state_at, tl, q, store)[1] for q in seqs]
    report("mcp_state_at_step_100k_first_call_opens_the_run", times[0] * 1000, "ms", "-", None, higher_is_better=False)
    report("mcp_state_at_step_100k_worst_of_50", max(times[1:]) * 1000, "ms", "<= 100", max(base) * 1000, higher_is_better=False)
    report(
        "mcp_state_at_step_100k_median_of_50",
        statistics.median(times[1:]) * 1000,
        "ms",
        "<= 100",
        statistics.median(base) * 1000,
        higher_is_better=False,
    )
    store.close()


def search_runs(tmp: str) -> None:
    path = Path(tmp) / "search.db"
    sessions, steps = generate(20_000)
    fill_sqlite(path, sessions, steps)
    store = Store(f"sqlite:///{path}")
    flt = SessionFilter(text=COMMON)

    def cli_query():  # what `agent-replay sessions --search timeout --limit 20` reads
        rows = store.list_sessions(flt, limit=20)
        return store.search_matches([r["id"] for r in rows], COMMON)

    cli_query()
    base = min(timed(cli_query)[1] for _ in range(5))
    times = asyncio.run(_timed_calls(build(lambda: store), [("search_runs", {"query": COMMON, "limit": 20})] * 6))
    report("mcp_search_runs_1m_steps", min(times[1:]) * 1000, "ms", "<= 200", base * 1000, higher_is_better=False)
    store.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        state_at_step(tmp)
        search_runs(tmp)


if __name__ == "__main__":
    main()

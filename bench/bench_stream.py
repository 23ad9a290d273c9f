"""The live stream: from a step's write (another process) to a connected SSE client, served app
(`streamlit run streamlit_app.py`, SQLite), 50 clients on one run; baseline one client, same run."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from common import report  # noqa: E402

from replay_core.events import StepEvent  # noqa: E402
from replay_core.storage.store import Store  # noqa: E402

TOKEN = "bench-stream"
# The writer is another OS process, as an agent's recorder or another replica would be; each
# step carries its write time (time.time(): one clock on one machine).
WRITER = """
import sys, time
from replay_core.events import StepEvent
from replay_core.storage.store import Store
store = Store(sys.argv[1], migrate=False)
for i in range(int(sys.argv[3])):
    store.write([StepEvent(session_id=sys.argv[2], type="think", content=repr(time.time()))])
    time.sleep(float(sys.argv[4]))
"""


async def listen(base: str, sid: str, want: int, ready: asyncio.Event, latencies: list[float]) -> None:
    async with httpx.AsyncClient(timeout=httpx.Timeout(60, read=60)) as http:
        async with http.stream(
            "GET", f"{base}/api/v1/sessions/{sid}/stream", headers={"Authorization": f"Bearer {TOKEN}"}
        ) as res:
            res.raise_for_status()
            seen = 0
            async for line in res.aiter_lines():
                if line.startswith("retry:"):
                    ready.set()
                if line.startswith("data: "):
                    latencies.append(time.time() - float(orjson.loads(line[6:])["content"]))
                    seen += 1
                    if seen == want:
                        return


async def round_trip(base: str, url: str, sid: str, clients: int, steps: int, gap_s: float) -> list[float]:
    Store(url, migrate=False).write([StepEvent(session_id=sid, type="input", content=repr(time.time()))])
    latencies: list[float] = []
    readies = [asyncio.Event() for _ in range(clients)]
    tasks = [asyncio.create_task(listen(base, sid, steps + 1, r, latencies)) for r in readies]
    await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), 60)
    await asyncio.sleep(0.5)
    writer = await asyncio.create_subprocess_exec(sys.executable, "-c", WRITER, url, sid, str(steps), str(gap_s))
    await writer.wait()
    await asyncio.wait_for(asyncio.gather(*tasks), 60)
    return latencies[clients:]  # the first step of each client is its backlog, not a live one


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def main() -> None:
    from apptest_helpers import served_app

    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/stream.db"
        Store(url).close()
        with served_app(url, AGENT_REPLAY_API_TOKENS=TOKEN) as base:
            one = asyncio.run(round_trip(base, url, "one", 1, args.steps, 0.05))
            many = asyncio.run(round_trip(base, url, "many", args.clients, args.steps, 0.05))
    assert len(many) == args.clients * args.steps, len(many)
    report(
        f"stream_write_to_client_p95_{args.clients}_clients",
        p95(many) * 1000,
        "ms",
        "<= 200",
        p95(one) * 1000,
        higher_is_better=False,
    )
    report(
        f"stream_write_to_client_p50_{args.clients}_clients",
        statistics.median(many) * 1000,
        "ms",
        "",
        statistics.median(one) * 1000,
        higher_is_better=False,
    )


if __name__ == "__main__":
    main()

"""SDK recorder: what recording costs the agent's thread, and how fast recorded steps reach SQLite.

- per step: `run.think(...)` in the agent's thread (delivery held back, so only recording is
  timed), against building the same native step dict by hand (the least any recorder does);
- per tool call: a `@recorder.tool` function (tool_call + tool_result steps), same conditions,
  against the bare call;
- end to end: record N steps while the background thread delivers to a SQLite file, then
  `flush()`; against the pipeline importing the same steps as one native JSONL file
  (validation, redaction, store: the work delivery has to do anyway).
"""

from __future__ import annotations

import sys
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import report, timed  # noqa: E402

from replay_core.ingest.pipeline import import_bytes  # noqa: E402
from replay_core.sdk.recorder import Recorder  # noqa: E402
from replay_core.storage.store import Store  # noqa: E402

N = 50_000
TOOL_CALLS = 20_000
CONTENT = "The result of search_docs shows 12 matching rows; next check the index."
HELD = {"batch_size": 10**9, "flush_interval": 3600}  # delivery held back until flush()


def baseline_dicts(n: int) -> list[dict]:
    """The same step as a plain native dict: ids, timestamp, fields."""
    return [
        {
            "schema": "agent-replay/v1",
            "kind": "step",
            "session_id": "bench",
            "event_id": uuid.uuid4().hex,
            "seq": i,
            "type": "think",
            "timestamp": datetime.now(UTC).isoformat(),
            "content": CONTENT,
            "model": "gpt-4o",
            "tokens_in": 812,
            "tokens_out": 40,
            "cost_usd": 0.0004,
        }
        for i in range(1, n + 1)
    ]


def record(rec: Recorder, n: int) -> str:
    with rec.session("bench", agent_id="bench-agent") as run:
        for _ in range(n):
            run.think(CONTENT, model="gpt-4o", tokens_in=812, tokens_out=40, cost_usd=0.0004)
    return run.id


def bare(q: str, limit: int = 10) -> dict:
    return {"q": q, "hits": limit}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        Store(url).close()  # migrations done before timing

        rec = Recorder(url, spool_dir=f"{tmp}/spool", **HELD)
        dicts, base_s = timed(baseline_dicts, N)
        _, record_s = timed(record, rec, N)
        report("recorder_step_overhead", record_s / N * 1e6, "us/step", "<= 50", base_s / N * 1e6, higher_is_better=False)
        traced = rec.tool(bare)
        with rec.session("tools"):
            _, traced_s = timed(lambda: [traced("index", limit=i) for i in range(TOOL_CALLS)])
        _, bare_s = timed(lambda: [bare("index", limit=i) for i in range(TOOL_CALLS)])
        report(
            "recorder_tool_call_overhead",
            traced_s / TOOL_CALLS * 1e6,
            "us/call",
            "<= 100",
            bare_s / TOOL_CALLS * 1e6,
            higher_is_better=False,
        )
        assert rec.close()

        rec = Recorder(url, spool_dir=f"{tmp}/spool", batch_size=1000, flush_interval=0.2)
        sid, live_s = timed(record, rec, N)
        delivered, flush_s = timed(rec.flush)
        assert delivered
        rec.close()
        store = Store(url)
        assert store.get_session(sid)["steps"] == N
        store.close()
        raw = b"\n".join(orjson.dumps(d) for d in dicts) + b"\n"
        other = Store(f"sqlite:///{tmp}/import.db")
        _, import_s = timed(import_bytes, other, raw, "bench.jsonl")
        other.close()
        report("recorder_end_to_end_sqlite", N / (live_s + flush_s), "steps/s", ">= 10000", N / import_s)


if __name__ == "__main__":
    main()

"""A long live run, written batch after batch as an agent sends it (`Store.write_batches`, 500
steps a batch, each batch after the stored ones): what a batch costs once the run holds 50,000
steps, beside the same run's first batches (the baseline: what a batch costs when there is
nothing behind it). A write whose cost grows with the run shows as a ratio well under 1. On
SQLite, and on PostgreSQL (a throwaway database) when the local server answers.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import generated_objects, postgres_databases, report  # noqa: E402

from replay_core.events import parse_event  # noqa: E402
from replay_core.storage.store import Store, WriteBatch  # noqa: E402

STEPS, BATCH, SAMPLE = 50_000, 500, 10


def batches() -> list[WriteBatch]:
    """The run's session event and steps in batches of BATCH, as validated events (not timed)."""
    out: list[WriteBatch] = []
    for obj in generated_objects(1, STEPS):
        if obj["kind"] == "session_end":
            break
        if obj["kind"] == "session" or len(out[-1].steps.get(obj["session_id"], ())) == BATCH:
            out.append(WriteBatch())
        out[-1].add(parse_event(obj))
    return out


def measure(label: str, url: str) -> None:
    store = Store(url)
    try:
        took = []
        for batch in batches():
            start = time.perf_counter()
            store.write_batches([batch], default_source="api")
            took.append((time.perf_counter() - start) * 1000)
        first, last = statistics.mean(took[:SAMPLE]), statistics.mean(took[-SAMPLE:])
        report(
            f"live_run_batch_of_{BATCH}_at_{STEPS // 1000}k_steps_{label}",
            last,
            "ms",
            "flat: ~ the first batches",
            first,
            higher_is_better=False,
            batches=len(took),
            total_s=round(sum(took) / 1000, 2),
        )
    finally:
        store.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        measure("sqlite", f"sqlite:///{tmp}/live.db")
    with postgres_databases(1, "live_run") as urls:
        if urls:
            measure("postgres", urls[0])


if __name__ == "__main__":
    main()

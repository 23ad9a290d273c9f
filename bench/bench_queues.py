"""Review queues at their size limit: 5,000 runs, 4,000 of them reviewed already.

Timed: a reviewer's next item (claim + hold, the query the queue page runs on every redraw)
and saving a verdict, averaged over 50 items; the whole results table (`queues.results`,
what the Results expander, `queue show` and the CSV read). Baselines in the same run: one
`Store.get_session` (a primary-key read with its step totals) per claim, and one
`list_sessions(limit=5000)` for the results. SQLite by default, PostgreSQL with --db.

    python bench/bench_queues.py [--db URL]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import report  # noqa: E402

from replay_core.events import SessionEndEvent, SessionEvent  # noqa: E402
from replay_core.storage.actor import Actor  # noqa: E402
from replay_core.storage.store import SessionFilter, Store  # noqa: E402
from replay_core.team import queues  # noqa: E402

RUNS, REVIEWED, CLAIMS = 5000, 4000, 50
EDITOR, REVIEWER = Actor("bench", "editor", "bench"), Actor("bench", "reviewer", "bench")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db")
    args = parser.parse_args()
    url = args.db or f"sqlite:///{tempfile.mkdtemp()}/queues.db"
    store = Store(url)
    t0 = datetime(2026, 9, 1, tzinfo=UTC)
    events = []
    for i in range(RUNS):
        events += [
            SessionEvent(session_id=f"q-{i}", name=f"run {i}", started_at=t0 + timedelta(seconds=i)),
            SessionEndEvent(session_id=f"q-{i}", status="failed", ended_at=t0 + timedelta(seconds=i + 1)),
        ]
    store.write(events)
    qid = queues.create(store, "bench", flt=SessionFilter(status="failed"), actor=EDITOR)["id"]
    for item in store.queue_items(qid)[:REVIEWED]:
        store.save_queue_review(qid, item["id"], f"r{item['id'] % 7}", verdict="Bad")

    start = time.perf_counter()
    for _ in range(CLAIMS):
        item = queues.next_item(store, qid, "Sam", actor=REVIEWER)
        queues.save_review(store, qid, item["id"], "Sam", "Good", actor=REVIEWER)
    claim = (time.perf_counter() - start) / CLAIMS
    start = time.perf_counter()
    for i in range(CLAIMS):
        store.get_session(f"q-{i}")
    read = (time.perf_counter() - start) / CLAIMS
    start = time.perf_counter()
    res = queues.results(store, qid)
    whole = time.perf_counter() - start
    start = time.perf_counter()
    store.list_sessions(limit=RUNS)
    listed = time.perf_counter() - start
    assert len(res["items"]) == RUNS and res["queue"]["reviews"] == REVIEWED + CLAIMS
    print(f"# {store.dialect}, load average {os.getloadavg()}", file=sys.stderr, flush=True)
    report("queue_next_and_save_ms", claim * 1000, "ms", "< 50 ms per item at 5,000 runs", read * 1000, higher_is_better=False)
    report("queue_results_s", whole, "s", "< 1 s for 5,000 runs", listed, higher_is_better=False)
    store.close()


if __name__ == "__main__":
    main()

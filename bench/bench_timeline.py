"""Opening a 10,000- and a 100,000-step session (load + cycles + running totals + first state), and state at a step;
and the same open as the timeline page does it (the rest of a long run's messages rebuilt behind the first
state: snapshot._rebuild), with what a far jump at once then waits."""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import generated_jsonl, report, timed  # noqa: E402

from replay_core.ingest.pipeline import import_bytes  # noqa: E402
from replay_core.storage.store import Store  # noqa: E402
from replay_core.understand.snapshot import state_at  # noqa: E402
from replay_core.understand.timeline import open_timeline  # noqa: E402


def one(steps: int, label: str, goal_open: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{tmp}/tl.db")
        import_bytes(store, generated_jsonl(1, steps), "big.jsonl")
        sid = "bench-0"
        # baseline: the bare step rows through the store's connection, no objects built
        from sqlalchemy import text

        def raw():
            with store.engine.connect() as conn:
                return conn.execute(text("select * from steps where session_id = :s order by seq"), {"s": sid}).all()

        raw()
        tries = 5 if steps <= 10_000 else 3
        base = min(timed(raw)[1] for _ in range(tries)) * 1000

        def ready():  # what the timeline page needs before it can draw: the session open, its first state
            timeline = open_timeline(store, sid)
            state_at(timeline, 1, store)
            return timeline

        open_ms = min(timed(ready)[1] for _ in range(tries)) * 1000
        report(f"open_session_{label}_steps", open_ms, "ms", goal_open, base, higher_is_better=False)
        tl = ready()
        rng = random.Random(1)
        seqs = [rng.randint(1, steps) for _ in range(50)]
        state_ms = max(timed(state_at, tl, q, store)[1] for q in seqs) * 1000
        totals_ms = max(timed(tl.totals.at, tl.position_of(q))[1] for q in seqs) * 1000
        report(f"state_at_random_step_{label}_worst_of_50", state_ms, "ms", "<= 20", totals_ms, higher_is_better=False)

        def page_ready():  # as the timeline page opens it: the rest of a long run rebuilt behind the first state
            timeline = open_timeline(store, sid)
            state_at(timeline, 1, store, behind=True)
            return timeline

        page_ms = min(timed(page_ready)[1] for _ in range(tries)) * 1000
        report(f"open_session_{label}_steps_as_the_page_does", page_ms, "ms", goal_open, open_ms, higher_is_better=False)
        tl = page_ready()  # a far step at once: waits for the rebuild behind (a person's first click comes later)
        far_ms = timed(state_at, tl, steps, store)[1] * 1000
        report(f"state_at_last_step_right_after_the_page_open_{label}", far_ms, "ms", "-", state_ms, higher_is_better=False)
        store.close()


def main() -> None:
    one(10_000, "10k", "<= 150")
    one(100_000, "100k", "<= 1000")


if __name__ == "__main__":
    main()

"""Comparing two runs, against difflib's matching on signatures alone.

5,000-step pairs (goal ≤ 1 s): a few changed, dropped and inserted steps (a replay that
mostly agrees); every thought reworded (another model: the exact pass gives way to the
signature pass); the same pair through the store (loading both runs included).
50,000-step pair with 5,000 differences (goal ≤ 3 s through the store, aligned exactly).
"""

from __future__ import annotations

import difflib
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import generated_objects, report, timed  # noqa: E402

from replay_core.events import StepEvent, parse_event  # noqa: E402
from replay_core.ingest.pipeline import ingest  # noqa: E402
from replay_core.storage.store import Store  # noqa: E402
from replay_core.understand.compare import compare, compare_steps, signature  # noqa: E402

N = 5000


def run(session_id: str, n: int = N) -> list[StepEvent]:
    events = [parse_event(o) for o in generated_objects(1, n)]
    return [e.model_copy(update={"session_id": session_id}) for e in events if e.kind == "step"]


def edited(steps: list[StepEvent], rng: random.Random, changed: int = N // 100, moved: int = 5) -> list[StepEvent]:
    """Some steps changed (1% by default), `moved` dropped and as many inserted; seqs renumbered."""
    out = list(steps)
    for i in rng.sample(range(len(out)), changed):
        out[i] = out[i].model_copy(update={"content": f"changed {i}", "tool_args": {"query": f"other {i}"}})
    for i in sorted(rng.sample(range(len(out)), moved), reverse=True):
        del out[i]
    for i in rng.sample(range(len(out)), moved):
        out.insert(i, StepEvent(session_id=out[0].session_id, type="think", content=f"an extra thought {i}"))
    return [s.model_copy(update={"seq": k + 1}) for k, s in enumerate(out)]


def difflib_baseline(a: list[StepEvent], b: list[StepEvent]) -> None:
    difflib.SequenceMatcher(None, [signature(s) for s in a], [signature(s) for s in b], autojunk=False).get_matching_blocks()


def main() -> None:
    rng = random.Random(5)
    a = run("a")
    b = edited(run("b"), rng)
    sa, sb = {"id": "a", "status": "succeeded"}, {"id": "b", "status": "succeeded"}
    base = min(timed(difflib_baseline, a, b)[1] for _ in range(3))
    value = min(timed(compare_steps, a, b, sa, sb)[1] for _ in range(3))
    report("compare_5k_steps_1pct_edited", value, "s", "<= 1", base, higher_is_better=False)

    reworded = [
        s.model_copy(update={"content": f"another model's words {k}"}) if s.type in ("think", "decision") else s
        for k, s in enumerate(run("c"))
    ]
    base = min(timed(difflib_baseline, a, reworded)[1] for _ in range(3))
    value = min(timed(compare_steps, a, reworded, sa, sb)[1] for _ in range(3))
    report("compare_5k_steps_every_thought_reworded", value, "s", "<= 1", base, higher_is_better=False)

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{tmp}/cmp.db")
        ingest(store, a + b)
        load = min(timed(lambda: (store.load_steps("a"), store.load_steps("b")))[1] for _ in range(3))
        value = min(timed(compare, store, "a", "b")[1] for _ in range(3))
        report("compare_5k_steps_from_sqlite", value, "s", "<= 1", load, higher_is_better=False)

        big_a = run("big-a", 50_000)
        big_b = edited(run("big-b", 50_000), rng, changed=5000, moved=500)
        ingest(store, big_a + big_b)
        load = timed(lambda: (store.load_steps("big-a"), store.load_steps("big-b")))[1]
        result, value = timed(compare, store, "big-a", "big-b")
        differing = sum(1 for row in result.aligned if not row.same)
        print(f"# 50k pair: {differing} rows differ", file=sys.stderr, flush=True)
        report("compare_50k_steps_5k_differences_from_sqlite", value, "s", "<= 3", load, higher_is_better=False)
        store.close()


if __name__ == "__main__":
    main()

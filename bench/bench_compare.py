"""Comparing two 5,000-step runs (goal ≤ 1 s), against difflib's matching on signatures alone.

Three pairs: a few changed, dropped and inserted steps (a replay that mostly agrees);
every thought reworded (another model: the exact pass gives way to the signature
pass); and the same pair through the store (loading both runs included).
"""

from __future__ import annotations

import difflib
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import generated_objects, report, timed  # noqa: E402

from replay_core.understand.compare import compare, compare_steps, signature  # noqa: E402
from replay_core.events import StepEvent, parse_event  # noqa: E402
from replay_core.ingest.pipeline import ingest  # noqa: E402
from replay_core.storage.store import Store  # noqa: E402

N = 5000


def run(session_id: str) -> list[StepEvent]:
    events = [parse_event(o) for o in generated_objects(1, N)]
    return [e.model_copy(update={"session_id": session_id}) for e in events if e.kind == "step"]


def edited(steps: list[StepEvent], rng: random.Random) -> list[StepEvent]:
    """About 1% of the steps changed, 5 dropped, 5 inserted; seqs renumbered."""
    out = list(steps)
    for i in rng.sample(range(len(out)), N // 100):
        out[i] = out[i].model_copy(update={"content": f"changed {i}", "tool_args": {"query": f"other {i}"}})
    for i in sorted(rng.sample(range(len(out)), 5), reverse=True):
        del out[i]
    for i in rng.sample(range(len(out)), 5):
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

    reworded = [s.model_copy(update={"content": f"another model's words {k}"}) if s.type in ("think", "decision") else s
                for k, s in enumerate(run("c"))]
    base = min(timed(difflib_baseline, a, reworded)[1] for _ in range(3))
    value = min(timed(compare_steps, a, reworded, sa, sb)[1] for _ in range(3))
    report("compare_5k_steps_every_thought_reworded", value, "s", "<= 1", base, higher_is_better=False)

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{tmp}/cmp.db")
        ingest(store, a + b)
        load = min(timed(lambda: (store.load_steps("a"), store.load_steps("b")))[1] for _ in range(3))
        value = min(timed(compare, store, "a", "b")[1] for _ in range(3))
        report("compare_5k_steps_from_sqlite", value, "s", "<= 1", load, higher_is_better=False)
        store.close()


if __name__ == "__main__":
    main()

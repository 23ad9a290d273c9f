"""Replay overhead per step, outside the model call: context, matching, storing, the closing compare.

Two figures on a generated 2,000-step run in SQLite, each next to the cost of simply
ingesting the same steps (the floor: a replay stores every step it makes):
- a null replay (`recorded`): no model call at all, so all of its time is overhead;
- a live replay of 400 steps through litellm against the scripted local server,
  making the original's calls: its time minus the time spent in litellm calls.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent / "tests"))
from common import generated_jsonl, report, timed  # noqa: E402
from openai_server import OpenAIServer  # noqa: E402

from replay_core.ingest.pipeline import import_bytes  # noqa: E402
from replay_core.storage.store import Store  # noqa: E402
from replay_core.whatif.replay import open_recording, replay  # noqa: E402
from replay_core.whatif.replay_config import ReplayConfig  # noqa: E402

STEPS = 2000
LIVE_TO = 400


def main() -> None:
    data = generated_jsonl(1, STEPS)
    with tempfile.TemporaryDirectory() as tmp:
        floor_store = Store(f"sqlite:///{tmp}/floor.db")
        ingest_s = timed(import_bytes, floor_store, data, "run.jsonl")[1]
        per_step_floor = ingest_s * 1000 / STEPS

        store = Store(f"sqlite:///{tmp}/replay.db")
        import_bytes(store, data, "run.jsonl")
        result, seconds = timed(replay, store, "bench-0", None, None, ReplayConfig(model="recorded"))
        assert result.first_divergence is None and result.steps == STEPS, result
        report(
            "replay_null_overhead_per_step_2k",
            seconds * 1000 / STEPS,
            "ms/step",
            "overhead only",
            per_step_floor,
            higher_is_better=False,
        )

        rec = open_recording(store, "bench-0", 1, LIVE_TO)
        with OpenAIServer() as server:
            for turn in rec.turns:
                calls = [(c.tool_name, c.tool_args) for c in turn.calls]
                text = next((s.content for s in turn.steps if s.type in ("think", "decision")), None)
                server.script(server.tool_calls(*calls, content=text) if calls else server.text(text or ""))
            config = ReplayConfig(model="openai/fake-model", api_base=server.base_url)
            result = replay(store, "bench-0", 1, LIVE_TO, config)
        assert result.outcome == "completed" and result.model_calls == len(rec.turns), result
        report(
            "replay_live_overhead_per_step_400",
            result.overhead_ms / result.steps,
            "ms/step",
            "outside the model call",
            per_step_floor,
            higher_is_better=False,
        )
        report(
            "replay_live_model_call_ms",
            result.latency_ms / result.model_calls,
            "ms/call",
            "litellm + local server",
            None,
            higher_is_better=False,
        )
        store.close()
        floor_store.close()


if __name__ == "__main__":
    main()

"""OpenTelemetry import speed: OTLP/JSON read and mapped to steps, and imported into SQLite.

The file holds plain GenAI-convention spans (invoke_agent, chat with input/output
messages and tool calls, execute_tool), the shape instrumentations send: it is our own
OTLP export of generated runs with the `agent_replay.*` attributes removed. The baseline
is orjson.loads of the same bytes, so the ratio says what reading spans into steps (and
storing them) costs on top of parsing the JSON.
"""

from __future__ import annotations

import gc
import sys
import tempfile
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import generated_objects, report, timed  # noqa: E402

from replay_core.events import parse_event  # noqa: E402
from replay_core.ingest.formats import BadRecord, otel, otlp_export  # noqa: E402
from replay_core.ingest.pipeline import import_bytes  # noqa: E402
from replay_core.storage.store import Store  # noqa: E402

N_SESSIONS, PER_SESSION = 50, 1000


def genai_only(doc: dict) -> bytes:
    for rs in doc["resourceSpans"]:
        for span in rs["scopeSpans"][0]["spans"]:
            span["attributes"] = [a for a in span["attributes"] if not a["key"].startswith(otel.OVERRIDE)]
        rs["resource"]["attributes"] = [a for a in rs["resource"]["attributes"] if not a["key"].startswith(otel.OVERRIDE)]
    return orjson.dumps(doc)


def main() -> None:
    events = [parse_event(o) for o in generated_objects(N_SESSIONS, PER_SESSION)]
    _, export_s = timed(otlp_export.to_otlp, events)
    data = genai_only(otlp_export.to_otlp(events))
    del events  # measured below on the bytes alone, as an import sees them
    gc.collect()
    steps = sum(1 for e in otel.OTLP_JSON.read(data, "bench.json") if not isinstance(e, BadRecord) and e.kind == "step")
    report(f"export_otlp_json_{steps // 1000}k_steps", steps / export_s, "steps/s", ">= 10000", None)
    _, parse_s = timed(orjson.loads, data)
    baseline = steps / parse_s
    _, read_s = timed(lambda: list(otel.OTLP_JSON.read(data, "bench.json")))
    report(f"read_otlp_json_{steps // 1000}k_steps", steps / read_s, "steps/s", ">= 20000", baseline)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{tmp}/otel.db")
        result, import_s = timed(import_bytes, store, data, "bench.json")
        assert result.steps == steps, (result.steps, steps)
        store.close()
    report(f"import_otlp_json_sqlite_{steps // 1000}k_steps", steps / import_s, "steps/s", ">= 10000", baseline)


if __name__ == "__main__":
    main()

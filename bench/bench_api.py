"""HTTP ingest through the served app (`streamlit run streamlit_app.py`), batches of 500 steps,
against the same events ingested in process (the pipeline without HTTP) as the baseline."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import httpx
import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from common import generated_objects, report, timed  # noqa: E402

from replay_core.events import parse_event  # noqa: E402
from replay_core.ingest.pipeline import ingest  # noqa: E402
from replay_core.storage.store import Store  # noqa: E402

SESSIONS, PER_SESSION, BATCH = 20, 2_000, 500
STEPS = SESSIONS * PER_SESSION
TOKEN = "bench-token"


def requests() -> list[tuple[str, bytes]]:
    """(path, body) in the order an agent would send them: open, steps in batches of 500, end."""
    out, pending = [], []
    for obj in generated_objects(SESSIONS, PER_SESSION):
        sid = obj["session_id"]
        if obj["kind"] == "session":
            out.append(("/api/v1/sessions", orjson.dumps(obj)))
        elif obj["kind"] == "step":
            pending.append(obj)
            if len(pending) == BATCH:
                out.append((f"/api/v1/sessions/{sid}/steps", orjson.dumps(pending)))
                pending = []
        else:
            out.append((f"/api/v1/sessions/{sid}/end", orjson.dumps(obj)))
    return out


def over_http(base: str, bodies: list[tuple[str, bytes]]) -> float:
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    with httpx.Client(base_url=base, headers=headers, timeout=60) as http:
        def send():
            stored = 0
            for path, body in bodies:
                res = http.post(path, content=body)
                res.raise_for_status()
                stored += res.json()["steps"]
            return stored

        stored, seconds = timed(send)
    assert stored == STEPS, stored
    return STEPS / seconds


def in_process(url: str) -> float:
    store = Store(url)
    events = [parse_event(o) for o in generated_objects(SESSIONS, PER_SESSION)]

    def run():
        return sum(ingest(store, events[i : i + BATCH]).steps for i in range(0, len(events), BATCH))

    stored, seconds = timed(run)
    assert stored == STEPS, stored
    store.close()
    return STEPS / seconds


def main() -> None:
    from apptest_helpers import served_app

    bodies = requests()
    with tempfile.TemporaryDirectory() as tmp:
        base_rate = in_process(f"sqlite:///{tmp}/direct.db")
        url = f"sqlite:///{tmp}/served.db"
        Store(url).close()
        with served_app(url, AGENT_REPLAY_API_TOKENS=TOKEN) as base:
            value = over_http(base, bodies)
    report("http_ingest_batches_of_500_sqlite", value, "steps/s", ">= 5000", base_rate)


if __name__ == "__main__":
    main()

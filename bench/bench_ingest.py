"""Native JSONL import (validation and redaction included) vs raw sqlite3 executemany."""

from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
import uuid
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import generated_jsonl, report, timed  # noqa: E402

from replay_core.ingest.pipeline import import_bytes  # noqa: E402
from replay_core.storage.store import Store  # noqa: E402

N_SESSIONS, PER_SESSION = 200, 1000
STEPS = N_SESSIONS * PER_SESSION


def baseline_sqlite(data: bytes, path: str) -> float:
    """Raw sqlite3: parse lines and executemany the same columns, no validation."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("create table steps (session_id, seq, event_id, type, timestamp, duration_ms, content, tool_name, tool_args,"
                 " tool_call_id, tokens_in, tokens_out, cost_usd, unique(session_id, event_id))")

    def run():
        rows = []
        for line in data.split(b"\n"):
            if not line:
                continue
            o = orjson.loads(line)
            if o["kind"] != "step":
                continue
            rows.append((o["session_id"], o["seq"], o["event_id"], o["type"], o["timestamp"], o.get("duration_ms"), o.get("content"),
                         o.get("tool_name"), orjson.dumps(o.get("tool_args")).decode(), o.get("tool_call_id"), o.get("tokens_in"),
                         o.get("tokens_out"), o.get("cost_usd")))
        with conn:
            conn.executemany("insert into steps values (?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)

    _, seconds = timed(run)
    conn.close()
    return STEPS / seconds


def ours(url: str, data: bytes) -> float:
    store = Store(url)
    report_, seconds = timed(import_bytes, store, data, "bench.jsonl")
    assert report_.steps == STEPS, report_.steps
    store.close()
    return STEPS / seconds


def main() -> None:
    data = generated_jsonl(N_SESSIONS, PER_SESSION)
    with tempfile.TemporaryDirectory() as tmp:
        base = baseline_sqlite(data, os.path.join(tmp, "raw.db"))
        value = ours(f"sqlite:///{tmp}/ours.db", data)
        report("import_native_sqlite_200k", value, "steps/s", ">= 50000", base)
    try:
        import psycopg

        admin = psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True, connect_timeout=3)
    except Exception as exc:  # no server: say so, do not fake a figure
        print(orjson.dumps({"bench": "import_native_postgres_200k", "skipped": str(exc).splitlines()[0]}).decode())
        return
    name = f"bench_{uuid.uuid4().hex[:8]}"
    admin.execute(f'create database "{name}"')
    try:
        value = ours(f"postgresql://postgres@127.0.0.1:5432/{name}", data)
        report("import_native_postgres_200k", value, "steps/s", ">= 20000", base)
    finally:
        admin.execute(f'drop database "{name}" with (force)')


if __name__ == "__main__":
    main()

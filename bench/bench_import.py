"""Native JSONL import, whole process (`agent-replay import`: validation, redaction, rollups
included), beside raw sqlite3 executemany of the same rows into a table with the same unique
key, indexes and FTS5 search index, measured in the same run; also that baseline's database part
alone (its parse left out), the ceiling of any import into this schema on this machine.
PostgreSQL too, when a server is reachable, beside raw psycopg COPY of the same rows into the
same schema, and that COPY alone.

    python bench/bench_import.py            # 1,000,000 steps = 20,000 runs x 50
    python bench/bench_import.py --runs 2000
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import generated_jsonl, report, timed  # noqa: E402

from replay_core.storage.columns import STEP_COLUMNS  # noqa: E402
from replay_core.storage.rollups import call_key  # noqa: E402
from replay_core.storage.search import SQLITE_FILL, SQLITE_INDEX  # noqa: E402

PER_RUN = 50
CLI = [sys.executable, "-m", "replay_core.cli"]
COLUMNS = ("session_id", *STEP_COLUMNS, "call_key", "replay_config")  # a steps row as the schema holds it


def raw_rows(data: bytes) -> tuple[list[str], list[tuple]]:
    """The baselines' parse: each line decoded, its run's id kept, a step's row in COLUMNS order (no validation)."""
    runs, rows = [], []
    for line in data.split(b"\n"):
        if not line:
            continue
        o = orjson.loads(line)
        if o["kind"] == "session":
            runs.append(o["session_id"])
        if o["kind"] != "step":
            continue
        args = o.get("tool_args")
        rows.append(
            (
                o["session_id"],
                o["seq"],
                o["event_id"],
                None,
                o["type"],
                o["timestamp"],
                o.get("duration_ms"),
                None,
                o.get("model"),
                o.get("content"),
                o.get("tool_name"),
                None if args is None else orjson.dumps(args).decode(),
                o.get("tool_call_id"),
                "ok",
                None,
                0,
                o.get("tokens_in"),
                o.get("tokens_out"),
                o.get("cost_usd"),
                None,
                0,
                call_key(o["type"], o.get("tool_name"), args),
            )
        )
    return runs, rows


def baseline_sqlite(data: bytes, path: str, steps: int) -> tuple[float, float, float]:
    """Raw sqlite3: parse each line and executemany the same columns, no validation, into a
    table with our unique key (session_id, event_id), our four step indexes and our FTS5 search
    index, filled as `Store.write` fills it (one INSERT … SELECT in the same transaction).
    Returns steps/s with the search index, steps/s of the same work without it, and steps/s of the
    database's part alone (insert, search index, commit; the parse left out): what no import into
    this schema on this machine can pass, whatever it does before the insert."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"create table steps (id integer primary key, {', '.join(COLUMNS)}, unique(session_id, event_id))")
    conn.execute(
        "create index ix_rollup on steps (session_id, seq, type, status, retry, duration_ms, tokens_in, tokens_out,"
        " cost_usd, timestamp, tool_name, error_class)"
    )
    conn.execute("create index ix_tool on steps (tool_name)")
    conn.execute("create index ix_call_key on steps (session_id, call_key) where call_key is not null")
    conn.execute("create index ix_call_id on steps (session_id, tool_call_id) where tool_call_id is not null")
    conn.execute(SQLITE_INDEX[0])
    filled, parsed = [], []

    def run():
        (_, rows), took = timed(raw_rows, data)
        parsed.append(took)
        with conn:
            conn.executemany(f"insert into steps ({', '.join(COLUMNS)}) values ({', '.join('?' * len(COLUMNS))})", rows)
            filled.append(timed(conn.execute, SQLITE_FILL)[1])

    _, seconds = timed(run)
    assert conn.execute("select count(*) from steps").fetchone()[0] == steps
    assert conn.execute("select count(*) from steps_fts where steps_fts match 'rows'").fetchone()[0] > 0
    conn.close()
    return steps / seconds, steps / (seconds - filled[0]), steps / (seconds - parsed[0])


def baseline_postgres(data: bytes, url: str, steps: int) -> tuple[float, float]:
    """Raw psycopg: the same parse, then COPY of each run's id and of the step rows into our own schema
    (`db upgrade` of an empty database: the same table, unique key, foreign key, indexes and search index),
    in one transaction. Returns steps/s, and steps/s of the COPY alone (the parse left out)."""
    import psycopg

    subprocess.run([*CLI, "db", "upgrade"], env={**os.environ, "AGENT_REPLAY_DB_URL": url}, check=True, capture_output=True)
    conn = psycopg.connect(url)

    parsed = []

    def run():
        (runs, rows), took = timed(raw_rows, data)
        parsed.append(took)
        with conn.transaction(), conn.cursor() as cur:
            with cur.copy("COPY sessions (id, status, created_at) FROM STDIN") as copy:
                for sid in runs:
                    copy.write_row((sid, "succeeded", "2026-09-01T00:00:00+00:00"))
            with cur.copy(f"COPY steps ({', '.join(COLUMNS)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)

    _, seconds = timed(run)
    assert conn.execute("select count(*) from steps").fetchone()[0] == steps
    conn.close()
    return steps / seconds, steps / (seconds - parsed[0])


def ours(url: str, path: str, steps: int, *, again: bool = True) -> float:
    """`agent-replay import` in its own process, timed from launch to exit (schema made first); `again`
    imports the file once more, untimed, to check that it stores nothing (on PostgreSQL that check costs
    as much as the import, and `make bench` has 15 minutes: tests/test_import_accounting.py holds it on both)."""
    env = {**os.environ, "AGENT_REPLAY_DB_URL": url}
    subprocess.run([*CLI, "db", "upgrade"], env=env, check=True, capture_output=True)
    start = time.perf_counter()
    done = subprocess.run([*CLI, "import", path, "--json"], env=env, check=True, capture_output=True)
    seconds = time.perf_counter() - start
    stored = orjson.loads(done.stdout)["steps"]
    assert stored == steps, stored
    if again:
        repeat = subprocess.run([*CLI, "import", path, "--json"], env=env, check=True, capture_output=True)
        assert orjson.loads(repeat.stdout)["steps"] == 0  # idempotent: a re-import stores nothing
    return steps / seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20_000)
    runs = parser.parse_args().runs
    steps = runs * PER_RUN
    label = f"{steps // 1000}k" if steps < 1_000_000 else f"{steps / 1e6:g}M"
    data = generated_jsonl(runs, PER_RUN)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "runs.jsonl")
        Path(path).write_bytes(data)
        base, without_search, database_alone = baseline_sqlite(data, os.path.join(tmp, "raw.db"), steps)
        value = ours(f"sqlite:///{tmp}/ours.db", path, steps)
        report(
            f"import_native_sqlite_{label}",
            value,
            "steps/s",
            ">= 100000 and >= 0.45 x raw",
            base,
            load=os.getloadavg(),
            baseline_without_search=round(without_search, 3),
            baseline_insert_alone=round(database_alone, 3),
        )
        try:
            import psycopg

            admin = psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True, connect_timeout=3)
        except Exception as exc:  # no server: say so, do not fake a figure
            print(orjson.dumps({"bench": f"import_native_postgres_{label}", "skipped": str(exc).splitlines()[0]}).decode())
            return
        names = [f"bench_{uuid.uuid4().hex[:8]}" for _ in range(2)]
        for name in names:
            admin.execute(f'create database "{name}"')
        try:
            base, copy_alone = baseline_postgres(data, f"postgresql://postgres@127.0.0.1:5432/{names[0]}", steps)
            admin.execute(f'drop database "{names[0]}" with (force)')  # its autovacuum would take the server's CPU from ours
            value = ours(f"postgresql://postgres@127.0.0.1:5432/{names[1]}", path, steps, again=False)
            report(
                f"import_native_postgres_{label}",
                value,
                "steps/s",
                ">= 50000",
                base,
                load=os.getloadavg(),
                baseline_copy_alone=round(copy_alone, 3),
            )
        finally:
            for name in names:
                admin.execute(f'drop database if exists "{name}" with (force)')


if __name__ == "__main__":
    main()

"""Shared bench helpers: one JSON line per figure, and generated native runs."""

from __future__ import annotations

import json
import os
import random
import time
import uuid
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import orjson

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
TOOLS = ["search_docs", "read_file", "run_tests", "http_get", "sql_query"]


# The API alone under uvicorn in a process of its own: `python -c SERVE_API DB_URL PORT TOKEN [MAX_BODY_BYTES]`.
SERVE_API = """
import sys, uvicorn
from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.storage.store import Store
extra = {"max_body": int(sys.argv[4])} if len(sys.argv) > 4 else {}
app = create_app(Store(sys.argv[1]), access=Access(api_tokens=(sys.argv[3],)), **extra)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


def report(
    bench: str, value: float, unit: str, goal: str, baseline: float | None, higher_is_better: bool = True, **extra
) -> None:
    ratio = None
    if baseline:
        ratio = round(value / baseline if higher_is_better else baseline / value, 3) if value else None
    print(
        json.dumps(
            {
                "bench": bench,
                "value": round(value, 3),
                "unit": unit,
                "goal": goal,
                "baseline": None if baseline is None else round(baseline, 3),
                "ratio": ratio,
                "load": [round(x, 2) for x in os.getloadavg()],
                **extra,
            }
        ),
        flush=True,
    )


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def generated_objects(sessions: int, steps_per_session: int, seed: int = 7):
    """Native event dicts: think → tool_call → tool_result → decision loops."""
    rng = random.Random(seed)
    t0 = datetime(2026, 9, 1, tzinfo=UTC)
    cycle = ["think", "tool_call", "tool_result", "decision"]
    for s in range(sessions):
        sid = f"bench-{s}"
        start = t0 + timedelta(minutes=s)
        yield {
            "schema": "agent-replay/v1",
            "kind": "session",
            "session_id": sid,
            "name": f"bench run {s}",
            "model": "gpt-4o",
            "agent_id": "bench-agent",
            "started_at": start.isoformat(),
        }
        for i in range(1, steps_per_session + 1):
            kind = cycle[i % 4]
            tool = TOOLS[i % len(TOOLS)]
            obj = {
                "schema": "agent-replay/v1",
                "kind": "step",
                "session_id": sid,
                "event_id": f"e{i}",
                "seq": i,
                "type": kind,
                "timestamp": (start + timedelta(seconds=i)).isoformat(),
                "duration_ms": rng.randint(5, 900),
            }
            if kind in ("think", "decision"):
                obj.update(
                    content=f"Step {i}: the result of {tool} shows {rng.randint(0, 99)} matching rows; next check the index.",
                    model="gpt-4o",
                    tokens_in=rng.randint(200, 4000),
                    tokens_out=rng.randint(10, 300),
                    cost_usd=0.0004,
                )
            elif kind == "tool_call":
                obj.update(tool_name=tool, tool_args={"query": f"item {i}", "limit": 10}, tool_call_id=f"c{i}")
            else:
                obj.update(tool_name=tool, tool_call_id=f"c{i - 1}", content=f'{{"rows": {rng.randint(0, 50)}, "ok": true}}')
            yield obj
        yield {"schema": "agent-replay/v1", "kind": "session_end", "session_id": sid, "status": "succeeded"}


def generated_jsonl(sessions: int, steps_per_session: int) -> bytes:
    return b"\n".join(orjson.dumps(o) for o in generated_objects(sessions, steps_per_session)) + b"\n"


@contextmanager
def postgres_databases(count: int, label: str):
    """`count` throwaway databases on the local server, dropped after; None when there is no server."""
    import psycopg

    try:
        admin = psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        print(orjson.dumps({"bench": f"{label}_postgres", "skipped": str(exc).splitlines()[0]}).decode())
        yield None
        return
    names = [f"bench_{uuid.uuid4().hex[:8]}" for _ in range(count)]
    try:
        for name in names:
            admin.execute(f'create database "{name}"')
        yield [PG_ADMIN.rsplit("/", 1)[0] + "/" + name for name in names]
    finally:
        for name in names:
            admin.execute(f'drop database if exists "{name}" with (force)')
        admin.close()

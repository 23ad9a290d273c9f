"""Full-text search at 1M steps (20,000 runs × 50) on SQLite, and on PostgreSQL (200k by default):
what the runs page asks for one search (count, one page of 25 runs, their matched steps with
snippets) for a rare word and a common one, and search inside one run; baseline the LIKE scan
over step content the search replaced, on the same database in the same run. Also the cost
the index adds to inserting steps (SQLite, triggers on against off)."""

from __future__ import annotations

import argparse
import random
import sqlite3
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import TOOLS, report  # noqa: E402

from replay_core.storage import search  # noqa: E402
from replay_core.storage.store import SessionFilter, Store  # noqa: E402

PER_RUN = 50
RARE, COMMON = "kumquat", "timeout"  # in about 1 step of 10,000 and 1 of 100
COLUMNS = ("session_id", "seq", "event_id", "type", "content", "tool_name", "tool_args", "status", "retry", "redacted")


def vocabulary(rng: random.Random, n: int = 20_000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(n)]


def generate(runs: int, seed: int = 11):
    """(sessions, steps) rows: sentences of 12 Zipf-ish words, the rare and common word sprinkled in."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    cum, total = [], 0.0
    for i in range(len(words)):  # Zipf-ish weights, accumulated once (choices would redo it per call)
        total += 1 / (i + 1)
        cum.append(total)
    sessions, steps = [], []
    for r in range(runs):
        sid = f"run-{r}"
        sessions.append((sid, f"bench run {r}", "succeeded", "2026-09-01 00:00:00", "2026-09-01 00:00:00"))
        for seq in range(1, PER_RUN + 1):
            sentence = rng.choices(words, cum_weights=cum, k=12)
            roll = rng.random()
            if roll < 1e-4:
                sentence[rng.randrange(12)] = RARE
            elif roll < 1e-2:
                sentence[rng.randrange(12)] = COMMON
            if seq % 3 == 0:
                tool = TOOLS[seq % len(TOOLS)]
                steps.append(
                    (
                        sid,
                        seq,
                        f"e{seq}",
                        "tool_call",
                        None,
                        tool,
                        orjson.dumps({"query": " ".join(sentence[:4])}).decode(),
                        "ok",
                        0,
                        0,
                    )
                )
            else:
                steps.append((sid, seq, f"e{seq}", "think", " ".join(sentence), None, None, "ok", 0, 0))
    return sessions, steps


SESSION_SQL = "insert into sessions (id, name, status, started_at, created_at) values (?, ?, ?, ?, ?)"
STEP_SQL = f"insert into steps ({', '.join(COLUMNS)}) values ({', '.join('?' * len(COLUMNS))})"


def fill_sqlite(path: Path, sessions, steps) -> tuple[float, float]:
    """Rows straight into a migrated database, then the index built for them as migration 0010
    builds it for an existing database: (rows/s inserting, rows/s indexing)."""
    Store(f"sqlite:///{path}").close()
    db = sqlite3.connect(path)
    db.executemany(SESSION_SQL, sessions)
    db.commit()
    start = time.perf_counter()
    for i in range(0, len(steps), 100_000):
        db.executemany(STEP_SQL, steps[i : i + 100_000])
        db.commit()
    inserted = time.perf_counter() - start
    start = time.perf_counter()
    db.execute(search.SQLITE_FILL)
    db.commit()
    indexed = time.perf_counter() - start
    db.execute("ANALYZE")
    db.commit()
    db.close()
    return len(steps) / inserted, len(steps) / indexed


def write_rate(url: str, steps, *, index: bool) -> float:
    """Steps/s through Store.write in batches of 1,000 (one run each), with or without the index's statement."""
    from contextlib import nullcontext

    from replay_core.events import StepEvent

    store = Store(url)
    if not index:
        store._search_indexed = lambda conn: nullcontext(lambda: None)  # what the real one yields: a "fill now" call
    events = [
        StepEvent(
            session_id=r[0],
            seq=r[1],
            event_id=r[2],
            type=r[3],
            content=r[4],
            tool_name=r[5],
            tool_args=None if r[6] is None else orjson.loads(r[6]),
        )
        for r in steps
    ]
    start = time.perf_counter()
    for i in range(0, len(events), 1000):
        store.write(events[i : i + 1000])
    rate = len(events) / (time.perf_counter() - start)
    store.close()
    return rate


def runs_page(store: Store, word: str) -> int:
    flt = SessionFilter(text=word)
    total = store.count_sessions(flt)
    rows = store.list_sessions(flt, limit=25)
    store.search_matches([r["id"] for r in rows], word)
    return total


def like_scan(store: Store, word: str) -> int:
    """The search before the index: LIKE over every step's content (what SessionFilter.text did)."""
    from sqlalchemy import text

    sql = (
        "select count(*) from sessions where lower(name) like :p or exists "
        "(select 1 from steps where steps.session_id = sessions.id and lower(steps.content) like :p)"
    )
    with store.engine.connect() as conn:
        return conn.scalar(text(sql), {"p": f"%{word}%"})


def best(fn, *args, repeat: int = 5) -> tuple[float, object]:
    out, times = None, []
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - start)
    return min(times), out


def figures(store: Store, label: str, n_steps: int) -> None:
    size = f"{n_steps // 1000}k" if n_steps < 1_000_000 else f"{n_steps / 1e6:g}M"
    for word, kind in ((RARE, "rare"), (COMMON, "common")):
        ours, total = best(runs_page, store, word)
        base, base_total = best(like_scan, store, word, repeat=1)
        assert total >= base_total, (word, total, base_total)  # what the scan finds, and tool arguments besides
        report(
            f"search_runs_page_{kind}_word_{size}_steps_{label}", ours * 1000, "ms", "<= 100", base * 1000, higher_is_better=False
        )
    sid = store.list_sessions(SessionFilter(text=COMMON), limit=1)[0]["id"]
    ours, (hits, _) = best(store.search_in_session, sid, COMMON)
    assert hits >= 1
    base, _ = best(store.load_steps, sid)  # the in-run search of the page: the run's steps loaded, scanned in Python
    report(f"search_in_run_{size}_steps_{label}", ours * 1000, "ms", "<= 100", base * 1000, higher_is_better=False)


def postgres(sessions, steps) -> None:
    try:
        import psycopg

        admin = psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True, connect_timeout=3)
    except Exception as exc:  # no server: say so, never a made-up figure
        print(orjson.dumps({"bench": "search_postgres", "skipped": str(exc).splitlines()[0]}).decode())
        return
    name = f"bench_{uuid.uuid4().hex[:8]}"
    admin.execute(f'create database "{name}"')
    url = f"postgresql://postgres@127.0.0.1:5432/{name}"
    try:
        Store(url).close()
        with psycopg.connect(url) as conn, conn.cursor() as cur:
            cur.executemany(
                "insert into sessions (id, name, status, started_at, created_at) values (%s, %s, %s, %s, %s)", sessions
            )
            conn.commit()

            def copy_steps() -> float:
                start = time.perf_counter()
                with cur.copy(f"copy steps ({', '.join(COLUMNS)}) from stdin") as copy:
                    for row in steps:
                        copy.write_row(row)
                conn.commit()
                return len(steps) / (time.perf_counter() - start)

            cur.execute(search.PG_DROP)
            without = copy_steps()
            cur.execute("truncate steps")
            cur.execute(search.PG_INDEX)
            conn.commit()
            report("search_copy_with_index_postgres", copy_steps(), "steps/s", "(the index's cost)", without)
            cur.execute("analyze")
            conn.commit()
        store = Store(url, migrate=False)
        figures(store, "postgres", len(steps))
        store.close()
    finally:
        admin.execute(f'drop database if exists "{name}" with (force)')
        admin.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20_000, help="runs of 50 steps on SQLite")
    parser.add_argument("--pg-runs", type=int, default=4_000, help="runs of 50 steps on PostgreSQL (0: skip)")
    args = parser.parse_args()
    sessions, steps = generate(args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        some = [(f"w{n // 1000}", *row[1:]) for n, row in enumerate(steps[:50_000])]
        without = write_rate(f"sqlite:///{tmp}/plain.db", some, index=False)
        with_index = write_rate(f"sqlite:///{tmp}/indexed.db", some, index=True)
        report("search_store_write_with_index_sqlite", with_index, "steps/s", "(the index's cost)", without)
        inserted, indexed = fill_sqlite(Path(tmp) / "search.db", sessions, steps)
        report("search_index_build_existing_sqlite", indexed, "steps/s", "(migration 0010)", inserted)
        store = Store(f"sqlite:///{Path(tmp) / 'search.db'}", migrate=False)
        figures(store, "sqlite", len(steps))
        store.close()
    if args.pg_runs:
        postgres(*generate(args.pg_runs))


if __name__ == "__main__":
    main()

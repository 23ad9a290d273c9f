"""The pipelined import (ingest.parallel) stores exactly what the plain import stores, or hands
the file to the plain way with nothing stored. Small batches and a low threshold here, so that
files of a few dozen lines are cut into parts and batches the way a big one is."""

from __future__ import annotations

import threading
from datetime import datetime

import orjson
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from secrets_corpus import SECRETS
from sqlalchemy import select

from replay_core.events import now_utc
from replay_core.ingest import parallel
from replay_core.ingest.pipeline import ImportRejected, import_bytes
from replay_core.ingest.redact import default_redactor
from replay_core.storage.store import SessionFilter, Store, metadata
from replay_core.storage.tables import run_breakdown, run_rollups, sessions, step_contexts, steps

SCHEMA = "agent-replay/v1"
_real_one_thread = parallel.one_thread  # before any test replaces it
TYPES = ["think", "tool_call", "tool_result", "decision", "error", "observation"]


@pytest.fixture
def pipelined(monkeypatch):
    monkeypatch.setattr(parallel, "MIN_LINES", 1)
    monkeypatch.setattr(parallel, "BATCH_STEPS", 3)
    monkeypatch.setattr(parallel, "one_thread", lambda: True)  # other tests may leave idle threads behind


def _wipe(store: Store) -> None:
    with store.engine.begin() as conn:
        for table in reversed(metadata.sorted_tables):
            conn.execute(table.delete())


def _state(store: Store, since: datetime) -> dict:
    """Everything an import stores, without surrogate ids and the time of the write (after `since`)."""
    with store.engine.connect() as conn:

        def rows(table, *order, drop=()):
            cols = [c for c in table.c if c.name not in drop]
            return [tuple(r) for r in conn.execute(select(*cols).order_by(*order))]

        state = {
            "steps": rows(steps, steps.c.session_id, steps.c.seq, steps.c.event_id, drop=("id",)),
            "sessions": [
                tuple("now" if isinstance(v, datetime) and v >= since else v for v in r)  # a live run's start: its arrival
                for r in rows(sessions, sessions.c.id, drop=("created_at",))
            ],
            "rollups": rows(run_rollups, run_rollups.c.session_id),
            "breakdown": rows(run_breakdown, *run_breakdown.c),
            "contexts": rows(step_contexts, step_contexts.c.session_id, step_contexts.c.event_id, drop=("id",)),
        }
    ids = [r[0] for r in state["sessions"]]
    state["search"] = {word: store.session_ids(SessionFilter(text=word)) for word in ("alpha", "tool", "redacted")}
    state["in_run"] = {sid: store.search_in_session(sid, "alpha")[0] for sid in ids}
    return state


def _imported(store: Store, data: bytes, *, pipelined: bool, monkeypatch) -> tuple[dict | None, dict]:
    """(the report or the refusal, the stored state) of one import on an emptied store."""
    _wipe(store)
    since = now_utc()
    monkeypatch.setattr(parallel, "MIN_LINES", 1 if pipelined else 10**12)
    try:
        report = import_bytes(store, data, "runs.jsonl").to_dict()
    except (ImportRejected, ValueError) as exc:
        report = {"refused": str(exc)}
    return report, _state(store, since)


_text = st.sampled_from(["alpha beta", "a tool ran", "", "x" * 12, *[s.text for s in SECRETS[:12]]])
_step = st.fixed_dictionaries(
    {"type": st.sampled_from(TYPES), "content": _text},
    optional={
        "seq": st.integers(1, 30),
        "event_id": st.sampled_from(["e1", "e2", "e3", "e4", "e5"]),
        "tool_name": st.sampled_from(["search", "read"]),
        "tool_args": st.sampled_from([{"q": "alpha"}, {"api_key": "v" * 20}]),
        "tokens_in": st.integers(0, 500),
        "timestamp": st.sampled_from(["2026-01-02T03:04:05Z", "2026-01-01T00:00:00+02:00"]),
        "context": st.sampled_from([{"messages": ["alpha"]}]),
        "status": st.sampled_from(["ok", "error"]),
    },
)
_run = st.tuples(st.sampled_from(["r1", "r2", "r3", "r4", "r5"]), st.booleans(), st.lists(_step, max_size=5), st.booleans())


def _lines(runs, interleave: bool) -> bytes:
    out = []
    for sid, opened, run_steps, ended in runs:
        events = [{"schema": SCHEMA, "kind": "session", "session_id": sid, "name": f"run {sid} alpha"}] if opened else []
        events += [{"schema": SCHEMA, "kind": "step", "session_id": sid, **s} for s in run_steps]
        events += [{"schema": SCHEMA, "kind": "session_end", "session_id": sid, "status": "failed"}] if ended else []
        out.append(events)
    if interleave:  # runs whose lines alternate: no batch or part may end inside one, so these go the plain way
        flat = [e[i] for i in range(max((len(e) for e in out), default=0)) for e in out if i < len(e)]
    else:
        flat = [ev for events in out for ev in events]
    return b"".join(orjson.dumps(ev) + b"\n" for ev in flat)


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=st.lists(_run, max_size=6), interleave=st.booleans())
def test_pipelined_import_stores_what_the_plain_import_stores(store, monkeypatch, runs, interleave):
    monkeypatch.setattr(parallel, "BATCH_STEPS", 3)
    monkeypatch.setattr(parallel, "one_thread", lambda: True)  # other tests may leave idle threads behind
    data = _lines(runs, interleave)
    plain = _imported(store, data, pipelined=False, monkeypatch=monkeypatch)
    took = []
    real = parallel.write_pipelined
    monkeypatch.setattr(parallel, "write_pipelined", lambda *a, **k: (real(*a, **k), took.append(True))[0])
    piped = _imported(store, data, pipelined=True, monkeypatch=monkeypatch)
    assert piped == plain
    grouped = not interleave or sum(1 for run in runs if run[1] or run[2] or run[3]) <= 1
    if grouped and len({run[0] for run in runs}) == len(runs) and any(run[2] for run in runs):
        assert took  # a file the pipelined way can take went that way


def test_a_big_clean_file_goes_the_pipelined_way_and_again_stores_nothing(store, pipelined, monkeypatch):
    data = _lines(
        [
            (f"run-{i}", True, [{"type": "think", "content": f"alpha {j}", "event_id": f"e{j}"} for j in range(4)], True)
            for i in range(12)
        ],
        False,
    )
    calls = []
    real = parallel.write_pipelined
    monkeypatch.setattr(parallel, "write_pipelined", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = import_bytes(store, data, "runs.jsonl")
    assert calls and first.steps == 48 and len(first.sessions) == 12
    assert len(parallel._parts(data, 2)) == 2  # two readers, cut between runs
    again = import_bytes(store, data, "runs.jsonl")
    assert again.steps == 0 and again.duplicates == 48


def test_the_readers_make_steps_straight_into_rows(store, pipelined, monkeypatch):
    """A step the contract's fast path vouches for becomes its row in the reader (ingest.step_rows), as on
    the HTTP and OTLP ways: no StepEvent made (the forked readers inherit this patch, which would send the
    file the plain way), its redactions still counted."""
    real = parallel.parse_event

    def events_only(obj):
        assert obj.get("kind") != "step", "a reader made a StepEvent"
        return real(obj)

    monkeypatch.setattr(parallel, "parse_event", events_only)
    secret = SECRETS[0]
    data = _lines(
        [
            (
                f"run-{i}",
                True,
                [{"type": "think", "content": f"alpha {j} {secret.text}", "event_id": f"e{j}", "seq": j + 1} for j in range(3)],
                True,
            )
            for i in range(8)
        ],
        False,
    )
    written, read = parallel.write_pipelined(store, data, default_redactor(), source="native")
    assert written.steps == read.steps == 24 and read.redacted >= 24
    assert secret.secret not in " ".join(step.content for sid in store.session_ids() for step in store.load_steps(sid))


def test_a_bad_line_refuses_the_file_naming_it_and_stores_nothing(store, pipelined):
    lines = _lines([(f"run-{i}", True, [{"type": "think", "content": "alpha"}] * 3, False) for i in range(10)], False).split(
        b"\n"
    )
    lines[17] = b'{"schema": "agent-replay/v1", "kind": "step", "session_id": "x", "type": "nonsense"}'
    data = b"\n".join(lines)
    with pytest.raises(parallel.Fallback):
        parallel.write_pipelined(store, data, default_redactor(), source="native")
    assert store.session_ids() == []
    with pytest.raises(ImportRejected, match=r"runs\.jsonl:18"):
        import_bytes(store, data, "runs.jsonl")
    assert store.session_ids() == []


def test_secrets_are_redacted_on_the_pipelined_way(store, pipelined):
    data = _lines([(f"run-{i}", False, [{"type": "think", "content": s.text}], False) for i, s in enumerate(SECRETS)], False)
    report = import_bytes(store, data, "runs.jsonl")
    assert report.redacted >= len(SECRETS)
    stored = " ".join(step.content or "" for sid in store.session_ids() for step in store.load_steps(sid))
    for secret in SECRETS:
        assert secret.secret not in stored, secret.label


def test_only_a_process_with_one_thread_forks_and_only_a_native_file(pipelined, monkeypatch):
    data = _lines([("r1", False, [{"type": "think"}], False)], False)
    assert parallel.suitable(data, "auto") and parallel.suitable(data, "native")
    assert not parallel.suitable(data, "swe_agent")
    monkeypatch.setattr(parallel, "one_thread", _real_one_thread)
    done = threading.Event()
    worker = threading.Thread(target=done.wait)
    worker.start()
    try:
        assert not parallel.one_thread() and not parallel.suitable(data, "auto")
    finally:
        done.set()
        worker.join()


@pytest.mark.parametrize("blank", [b"\n", b" \t\r\n", b"\n\n   \n"])
def test_the_pipelined_way_counts_the_lines_as_the_plain_way_counts_them(store, pipelined, monkeypatch, blank):
    """Its record count is the readers' (not a second pass over the file): blank lines anywhere are not records."""
    lines = _lines([(f"run-{i}", True, [{"type": "think", "content": "alpha"}], True) for i in range(4)], False).split(b"\n")
    data = blank + blank.join(lines[:5]) + b"\n" + b"\n".join(lines[5:]) + blank
    plain = _imported(store, data, pipelined=False, monkeypatch=monkeypatch)
    piped = _imported(store, data, pipelined=True, monkeypatch=monkeypatch)
    assert piped == plain and plain[0]["files"][0]["records"] == 12 and plain[0]["files"][0]["unit"] == "lines"


def test_a_long_write_on_postgresql_analyzes_the_run_tables_as_it_grows_them(store, monkeypatch):
    """A big file's batches go in one transaction, whose new runs no statistics count (autovacuum cannot
    see them): on PostgreSQL it analyzes the per-run tables itself past ANALYZE_WITHIN runs, then at 4×
    that, so each batch's look-ups by run stay index look-ups (a 1M-step import spent 30 s in scans
    without); SQLite plans without statistics of that kind and is not asked to."""
    from sqlalchemy import event

    from replay_core.events import parse_event
    from replay_core.storage import writing
    from replay_core.storage.store import WriteBatch

    monkeypatch.setattr(writing, "ANALYZE_WITHIN", 4)
    analyzed: list[str] = []
    event.listen(
        store.engine,
        "before_cursor_execute",
        lambda conn, cursor, statement, *rest: analyzed.append(statement) if statement.startswith("ANALYZE") else None,
    )
    batches = []
    for b in range(8):
        batch = WriteBatch()
        for r in range(3):
            batch.add(parse_event({"kind": "step", "session_id": f"long-{b}-{r}", "seq": 1, "type": "think", "event_id": "e"}))
        batches.append(batch)
    assert store.write_batches(batches).steps == 24
    # after the 2nd batch (6 runs ≥ 4) and the 6th (18 ≥ 16); none on SQLite
    assert analyzed == (["ANALYZE sessions, run_rollups, run_breakdown"] * 2 if store.dialect == "postgresql" else [])

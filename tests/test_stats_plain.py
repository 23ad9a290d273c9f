"""`agent-replay stats` on a SQLite file read by storage.plain (sqlite3, no SQLAlchemy) prints
byte for byte what the Store's way prints, and leaves every case it cannot answer exactly to it."""

from __future__ import annotations

import io
import shutil
import sqlite3
import subprocess
import sys
from contextlib import redirect_stdout
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from cli_helpers import run_main, run_program
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_core import cli
from replay_core.cli import output, stats_fast_path, understand
from replay_core.demo import load_demo
from replay_core.ingest.pipeline import import_file
from replay_core.storage import plain
from replay_core.storage.migrations import alembic_config, head_revision
from replay_core.storage.store import Store
from replay_core.understand.headline import DIMENSIONS
from replay_core.vocabulary import now_utc

HEAVY = ("sqlalchemy", "pydantic", "polars", "litellm", "typer", "click", "alembic", "streamlit")
ARGS = [[], ["--json"], *(["--by", by] for by in DIMENSIONS), *(["--by=" + by, "--json"] for by in DIMENSIONS)]


def _session(sid: str, **fields) -> dict:
    return {"schema": "agent-replay/v1", "kind": "session", "session_id": sid, **fields}


def _step(sid: str, seq: int, at: datetime, **fields) -> dict:
    return {
        "schema": "agent-replay/v1",
        "kind": "step",
        "session_id": sid,
        "event_id": f"{sid}-{seq}",
        "seq": seq,
        "timestamp": at.isoformat(),
        **fields,
    }


def _runs(start: datetime) -> list[dict]:
    """Runs unlike the demo's: a replay, an experiment's run, costs unknown and too large to sum in
    nano-dollars, tags, workflows, a run still going (recently), a failure with an error class."""
    t = start
    out = [
        _session(
            "r-big", model="gpt-4o", agent_id="a1", workflow="w1", environment="prod", tags=["x", "y"], started_at=t.isoformat()
        ),
        _step("r-big", 1, t + timedelta(seconds=1), type="think", tokens_in=10, tokens_out=2, cost_usd=250000.0),
        {
            "schema": "agent-replay/v1",
            "kind": "session_end",
            "session_id": "r-big",
            "status": "succeeded",
            "ended_at": (t + timedelta(seconds=9)).isoformat(),
        },
        _session(
            "r-unknown", model="claude", agent_id="a2", agent_version="1.2", started_at=(t + timedelta(hours=3)).isoformat()
        ),
        _step("r-unknown", 1, t + timedelta(hours=3, seconds=1), type="think", tokens_in=5, tokens_out=1),
        _step(
            "r-unknown",
            2,
            t + timedelta(hours=3, seconds=2),
            type="tool_call",
            tool_name="grep",
            status="error",
            error_class="TimeoutError",
            retry=1,
        ),
        {
            "schema": "agent-replay/v1",
            "kind": "session_end",
            "session_id": "r-unknown",
            "status": "failed",
            "ended_at": (t + timedelta(hours=3, seconds=5)).isoformat(),
        },
        _session(
            "r-replay",
            model="gpt-4o-mini",
            replay_of="r-unknown",
            replay_from=1,
            replay_to=2,
            replay_config={"model": "gpt-4o-mini"},
            started_at=(t + timedelta(days=1)).isoformat(),
        ),
        _step("r-replay", 1, t + timedelta(days=1, seconds=1), type="think", tokens_in=3, cost_usd=0.5),
        _session("r-exp", model="gpt-4o", source="experiment", started_at=(t + timedelta(days=1)).isoformat()),
        _step("r-exp", 1, t + timedelta(days=1, seconds=1), type="think", tokens_in=7, cost_usd=0.25),
        *(
            {"schema": "agent-replay/v1", "kind": "session_end", "session_id": sid, "status": "succeeded"}
            for sid in ("r-replay", "r-exp")
        ),
    ]
    now = now_utc()
    out += [
        _session("r-live", model="gpt-4o", agent_id="a1", tags=["x"], started_at=(now - timedelta(minutes=2)).isoformat()),
        _step("r-live", 1, now - timedelta(minutes=1), type="think", tokens_in=1, cost_usd=0.001),
    ]
    return out


def _write_jsonl(path, records: list[dict]) -> None:
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in records) + b"\n")


@pytest.fixture(scope="module")
def stats_file(tmp_path_factory) -> Path:
    """The demo runs and _runs, imported the normal way into a SQLite file, once per module."""
    folder = tmp_path_factory.mktemp("stats")
    store = Store(f"sqlite:///{folder / 'stats.db'}")
    load_demo(store)
    _write_jsonl(folder / "runs.jsonl", _runs(datetime(2026, 5, 3, 22, 30, tzinfo=UTC)))
    import_file(store, folder / "runs.jsonl")
    store.close()
    return folder / "stats.db"


@pytest.fixture(scope="module")
def empty_file(tmp_path_factory) -> Path:
    """A SQLite file the Store made and left empty, once per module: copied, it spares each generated
    database the migrations."""
    path = tmp_path_factory.mktemp("empty") / "empty.db"
    Store(f"sqlite:///{path}").close()
    return path


@pytest.fixture
def db(stats_file, tmp_path) -> str:
    """A test's own copy of stats_file (some tests expire runs in it)."""
    shutil.copyfile(stats_file, tmp_path / "stats.db")
    return f"sqlite:///{tmp_path / 'stats.db'}"


def _printed(fn, *args, **kwargs) -> tuple[object, str]:
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        got = fn(*args, **kwargs)
    return got, buffer.getvalue()


def _both(url: str, args: list[str]) -> tuple[str, str]:
    """(the plain way's output, the Store's way's) for `stats --db url *args`, in this process."""
    ran, fast = _printed(stats_fast_path.fast_stats, ["stats", "--db", url, *args])
    assert ran is True, args
    given = stats_fast_path.stats_args(args)
    _, slow = _printed(understand.stats_cmd, since=None, until=None, by=given.get("by"), db=url, json=given.get("json", False))
    return fast, slow


@pytest.mark.parametrize("args", ARGS, ids=" ".join)
def test_plain_stats_prints_what_the_store_way_prints(db, args, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    # the commands' console is made when they are first imported, with whatever COLUMNS another test had set
    # then (under xdist, in another order); made here, it reads the width the fast path's own console reads
    monkeypatch.setattr(understand, "out", output.make_console(soft_wrap=True))
    fast, slow = _both(db, args)
    assert fast == slow
    assert "gpt-4o" in fast or "--by" not in args or args[-1] not in ("model", "--by=model")


def test_reads_are_the_stores(db):
    """Row for row what Store.daily_rows and Store.headline_rows give for an unfiltered `stats`."""
    store = Store(db)
    with plain.open_reader(db) as reader:
        got, want = reader.daily_rows(), store.daily_rows(None, detail=False, parts=("cells", "times"))
        for name in ("cells", "times"):
            (g_cols, g_rows), (w_cols, w_rows) = got[name], want[name]
            assert sorted(dict(zip(g_cols, r, strict=True)).items() for r in g_rows) == sorted(
                dict(zip(w_cols, r, strict=True)).items() for r in w_rows
            )
        for key in (None, *plain.KEYS):
            rows = reader.headline_rows(None, key)
            if key == "tags":  # the Store hands JSON back parsed
                rows = [(orjson.loads(r[0]) if r[0] is not None else None, *r[1:]) for r in rows]
            assert sorted(rows, key=repr) == sorted(store.headline_rows(None, key), key=repr), key
    store.close()


@pytest.mark.parametrize(
    "start",
    ["runpy.run_module('replay_core.cli', run_name='__main__')", "replay_core.command()"],
    ids=["python -m replay_core.cli", "the console script"],
)
def test_a_plain_stats_process_imports_none_of_the_heavy_modules(db, start):
    probe = (
        f"import sys, runpy, replay_core\ntry:\n    {start}\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))"
    )
    for args in ([], ["--by", "tag", "--json"], ["--by", "hour"]):
        proc = subprocess.run(
            [sys.executable, "-c", probe, "stats", "--db", db, *args], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == "[]", proc.stdout + proc.stderr


def test_the_command_as_run_is_the_store_way(db, monkeypatch):
    """`python -m replay_core.cli stats` (the plain way) beside `cli.main` called (the Store's way), both in this process."""
    env = {"COLUMNS": "200"}
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(understand, "out", output.make_console(soft_wrap=True))  # as above: the fast path's width
    for args in ([], ["--by", "model"], ["--json", "--by", "tag"]):
        cmd = ["stats", "--db", db, *args]
        assert run_program(monkeypatch, cmd, env) == run_main(monkeypatch, cmd, env)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://postgres@127.0.0.1:5432/postgres",
        "sqlite://",
        "sqlite:///:memory:",
        "sqlite:///{dir}/nothing-here.db",
        "sqlite:///{dir}/stats.db?mode=ro",
        "sqlite+pysqlite:///{dir}/stats.db",
        "{dir}/not-a-database.txt",
    ],
)
def test_what_the_plain_way_leaves_to_the_store(db, tmp_path, url):
    (tmp_path / "not-a-database.txt").write_text("hello")
    url = url.format(dir=tmp_path)
    assert plain.open_reader(url) is None
    assert _printed(stats_fast_path.fast_stats, ["stats", "--db", url]) == (False, "")
    assert not (tmp_path / "nothing-here.db").exists()  # the Store creates it, not this


def test_a_missing_file_is_made_by_the_store_as_before(tmp_path, monkeypatch):
    outputs = []
    for run, name in ((run_program, "a.db"), (run_main, "b.db")):
        outputs.append(run(monkeypatch, ["stats", "--db", str(tmp_path / name)], {}))
        assert (tmp_path / name).exists()
    assert outputs[0] == outputs[1] and outputs[0].returncode == 0


def test_an_old_schema_is_left_to_the_store_which_migrates_it(tmp_path, monkeypatch):
    from alembic import command

    url = f"sqlite:///{tmp_path / 'old.db'}"
    store = Store(url, migrate=False)
    command.upgrade(alembic_config(store.engine), "0010_search")
    store.close()
    assert plain.open_reader(url) is None
    proc = run_program(monkeypatch, ["stats", "--db", url, "--json"], {})
    assert proc.returncode == 0 and orjson.loads(proc.stdout)["runs"] == 0
    assert sqlite3.connect(tmp_path / "old.db").execute("select version_num from alembic_version").fetchall() == [
        (head_revision(),)
    ]
    assert plain.open_reader(url) is not None


def test_a_run_to_expire_is_left_to_the_store_which_expires_it(db, monkeypatch):
    monkeypatch.setenv("AGENT_REPLAY_IDLE_MINUTES", "0.001")  # r-live is idle now
    assert plain.open_reader(db) is None
    before = _printed(understand.stats_cmd, since=None, until=None, by="status", db=db, json=True)[1]
    assert '"running"' not in before and '"incomplete"' in before
    assert plain.open_reader(db) is not None  # expired: nothing more to write
    assert _both(db, ["--by", "status", "--json"]) == (before, before)


def test_a_bad_idle_setting_errors_as_before(db, monkeypatch):
    monkeypatch.setenv("AGENT_REPLAY_IDLE_MINUTES", "soon")
    assert plain.open_reader(db) is None


def test_the_plain_arguments_are_the_commands_options():
    from typer.main import get_command

    command = get_command(cli.app).commands["stats"]
    assert {o for p in command.params for o in p.opts} == {*stats_fast_path.STATS_VALUES, "--json"}
    for args in (
        ["--by"],
        ["--by", "--json"],
        ["--json=1"],
        ["--json", "--json"],
        ["--db", "a", "--db=b"],
        ["x"],
        ["--help"],
        ["-h"],
        ["--", "--json"],
        ["--bogus", "1"],
    ):
        assert stats_fast_path.stats_args(args) is None, args
    assert stats_fast_path.stats_args(["--by=", "--db", "x.db", "--json"]) == {"by": "", "db": "x.db", "json": True}


def test_a_time_filter_takes_the_store_way(db):
    assert _printed(stats_fast_path.fast_stats, ["stats", "--db", db, "--since", "2026-01-01"]) == (False, "")
    assert _printed(stats_fast_path.fast_stats, ["stats", "--db", db, "--by", "nope"]) == (False, "")


MODELS, AGENTS, STATUSES = ("m1", "m2", None), ("a1", "a2", None), ("succeeded", "failed", "unknown", "incomplete")


@st.composite
def _random_runs(draw) -> list[dict]:
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    records = []
    for i in range(draw(st.integers(0, 6))):
        sid = f"s{i}"
        start = t0 + timedelta(minutes=draw(st.integers(0, 60 * 24 * 4)))
        records.append(
            _session(
                sid,
                model=draw(st.sampled_from(MODELS)),
                agent_id=draw(st.sampled_from(AGENTS)),
                workflow=draw(st.sampled_from(("w", None))),
                tags=draw(st.sampled_from((None, [], ["t"], ["t", "u"]))),
                started_at=start.isoformat(),
                **draw(st.sampled_from(({}, {"source": "experiment"}, {"replay_of": "s0"}))) if i else {},
            )
        )
        for seq in range(1, draw(st.integers(1, 4)) + 1):
            kind = draw(st.sampled_from(("think", "tool_call", "tool_result")))
            extra = (
                {"tool_name": "t", "status": draw(st.sampled_from(("ok", "error")))}
                if kind != "think"
                else {"tokens_in": draw(st.integers(0, 99)), "cost_usd": draw(st.sampled_from((None, 0.0, 0.125, 1e-9, 3e5)))}
            )
            records.append(
                _step(
                    sid,
                    seq,
                    start + timedelta(seconds=seq * draw(st.integers(1, 900))),
                    type=kind,
                    retry=draw(st.integers(0, 1)),
                    **{k: v for k, v in extra.items() if v is not None},
                )
            )
        records.append(
            {
                "schema": "agent-replay/v1",
                "kind": "session_end",
                "session_id": sid,
                "status": draw(st.sampled_from(STATUSES)),
                "ended_at": (start + timedelta(hours=1)).isoformat(),
            }
        )
    return records


@pytest.mark.load
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=_random_runs(), by=st.sampled_from((None, *DIMENSIONS)), as_json=st.booleans())
def test_random_databases(empty_file, tmp_path_factory, records, by, as_json):
    folder = tmp_path_factory.mktemp("random")
    shutil.copyfile(empty_file, folder / "r.db")
    url = f"sqlite:///{folder / 'r.db'}"
    store = Store(url)
    if records:
        _write_jsonl(folder / "runs.jsonl", records)
        import_file(store, folder / "runs.jsonl")
    store.close()
    args = [*(["--by", by] if by else []), *(["--json"] if as_json else [])]
    fast, slow = _both(url, args)
    assert fast == slow

"""The `agent-replay` command on a real database: its `main` and its `__main__` called in this process as
the program calls them, and a real process where the process is the point (what its start imports)."""

import json
import os
import subprocess
import sys

import orjson
import pytest
from cli_helpers import Ran, run_main, run_program

import replay_core.cli as cli_module
from replay_core.demo import demo_files

README_RUN = [
    {
        "schema": "agent-replay/v1",
        "kind": "session",
        "session_id": "run-42",
        "name": "refund request",
        "agent_id": "support-bot",
        "model": "gpt-4o",
        "environment": "prod",
        "started_at": "2026-05-01T09:00:00Z",
    },
    {
        "schema": "agent-replay/v1",
        "kind": "step",
        "session_id": "run-42",
        "event_id": "e1",
        "seq": 1,
        "type": "think",
        "timestamp": "2026-05-01T09:00:01Z",
        "content": "The user wants a refund; look the order up first.",
        "tokens_in": 812,
        "tokens_out": 40,
    },
    {
        "schema": "agent-replay/v1",
        "kind": "step",
        "session_id": "run-42",
        "event_id": "e2",
        "seq": 2,
        "type": "tool_call",
        "timestamp": "2026-05-01T09:00:02Z",
        "tool_name": "get_order",
        "tool_args": {"order_id": "A-17"},
        "tool_call_id": "c1",
    },
    {
        "schema": "agent-replay/v1",
        "kind": "step",
        "session_id": "run-42",
        "event_id": "e3",
        "seq": 3,
        "type": "tool_result",
        "timestamp": "2026-05-01T09:00:03Z",
        "tool_name": "get_order",
        "tool_call_id": "c1",
        "content": '{"status": "delivered", "auth": "Bearer abcdefghijklmnopqrstuvwxyz012345"}',
    },
    {
        "schema": "agent-replay/v1",
        "kind": "session_end",
        "session_id": "run-42",
        "status": "succeeded",
        "ended_at": "2026-05-01T09:01:10Z",
    },
]


@pytest.fixture
def db_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'cli.db'}"


@pytest.fixture
def cli(db_url, monkeypatch):
    """`agent-replay …` on the test's database, called in this process (cli_helpers.run_main)."""

    def run(*args, ok=True) -> Ran:
        proc = run_main(monkeypatch, args, {"AGENT_REPLAY_DB_URL": db_url, "COLUMNS": "200"})
        if ok:
            assert proc.returncode == 0, proc.stderr
        return proc

    return run


@pytest.fixture
def program(db_url, monkeypatch):
    """`python -m replay_core.cli …` on the test's database as a user runs it (its `__main__`), in this
    process (cli_helpers.run_program)."""

    def run(*args) -> Ran:
        return run_program(monkeypatch, args, {"AGENT_REPLAY_DB_URL": db_url, "COLUMNS": "200"})

    return run


@pytest.fixture
def hand_file(tmp_path):
    path = tmp_path / "run-42.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(o) for o in README_RUN) + b"\n")
    return path


def test_import_show_sessions_export(cli, hand_file, tmp_path):
    out = json.loads(cli("import", str(hand_file), "--json").stdout)
    assert out["sessions"] == ["run-42"] and out["steps"] == 3 and out["duplicates"] == 0
    assert out["redacted"] == 1 and out["errors"] == []
    again = json.loads(cli("import", str(hand_file), "--json").stdout)
    assert again["steps"] == 0 and again["duplicates"] == 3

    listed = json.loads(cli("sessions", "--json").stdout)
    assert [s["id"] for s in listed] == ["run-42"]
    row = listed[0]
    assert (row["status"], row["steps"], row["cycles"], row["tokens_in"], row["tokens_out"], row["source"]) == (
        "succeeded",
        3,
        1,
        812,
        40,
        "native",
    )
    assert json.loads(cli("sessions", "--status", "failed", "--json").stdout) == []

    shown = json.loads(cli("show", "run-42", "--step", "3", "--json").stdout)
    assert [s["type"] for s in shown["steps"]] == ["think", "tool_call", "tool_result"]
    assert shown["cycles"] == [{"index": 0, "first_seq": 1, "last_seq": 3, "step_types": ["think", "tool_call", "tool_result"]}]
    assert shown["gaps"] == []
    assert shown["state"]["totals"]["tokens_in"] == 812
    assert shown["state"]["context"][-1]["tool_calls"][0]["function"]["name"] == "get_order"
    assert "Bearer abcdefghijklmnopqrstuvwxyz012345" not in json.dumps(shown)

    human = cli("show", "run-42").stdout
    assert "Succeeded after 1 cycles (3 steps)" in human and "get_order" in human

    target = tmp_path / "out.jsonl"
    cli("export", "run-42", "-o", str(target))
    lines = [json.loads(x) for x in target.read_text().splitlines()]
    assert [x["kind"] for x in lines] == ["session", "step", "step", "step", "session_end"]
    assert lines[1]["content"] == README_RUN[1]["content"]


def test_bad_input_is_one_line_and_exit_1(cli, program, hand_file, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        hand_file.read_text() + '{"schema": "agent-replay/v1", "kind": "step", "session_id": "run-42", "type": "thinking"}\n'
    )
    proc = program("import", str(bad))
    assert proc.returncode == 1
    assert f"{bad}:6: type:" in proc.stderr and "Traceback" not in proc.stderr
    assert json.loads(cli("sessions", "--json").stdout) == []  # nothing stored
    skipped = json.loads(cli("import", str(bad), "--skip-bad", "--json", ok=False).stdout)
    assert skipped["steps"] == 3 and skipped["errors"][0].startswith(f"{bad}:6:")

    for args, needle in [
        (("show", "nope"), "no such session: nope"),
        (("show", "run-42", "--step", "99"), "has no step 99"),
        (("import", str(tmp_path / "missing.jsonl")), "No such file"),
        (("export",), "name sessions to export"),
        (("sessions", "--db", "postgresql://nobody@127.0.0.1:1/none"), "cannot open database"),
    ]:
        proc = cli(*args, ok=False)
        assert proc.returncode != 0 and needle in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_unknown_format_lists_known_ones(cli, tmp_path):
    odd = tmp_path / "notes.txt"
    odd.write_text("just some notes\n")
    proc = cli("import", str(odd), ok=False)
    said = " ".join(proc.stderr.split())
    assert (
        "not imported, no reader recognises it. It looks like plain text of 1 lines." in said
        and "(known formats: native," in said
    )


def test_demo_and_db_upgrade(cli):
    cli("db", "upgrade")
    assert "loaded" in cli("demo").stdout
    assert "not loaded" in cli("demo").stdout
    listed = json.loads(cli("sessions", "--limit", "100", "--json").stdout)
    assert len(listed) == len(demo_files())
    statuses = {s["status"] for s in listed}
    assert {"succeeded", "failed", "running"} <= statuses
    everything = cli("export", "--all").stdout.splitlines()
    assert sum(1 for line in everything if '"kind":"session"' in line) == len(demo_files())


def test_sessions_lists_original_runs_unless_replays_are_asked_for(cli, tmp_path):
    run = tmp_path / "two.jsonl"
    run.write_bytes(
        b"\n".join(
            orjson.dumps({"schema": "agent-replay/v1", **o})
            for o in [
                {"kind": "session", "session_id": "orig", "name": "original"},
                {"kind": "step", "session_id": "orig", "type": "think", "content": "Look it up."},
                {"kind": "session", "session_id": "again", "name": "its replay", "replay_of": "orig"},
                {"kind": "step", "session_id": "again", "type": "think", "content": "Look it up."},
            ]
        )
        + b"\n"
    )
    cli("import", str(run))

    def listed(*extra: str) -> list[str]:
        return [r["id"] for r in orjson.loads(cli("sessions", "--json", *extra).stdout)]

    assert listed() == ["orig"]
    assert sorted(listed("--replays")) == ["again", "orig"]


def test_db_rebuild_rollups_and_stats_stay_polars_free(cli, hand_file, tmp_path, db_url):
    cli("import", str(hand_file))
    before = json.loads(cli("stats", "--json").stdout)
    assert before["tokens_in"] > 0
    import sqlite3

    db = sqlite3.connect(tmp_path / "cli.db")
    for table in ("run_rollups", "daily_members", "daily_cells", "daily_tools", "daily_errors"):
        db.execute(f"delete from {table}")  # as if written around the Store
    db.commit()
    assert json.loads(cli("stats", "--json").stdout)["tokens_in"] == 0
    assert "rollups rebuilt for 1 runs" in cli("db", "rebuild-rollups").stdout
    assert json.loads(cli("stats", "--json").stdout) == before
    probe = (
        "import sys, runpy; sys.argv = ['agent-replay', 'stats']\n"
        "try:\n    runpy.run_module('replay_core.cli', run_name='__main__')\n"
        "except SystemExit:\n    pass\nprint(sorted(m for m in ('polars', 'litellm', 'streamlit', 'alembic', 'pydantic', "
        "'sqlalchemy.dialects.postgresql') if m in sys.modules))"
    )
    env = dict(os.environ, AGENT_REPLAY_DB_URL=db_url)
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--by", "model"],
        ["--json", "--by", "day"],
        ["--by", "nope"],
        ["--bogus"],
        ["--db"],
        ["--help"],
        ["--since", "2026-04-01", "--json"],
        ["extra"],
        ["--json", "--json"],
    ],
)
def test_stats_without_typer_coercion_is_stats_through_typer(cli, hand_file, monkeypatch, args):
    """`main` runs a plain `stats` past Typer's value coercion (pydantic): output, errors and exit
    code are what Typer's own handling of the same arguments gives."""
    cli("import", str(hand_file))
    plain = cli("stats", *args, ok=False)
    monkeypatch.setattr(cli_module, "_plain_stats", lambda args: False)
    typer = cli("stats", *args, ok=False)
    assert (plain.returncode, plain.stdout, plain.stderr) == (typer.returncode, typer.stdout, typer.stderr)
    assert plain.stdout or plain.stderr


def test_stats_dates_are_checked(cli, program, hand_file):
    cli("import", str(hand_file))
    bad = program("stats", "--since", "nope")
    assert bad.returncode == 1 and "--since: expected a date" in bad.stderr
    assert json.loads(cli("stats", "--since", "2000-01-01", "--json").stdout)["runs"] == 1
    assert json.loads(cli("stats", "--until", "2000-01-01", "--json").stdout)["runs"] == 0

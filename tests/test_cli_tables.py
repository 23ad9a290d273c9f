"""CLI tables a person can read in an 80-column terminal and a wide one: fewer columns by default, nothing cut
to "open…", ids shortened to a start that every command takes; --wide shows every column, whole."""

from __future__ import annotations

import shutil

import orjson
import pytest
from cli_helpers import run_main
from hypothesis import given
from hypothesis import strategies as st

from replay_core.cli.options import out
from replay_core.cli.output import AmbiguousPrefix, resolve_prefix, unique_prefixes
from replay_core.storage.store import Store
from replay_core.whatif import dataset as ds
from replay_core.whatif import experiment as ex
from replay_core.whatif.replay_config import ReplayConfig


@pytest.fixture
def db(demo_db, tmp_path) -> str:
    path = tmp_path / "demo.db"
    shutil.copyfile(demo_db, path)
    return str(path)


def run(monkeypatch, db: str, width: int, *args: str) -> str:
    monkeypatch.setattr(out, "width", width)
    ran = run_main(monkeypatch, [*args, "--db", db], {"AGENT_REPLAY_CLI_ROLE": None})
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def readable(text: str, width: int) -> list[str]:
    lines = text.splitlines()
    table = [line for line in lines if line[:1] in "┏┃┡│└"]  # sentences wrap in the terminal; tables must fit
    assert table and all(len(line) <= width for line in table), max(table, key=len)
    assert "…" not in text  # nothing cut: a value is shown whole or not at all
    return lines


def test_sessions_at_80_columns_then_wide(monkeypatch, db):
    store = Store(f"sqlite:///{db}")
    rows = store.list_sessions(limit=50)
    narrow = readable(run(monkeypatch, db, 80, "sessions"), 80)
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in narrow if line.startswith("│")]
    shown = [c for c in cells if c[0]]  # a run's first line (its name may fold onto the next)
    assert len(shown) == len(rows)
    for row, cell in zip(rows, shown, strict=True):
        prefix, status = cell[0], cell[2]
        assert row["id"].startswith(prefix) and len(prefix) < len(row["id"]) and status == row["status"]
        shown = orjson.loads(run(monkeypatch, db, 80, "show", prefix, "--json"))  # JSON: no table of every step
        assert shown["session"]["id"] == row["id"]  # `show` takes the shortened id
    words = " ".join(" ".join(c[1] for c in cells).split())
    assert all(" ".join(r["name"].split()) in words for r in rows)  # every name whole, folded at spaces
    wide = readable(run(monkeypatch, db, 220, "sessions", "--wide"), 220)
    assert "model" in wide[1] and "tokens" in wide[1]
    for row in rows:
        assert any(row["id"] in line and row["name"] in line for line in wide)


def test_experiments_list_show_and_compare_at_80_columns(monkeypatch, db):
    store = Store(f"sqlite:///{db}")
    ds.create(store, "six", [ds.Case(r["id"]) for r in store.list_sessions(limit=6)])
    ids = []
    for _ in range(2):
        eid, _ = ex.start(store, "six", [ReplayConfig(model="recorded"), ReplayConfig(model="recorded", temperature=0.5)])
        ex.run(store, eid)
        ids.append(eid)
    listed = readable(run(monkeypatch, db, 80, "experiment", "list"), 80)
    prefixes = [line.split("│")[1].strip() for line in listed if line.startswith("│") and line.split("│")[1].strip()]
    assert sorted(prefixes) == sorted(unique_prefixes(ids, 10).values()) and all(len(p) < 16 for p in prefixes)
    shown = readable(run(monkeypatch, db, 80, "experiment", "show", prefixes[0]), 80)
    assert shown[0].startswith("experiment exp-") and "pass rate (95% Wilson)" in shown[2] and "not scored" in shown[2]
    compared = readable(run(monkeypatch, db, 80, "experiment", "compare", prefixes[1], prefixes[0]), 80)
    assert any("recorded" in line and "(all)" in line for line in compared)
    wide = run(monkeypatch, db, 220, "experiment", "list", "--wide")
    assert all(eid in wide for eid in ids)
    assert "p95 ms" in run(monkeypatch, db, 220, "experiment", "show", ids[0], "--wide")


def test_an_ambiguous_prefix_is_refused_naming_the_ids(monkeypatch, db):
    ran = run_main(monkeypatch, ["show", "demo-0", "--db", db], {"AGENT_REPLAY_CLI_ROLE": None})
    assert ran.returncode == 1 and "'demo-0' starts" in ran.stderr and "give more of it" in ran.stderr


@given(st.lists(st.text(alphabet="ab-01", min_size=1, max_size=12), min_size=1, max_size=30, unique=True))
def test_each_shortened_id_names_its_id_and_no_other(ids):
    for value, prefix in unique_prefixes(ids, 3).items():
        assert value.startswith(prefix) and len(prefix) >= min(3, len(value))
        assert resolve_prefix(prefix, ids, "run") == value
    with pytest.raises(AmbiguousPrefix):
        resolve_prefix("zzz", ids, "run")

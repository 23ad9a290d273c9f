"""Datasets on SQLite and PostgreSQL: made from ids or a filter, versioned, exported and imported."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from cli_helpers import run_main
from experiment_cases import make_cases

from replay_core.events import SessionEvent
from replay_core.ingest.pipeline import ingest
from replay_core.storage.store import EXPERIMENT_SOURCE, SessionFilter
from replay_core.whatif import dataset as ds


def test_made_from_ids_keeps_their_order_and_refuses_unknown_runs_whole(store):
    make_cases(store, 3)
    with pytest.raises(ds.DatasetError, match="no such run: nope"):
        ds.create(store, "x", ds.resolve(store, runs=["refund-1", "nope"])[0])
    assert store.list_datasets() == []
    cases, made_from = ds.resolve(store, runs=["refund-2", "refund-0", "refund-2"])
    made = ds.create(store, "refunds", cases, made_from=made_from)
    assert (made["name"], made["version"], made["cases"]) == ("refunds", 1, 2)
    shown = ds.show(store, "refunds")
    assert [c["session"] for c in shown["cases"]] == ["refund-2", "refund-0"]
    assert shown["made_from"] == [{"runs": ["refund-2", "refund-0"]}]
    with pytest.raises(ds.DatasetError, match="exists already"):
        ds.create(store, "refunds", cases)


def test_made_from_a_filter_status_workflow_since_search(store):
    make_cases(store, 4, workflow="refund")
    make_cases(store, 2, workflow="refund", status="failed", first=10, day=5)
    make_cases(store, 2, workflow="billing", first=20, day=5)
    cases, _ = ds.resolve(store, flt=SessionFilter(status="succeeded", workflow="refund"))
    assert [c.session_id for c in cases] == [f"refund-{i}" for i in range(4)]
    since = ds.parse_since("2026-11-24")
    cases, made_from = ds.resolve(store, flt=SessionFilter(workflow="refund", since=since))
    assert [c.session_id for c in cases] == ["refund-10", "refund-11"]
    assert made_from["filter"]["workflow"] == "refund" and made_from["filter"]["since"].startswith("2026-11-24")
    cases, _ = ds.resolve(store, flt=SessionFilter(text="order A-21"))  # in a step's content
    assert [c.session_id for c in cases] == ["refund-21"]
    with pytest.raises(ds.DatasetError, match="no run matches"):
        ds.resolve(store, flt=SessionFilter(workflow="nothing"))


def test_parse_since_relative_and_absolute():
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    assert ds.parse_since("7d", now) == datetime(2026, 11, 24, 12, tzinfo=UTC)
    assert ds.parse_since("12h", now) == datetime(2026, 12, 1, 0, tzinfo=UTC)
    assert ds.parse_since("2026-05-01") == datetime(2026, 5, 1, tzinfo=UTC)
    with pytest.raises(ds.DatasetError, match="--since"):
        ds.parse_since("last week")


def test_adding_makes_the_next_version_and_older_versions_keep_their_cases(store):
    make_cases(store, 5)
    ds.create(store, "refunds", ds.resolve(store, runs=["refund-0", "refund-1"])[0])
    added = ds.add(store, "refunds", ds.resolve(store, runs=["refund-1", "refund-2", "refund-3"], expected="approved")[0])
    assert (added["version"], added["added"], added["cases"]) == (2, 2, 4)
    assert [c["session"] for c in ds.show(store, "refunds", version=1)["cases"]] == ["refund-0", "refund-1"]
    v2 = ds.show(store, "refunds")["cases"]
    assert [(c["session"], c["expected"], c["version"]) for c in v2] == [
        ("refund-0", None, 1),
        ("refund-1", None, 1),
        ("refund-2", "approved", 2),
        ("refund-3", "approved", 2),
    ]
    nothing = ds.add(store, "refunds", ds.resolve(store, runs=["refund-0"])[0])
    assert (nothing["version"], nothing["added"]) == (2, 0)  # nothing new, no new version
    with pytest.raises(ds.DatasetError, match="no dataset named 'nope'"):
        ds.add(store, "nope", [])


def test_a_regex_rule_is_checked_when_the_dataset_is_made(store):
    make_cases(store, 1)
    with pytest.raises(ds.DatasetError, match="not a valid regex"):
        ds.create(store, "r", [ds.Case("refund-0", "approved (")], match="regex")
    with pytest.raises(ds.DatasetError, match="match: expected one of equals, contains, regex"):
        ds.create(store, "r", [ds.Case("refund-0")], match="fuzzy")


def test_export_then_import_round_trips_and_bad_lines_are_named(store, tmp_path):
    make_cases(store, 3)
    ds.create(store, "refunds", [ds.Case("refund-0"), ds.Case("refund-1", "approved")], match="contains", description="d")
    lines = list(ds.export_lines(store, "refunds"))
    assert json.loads(lines[0]) == {
        "schema": ds.SCHEMA,
        "kind": "dataset",
        "name": "refunds",
        "version": 1,
        "match": "contains",
        "description": "d",
    }
    copy = ds.import_lines(store, lines, where="refunds.jsonl", name="copy")
    assert (copy["cases"], copy["match"]) == (2, "contains")
    assert [(c["session"], c["expected"]) for c in ds.show(store, "copy")["cases"]] == [
        ("refund-0", None),
        ("refund-1", "approved"),
    ]
    bad = [lines[0], lines[1], '{"kind": "case", "session": "gone"}']
    with pytest.raises(ds.DatasetError, match=r"^in.jsonl:3: run 'gone' is not in this database"):
        ds.import_lines(store, bad, where="in.jsonl", name="other")
    with pytest.raises(ds.DatasetError, match=r"^in.jsonl:2: not JSON"):
        ds.import_lines(store, [lines[0], "{oops"], where="in.jsonl", name="other")
    with pytest.raises(ds.DatasetError, match=r"^in.jsonl:1: expected the dataset line first"):
        ds.import_lines(store, lines[1:], where="in.jsonl", name="other")
    assert store.get_dataset("other") is None


def test_experiment_replays_are_left_out_of_lists_unless_asked_for(store):
    make_cases(store, 2)
    ingest(store, [SessionEvent(session_id="refund-0~replay-x", name="replay", source=EXPERIMENT_SOURCE, replay_of="refund-0")])
    assert store.session_ids() == ["refund-0", "refund-1"]
    assert store.count_sessions() == 2 and len(store.list_sessions()) == 2
    assert store.session_ids(SessionFilter(replay_of="refund-0")) == []
    assert store.session_ids(SessionFilter(experiments=True)) == ["refund-0", "refund-1", "refund-0~replay-x"]
    assert store.session_ids(SessionFilter(source=EXPERIMENT_SOURCE)) == ["refund-0~replay-x"]
    cols, rows = store.run_rows()
    assert len(rows) == 2  # analytics does not count them either


def test_cli_dataset_commands(tmp_path, monkeypatch):
    from replay_core.storage.store import Store

    db = f"sqlite:///{tmp_path / 'cli.db'}"
    store = Store(db)
    make_cases(store, 3)
    make_cases(store, 1, status="failed", first=7)
    store.close()

    def cli(*args, ok=True):
        proc = run_main(monkeypatch, args, {"AGENT_REPLAY_DB_URL": db, "COLUMNS": "200"})
        assert (proc.returncode == 0) == ok, proc.stderr
        return proc

    made = json.loads(cli("dataset", "create", "refunds", "--status", "succeeded", "--workflow", "refund", "--json").stdout)
    assert set(made) == {"id", "name", "version", "cases"} and made["cases"] == 3
    by_ids = json.loads(cli("dataset", "create", "two", "--runs", "refund-0,refund-7", "--json").stdout)
    assert by_ids["cases"] == 2
    added = json.loads(cli("dataset", "add", "refunds", "--runs", "refund-7", "--runs", "refund-0", "--json").stdout)
    assert (added["version"], added["added"], added["cases"]) == (2, 1, 4)
    listed = json.loads(cli("dataset", "list", "--json").stdout)
    assert [(d["name"], d["cases"]) for d in listed] == [("refunds", 4), ("two", 2)]
    shown = json.loads(cli("dataset", "show", "refunds", "--json").stdout)
    assert [c["session"] for c in shown["cases"]] == ["refund-0", "refund-1", "refund-2", "refund-7"]
    path = tmp_path / "refunds.jsonl"
    cli("dataset", "export", "refunds", "-o", str(path))
    again = json.loads(cli("dataset", "import", str(path), "--name", "again", "--json").stdout)
    assert again["cases"] == 4
    assert "refund-1" in cli("dataset", "show", "again").stdout
    refused = cli("dataset", "create", "none", ok=False)
    assert refused.stderr.strip() == (
        "error: name the runs (--sessions ID …) or a filter (--from-filter 'status=… model=…', --status, --workflow, "
        "--since, --search)"
    )
    refused = cli("dataset", "create", "bad", "--runs", "nope", ok=False)
    assert refused.stderr.strip() == "error: --runs: no such run: nope" and "Traceback" not in refused.stderr

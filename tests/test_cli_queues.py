"""`agent-replay queue …` and `agent-replay share …` on a real database, called in this process as the program calls them."""

from __future__ import annotations

import csv
import io
import json

import pytest
from cli_helpers import run_main

from replay_core.storage.actor import Actor
from replay_core.storage.store import Store
from replay_core.team import queues, shares


@pytest.fixture
def cli(tmp_path, monkeypatch):
    db = f"sqlite:///{tmp_path / 'cli.db'}"

    def run(*args, ok=True, env=None):
        proc = run_main(
            monkeypatch, args, {"AGENT_REPLAY_CLI_ROLE": None, "AGENT_REPLAY_DB_URL": db, "COLUMNS": "200", **(env or {})}
        )
        if ok:
            assert proc.returncode == 0, proc.stderr
        return proc

    return run


def test_a_queue_from_a_filter_worked_shown_and_exported(cli, tmp_path):
    cli("demo")
    rubric = tmp_path / "rubric.json"
    rubric.write_text(
        json.dumps({"verdicts": ["Right", "Wrong"], "criteria": [{"name": "Cited the order", "description": "id given"}]})
    )
    made = json.loads(
        cli(
            "queue",
            "create",
            "failed runs",
            "--status",
            "failed",
            "--rubric",
            str(rubric),
            "--reviews-per-item",
            "2",
            "--assign",
            "Ana",
            "--assign",
            "Ben",
            "--json",
        ).stdout
    )
    assert set(made) == {"id", "name", "items"} and made["items"] >= 3
    # two reviewers work the first item through the library, as the page does
    store = Store(f"sqlite:///{tmp_path / 'cli.db'}")
    who = Actor("reviewer password", "reviewer", "test")
    for name, verdict in (("Ana", "Wrong"), ("Ben", "Right")):
        item = queues.next_item(store, made["id"], name, actor=who)
        queues.save_review(
            store, made["id"], item["id"], name, verdict, criteria={"Cited the order": "fail"}, note=f"{name} says", actor=who
        )
    shown = json.loads(cli("queue", "show", str(made["id"]), "--json").stdout)
    assert shown["progress"] == {
        "items": made["items"],
        "items_done": 1,
        "reviews": 2,
        "needed": 2 * made["items"],
        "percent": round(100 / made["items"]),
        "done": False,
    }
    first = shown["items"][0]
    assert first["verdicts"] == {"Wrong": 1, "Right": 1} and first["agreement"] == 0.0 and first["complete"]
    assert [r["reviewer"] for r in first["reviews"]] == ["Ana", "Ben"]
    listed = json.loads(cli("queue", "list", "--json").stdout)
    assert [(q["id"], q["reviews"], q["assignees"]) for q in listed] == [(made["id"], 2, ["Ana", "Ben"])]
    out = tmp_path / "reviews.csv"
    cli("queue", "export", str(made["id"]), "-o", str(out))
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == made["items"] + 1  # two reviews on the first run, an empty row for each other run
    assert (rows[0]["reviewer"], rows[0]["verdict"], rows[0]["criterion: Cited the order"]) == ("Ana", "Wrong", "fail")
    table = cli("queue", "show", str(made["id"])).stdout
    assert "1 of" in table and "Wrong ×1, Right ×1" in table


def test_queue_refusals_are_one_line(cli, tmp_path):
    cli("demo")
    none = cli("queue", "create", "nothing", ok=False)
    assert none.returncode == 1 and none.stderr.startswith("error: name the runs (--runs ID …) or a filter")
    bad = cli("queue", "create", "q", "--status", "broken", ok=False)
    assert "--status: expected one of" in bad.stderr
    empty = cli("queue", "create", "q", "--search", "no run says this 9f8e7d", ok=False)
    assert empty.stderr.strip() == "error: no run matches: a queue needs at least one run"
    viewer = cli("queue", "create", "q", "--status", "failed", ok=False, env={"AGENT_REPLAY_CLI_ROLE": "reviewer"})
    assert "reviewers may not make review queues" in viewer.stderr and "Traceback" not in viewer.stderr
    assert cli("queue", "show", "99", ok=False).stderr.strip() == "error: no queue 99"


def test_share_a_run_list_revoke(cli, tmp_path):
    cli("demo")
    sid = json.loads(cli("sessions", "--status", "failed", "--json").stdout)[0]["id"]
    made = json.loads(
        cli("share", sid, "--expires", "2d", "--json", env={"AGENT_REPLAY_PUBLIC_URL": "https://replay.example/"}).stdout
    )
    assert set(made) >= {"id", "token", "url", "expires_at"}
    assert made["url"] == f"https://replay.example/share?token={made['token']}"
    other = json.loads(cli("sessions", "--status", "succeeded", "--json").stdout)[0]["id"]
    pair = json.loads(cli("share", sid, "--compare", other, "--json").stdout)
    assert pair["target"] == {"session": sid, "other": other}
    listed = json.loads(cli("share", "--list", "--json").stdout)
    assert [(r["id"], r["state"]) for r in listed] == [(pair["id"], "active"), (made["id"], "active")]
    assert made["token"] not in cli("share", "--list").stdout
    assert "revoked" in cli("share", "--revoke", str(made["id"])).stdout
    store = Store(f"sqlite:///{tmp_path / 'cli.db'}")
    try:
        shares.open_link(store, made["token"])
        raise AssertionError("a revoked link opened")
    except shares.ShareGone as exc:
        assert exc.reason == "revoked"
    assert cli("share", "--revoke", str(made["id"]), ok=False).stderr.strip() == f"error: no link {made['id']} that still opens"
    assert "error: no run 'nope'" in cli("share", "nope", ok=False).stderr
    assert "error: expires: expected a count and a unit" in cli("share", sid, "--expires", "forever", ok=False).stderr


def test_a_dataset_from_a_reviewed_queue(cli, tmp_path):
    """The support lead's reviews become an experiment's cases: "what should it have done" is what counts as right."""
    cli("demo")
    made = json.loads(cli("queue", "create", "failed", "--status", "failed", "--json").stdout)
    store = Store(f"sqlite:///{tmp_path / 'cli.db'}")
    who = Actor("reviewer password", "reviewer", "test")
    item = queues.next_item(store, made["id"], "Ana", actor=who)
    queues.save_review(store, made["id"], item["id"], "Ana", "Bad", should_have="Refund the order", actor=who)
    out = json.loads(cli("dataset", "create", "from review", "--from-queue", str(made["id"]), "--json").stdout)
    assert out["cases"] == made["items"]
    shown = json.loads(cli("dataset", "show", "from review", "--json").stdout)
    expected = {c["session"]: c["expected"] for c in shown["cases"]}
    assert expected[item["session_id"]] == "Refund the order"
    assert sum(1 for v in expected.values() if v is None) == made["items"] - 1  # the others: judged by their own outcome
    refused = cli("dataset", "create", "nothing", "--from-queue", "999", ok=False)
    assert refused.returncode != 0 and "999" in refused.stderr

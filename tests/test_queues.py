"""Review queues over the Store, on SQLite and PostgreSQL: frozen items, holds in the database,
skips, N reviews per item with agreement, roles and the audit log, CSV."""

from __future__ import annotations

import csv
import io
import threading
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as hst
from sqlalchemy import inspect

from replay_core.events import SessionEndEvent, SessionEvent, StepEvent
from replay_core.ingest.pipeline import ingest
from replay_core.storage.actor import Actor, PermissionDenied
from replay_core.storage.store import SessionFilter, metadata
from replay_core.team import queues

EDITOR = Actor("Eve", "editor", "test")
REVIEWER = Actor("reviewer password", "reviewer", "test")
VIEWER = Actor("viewer password", "viewer", "test")
T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def add_runs(store, n: int = 4, status: str = "failed", workflow: str = "checkout", prefix: str = "run") -> list[str]:
    events: list = []
    ids = [f"{prefix}-{i}" for i in range(n)]
    for i, sid in enumerate(ids):
        events += [
            SessionEvent(session_id=sid, name=f"{workflow} {i}", workflow=workflow, started_at=T0 + timedelta(minutes=i)),
            StepEvent(session_id=sid, event_id="e1", seq=1, type="think", content="look"),
            SessionEndEvent(session_id=sid, status=status, ended_at=T0 + timedelta(minutes=i, seconds=30)),
        ]
    ingest(store, events)
    return ids


def test_items_are_frozen_at_creation_and_progress_counts_verdicts(store):
    ids = add_runs(store, 3)
    add_runs(store, 2, status="succeeded", prefix="ok")
    made = queues.create(store, "failed checkout", flt=SessionFilter(status="failed", workflow="checkout"), actor=EDITOR)
    assert made["items"] == 3
    add_runs(store, 1, prefix="late")  # recorded after: not in the queue
    q = queues.get(store, made["id"])
    assert (q["items"], q["reviews"], q["needed"], q["done"]) == (3, 0, 3, False)
    assert q["made_from"] == {"filter": {"status": "failed", "workflow": "checkout"}}
    seen = []
    while (item := queues.next_item(store, made["id"], "Sam", actor=REVIEWER)) is not None:
        seen.append(item["session_id"])
        queues.save_review(store, made["id"], item["id"], "Sam", "Bad", note="wrong total", actor=REVIEWER)
    assert seen == ids  # in start order
    q = queues.get(store, made["id"])
    assert (q["reviews"], q["items_done"], q["done"], q["percent"]) == (3, 3, True, 100)
    assert queues.queue_progress(store, REVIEWER, "Sam") == []


def test_an_item_is_held_until_its_timeout_and_never_given_to_two(store):
    add_runs(store, 2)
    qid = queues.create(store, "q", ids=["run-0", "run-1"], actor=EDITOR)["id"]
    now = datetime.now(UTC)
    a = queues.next_item(store, qid, "Ana", actor=REVIEWER, now=now)
    b = queues.next_item(store, qid, "Ben", actor=REVIEWER, now=now)
    assert (a["session_id"], b["session_id"]) == ("run-0", "run-1")
    assert queues.next_item(store, qid, "Cy", actor=REVIEWER, now=now) is None  # both held
    # Ana closed her tab: after the hold runs out, her item goes to Cy.
    later = now + queues.HOLD + timedelta(seconds=1)
    c = queues.next_item(store, qid, "Cy", actor=REVIEWER, now=later)
    assert c["session_id"] == "run-0"
    assert queues.results(store, qid, now=later)["items"][0]["held_by"] == "Cy"


def test_concurrent_claims_never_share_an_item(store):
    add_runs(store, 6)
    qid = queues.create(store, "q", flt=SessionFilter(status="failed"), actor=EDITOR)["id"]
    got: dict[str, int | None] = {}

    def take(name: str) -> None:
        item = queues.next_item(store, qid, name, actor=REVIEWER)
        got[name] = item["id"] if item else None

    threads = [threading.Thread(target=take, args=(f"r{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert None not in got.values() and len(set(got.values())) == 6


def test_skipped_items_come_back_last_and_holds_move_with_the_reviewer(store):
    add_runs(store, 3)
    qid = queues.create(store, "q", flt=SessionFilter(status="failed"), actor=EDITOR)["id"]
    first = queues.next_item(store, qid, "Sam", actor=REVIEWER)
    queues.skip(store, qid, first["id"], "Sam", actor=REVIEWER)
    second = queues.next_item(store, qid, "Sam", actor=REVIEWER)
    assert second["session_id"] == "run-1"
    again = queues.next_item(store, qid, "Sam", actor=REVIEWER)  # a reload gives back the item held
    assert again["id"] == second["id"]
    queues.skip(store, qid, second["id"], "Sam", actor=REVIEWER)
    assert queues.next_item(store, qid, "Sam", actor=REVIEWER)["session_id"] == "run-2"
    assert queues.next_item(store, qid, "Ana", actor=REVIEWER)["session_id"] == "run-0"  # a skip holds nothing
    res = queues.results(store, qid)
    assert [p for p in res["reviewers"] if p["reviewer"] == "Sam"][0]["skipped"] == 2
    assert res["queue"]["reviews"] == 0


def test_n_reviews_per_item_with_agreement(store):
    add_runs(store, 2)
    rubric = {"verdicts": ["Pass", "Fail"], "criteria": [{"name": "Polite", "description": "no blame"}]}
    qid = queues.create(store, "q", ids=["run-0", "run-1"], rubric=rubric, reviews_per_item=2, actor=EDITOR)["id"]
    plan = {"Ana": ["Fail", "Pass"], "Ben": ["Fail", "Fail"]}
    for name, verdicts in plan.items():
        for verdict in verdicts:
            item = queues.next_item(store, qid, name, actor=REVIEWER)
            queues.save_review(
                store, qid, item["id"], name, verdict, criteria={"Polite": "pass"}, should_have="ask first", actor=REVIEWER
            )
    assert queues.next_item(store, qid, "Ana", actor=REVIEWER) is None  # reviewed everything once
    res = queues.results(store, qid)
    assert [i["agreement"] for i in res["items"]] == [1.0, 0.0]
    assert res["agreement"] == {"mean": 0.5, "items": 2}
    assert res["items"][1]["verdicts"] == {"Pass": 1, "Fail": 1}
    assert {p["reviewer"]: p["verdicts"] for p in res["reviewers"]} == {"Ana": {"Fail": 1, "Pass": 1}, "Ben": {"Fail": 2}}
    assert queues.get(store, qid)["done"]
    rows = list(csv.DictReader(io.StringIO(queues.to_csv(res))))
    assert len(rows) == 4 and rows[0]["criterion: Polite"] == "pass" and rows[0]["should_have"] == "ask first"
    assert {r["item_agreement"] for r in rows} == {"1.00", "0.00"}


def test_roles_assignment_and_the_audit_log(store):
    add_runs(store, 1)
    with pytest.raises(PermissionDenied):
        queues.create(store, "q", ids=["run-0"], actor=REVIEWER)
    qid = queues.create(store, "q", ids=["run-0"], assignees=["Ana"], actor=EDITOR)["id"]
    with pytest.raises(PermissionDenied):
        queues.next_item(store, qid, "Ana", actor=VIEWER)
    with pytest.raises(queues.QueueError, match="assigned to Ana; Ben is not one of them"):
        queues.next_item(store, qid, "Ben", actor=REVIEWER)
    with pytest.raises(queues.QueueError, match="reviewer: say who"):
        queues.next_item(store, qid, "  ", actor=REVIEWER)
    item = queues.next_item(store, qid, "ana", actor=REVIEWER)  # names match case aside
    with pytest.raises(queues.QueueError, match="verdict: expected one of Good, Bad, Needs attention"):
        queues.save_review(store, qid, item["id"], "ana", "good", actor=REVIEWER)
    with pytest.raises(PermissionDenied):
        queues.delete(store, qid, actor=REVIEWER)
    assert queues.delete(store, qid, actor=EDITOR)
    lines = store.audit_entries(actions=["manage_queues"])
    assert [(e["who"], e["outcome"], (e["detail"] or {}).get("op")) for e in lines] == [
        ("Eve", "ok", "delete"),
        ("reviewer password", "denied", None),
        ("Eve", "ok", "create"),
        ("reviewer password", "denied", None),
    ]
    assert store.list_queues() == [] and store.queue_reviews(qid) == []


def test_bad_input_is_named(store, tmp_path):
    add_runs(store, 1)
    with pytest.raises(queues.QueueError, match="no run 'nope'"):
        queues.create(store, "q", ids=["run-0", "nope"], actor=EDITOR)
    with pytest.raises(queues.QueueError, match="no run matches"):
        queues.create(store, "q", flt=SessionFilter(status="succeeded"), actor=EDITOR)
    with pytest.raises(queues.QueueError, match="reviews_per_item"):
        queues.create(store, "q", ids=["run-0"], reviews_per_item=0, actor=EDITOR)
    bad = tmp_path / "rubric.json"
    bad.write_text('{"verdicts": ["A", "a"]}')
    with pytest.raises(queues.QueueError, match="rubric.json: rubric.verdicts: labels must differ"):
        queues.load_rubric(bad)
    bad.write_text("{nope")
    with pytest.raises(queues.QueueError, match="not valid JSON"):
        queues.load_rubric(bad)
    toml = tmp_path / "rubric.toml"
    toml.write_text('verdicts = ["Fine", "Wrong"]\nnote = false\n[[criteria]]\nname = "Refund right"\ndescription = "amount"\n')
    assert queues.load_rubric(toml) == {
        "verdicts": ["Fine", "Wrong"],
        "criteria": [{"name": "Refund right", "description": "amount"}],
        "note": False,
        "should_have": True,
    }


def test_a_deleted_run_stays_an_item_marked_gone(store):
    add_runs(store, 2)
    qid = queues.create(store, "q", ids=["run-0", "run-1"], actor=EDITOR)["id"]
    store.delete_sessions(["run-1"], actor=EDITOR)
    items = queues.results(store, qid)["items"]
    assert [(i["session_id"], i["stored"]) for i in items] == [("run-0", True), ("run-1", False)]


def test_csv_cells_never_start_a_formula(store):
    add_runs(store, 1)
    qid = queues.create(store, "q", ids=["run-0"], actor=EDITOR)["id"]
    item = queues.next_item(store, qid, "=cmd", actor=REVIEWER)
    queues.save_review(store, qid, item["id"], "=cmd", "Good", note="@SUM(A1)", actor=REVIEWER)
    row = list(csv.DictReader(io.StringIO(queues.to_csv(queues.results(store, qid)))))[0]
    assert (row["reviewer"], row["note"]) == ("'=cmd", "'@SUM(A1)")


def test_the_migration_builds_the_tables_the_code_declares(store):
    names = ("review_queues", "queue_items", "queue_reviews", "share_links")
    insp = inspect(store.engine)
    for name in names:
        assert {c["name"] for c in insp.get_columns(name)} == {c.name for c in metadata.tables[name].columns}


@given(hst.lists(hst.sampled_from("ABC"), max_size=8))
def test_agreement_is_the_share_of_agreeing_pairs(verdicts):
    value = queues.agreement(verdicts)
    if len(verdicts) < 2:
        assert value is None
        return
    assert 0.0 <= value <= 1.0
    assert (value == 1.0) == (len(set(verdicts)) == 1)
    assert value == queues.agreement(list(reversed(verdicts)))


def test_queue_progress_for_the_first_screen(store):
    add_runs(store, 2)
    mine = queues.create(store, "for Sam", ids=["run-0"], assignees=["Sam"], actor=EDITOR)["id"]
    other = queues.create(store, "for Ana", ids=["run-0", "run-1"], assignees=["Ana"], actor=EDITOR)["id"]
    done = queues.create(store, "done", ids=["run-1"], actor=EDITOR)["id"]
    item = queues.next_item(store, done, "Sam", actor=REVIEWER)
    queues.save_review(store, done, item["id"], "Sam", "Good", actor=REVIEWER)
    rows = queues.queue_progress(store, REVIEWER, "sam")
    assert [(r["id"], r["yours"], r["items"], r["items_done"], r["percent"]) for r in rows] == [
        (mine, True, 1, 0, 0),
        (other, False, 2, 0, 0),
    ]
    assert queues.queue_progress(store, VIEWER, "Sam") == []


def test_the_kept_review_count_follows_saves_resaves_and_skips(store):
    add_runs(store, 1)
    qid = queues.create(store, "q", ids=["run-0"], reviews_per_item=2, actor=EDITOR)["id"]
    item = queues.next_item(store, qid, "Ana", actor=REVIEWER)
    counts = []
    for step in (
        lambda: queues.skip(store, qid, item["id"], "Ana", actor=REVIEWER),
        lambda: queues.save_review(store, qid, item["id"], "Ana", "Bad", actor=REVIEWER),
        lambda: queues.save_review(store, qid, item["id"], "Ana", "Good", actor=REVIEWER),  # a change of mind
        lambda: queues.save_review(store, qid, item["id"], "Ben", "Good", actor=REVIEWER),
        lambda: queues.skip(store, qid, item["id"], "Ben", actor=REVIEWER),
    ):
        step()
        counts.append(queues.get(store, qid)["reviews"])
        given = sum(r["verdict"] is not None for r in store.queue_reviews(qid))
        assert counts[-1] == given == store.queue_items(qid)[0]["reviews"]
    assert counts == [0, 1, 1, 2, 1]

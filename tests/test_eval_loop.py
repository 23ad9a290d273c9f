"""The evaluation loop: a review queue's bad verdicts become a dataset (on demand, or fed as they come), a
scheduled experiment runs from it against the scripted model server, and its next run reports the cases
that passed before and fail now, with an alert through the monitors' delivery (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from experiment_cases import START, Agent, answer, make_cases, server, variant  # noqa: F401  (server: a fixture)

from replay_core.monitors import check, loop
from replay_core.storage.actor import Actor, PermissionDenied
from replay_core.team import queues
from replay_core.whatif.replay_config import RECORDED

T0 = START + timedelta(days=1)


def reviewed_queue(store, n: int, bad: set[int]) -> int:
    """A queue of runs refund-0..n-1, every one reviewed: `bad` ones Bad with what they should have said."""
    made = queues.create(store, "refund review", ids=[f"refund-{i}" for i in range(n)])
    for item in store.queue_items(made["id"]):
        i = int(item["session_id"].split("-")[1])
        if i in bad:
            queues.save_review(store, made["id"], item["id"], "ana", "Bad", should_have=answer(i))
        else:
            queues.save_review(store, made["id"], item["id"], "ana", "Good")
    return made["id"]


class Hook:
    """Stands in for the webhook delivery: keeps what would have been POSTed."""

    def __init__(self):
        self.sent: list[dict] = []

    def __call__(self, url, body, secret_env):
        self.sent.append(body)
        return [{"ok": True, "status": 200}]


def test_a_scheduled_experiment_from_a_queue_made_dataset_reports_its_regression(store, server):
    make_cases(store, 20)
    queue_id = reviewed_queue(store, 20, bad=set(range(16)))
    made = loop.dataset_from_queue(store, queue_id, "refund regressions", bad_only=True)
    assert (made["version"], made["cases"]) == (1, 16)
    cases = store.dataset_cases(made["id"])
    assert cases[3]["expected"] == answer(3) and {c["session_id"] for c in cases} == {f"refund-{i}" for i in range(16)}

    wrong = {"cases": set()}
    server.route("fake-a", Agent(server, wrong=lambda i: i in wrong["cases"]))
    schedule = loop.add_schedule(
        store, "nightly", "refund regressions", [variant(server, "fake-a").to_json()], webhook_url="http://hooks.invalid/x"
    )
    hook = Hook()
    first = loop.run_due(store, T0, deliver_to=hook)
    assert [(r["reason"], r["status"]) for r in first] == [("first run", "done")]
    assert first[0]["variants"][0]["pass_rate"] == 1.0 and first[0]["monitor"]["verdict"] == "no evidence"
    assert loop.run_due(store, T0 + timedelta(hours=1), deliver_to=hook) == []  # not a day yet

    wrong["cases"] = {0, 2, 4, 6, 8, 10, 12, 14}  # the model got worse on half the reviewed failures
    second = loop.run_due(store, T0 + timedelta(hours=25), deliver_to=hook)
    assert [r["reason"] for r in second] == ["a day since the last run"]
    v = second[0]["variants"][0]
    assert (v["previous_pass_rate"], v["pass_rate"], v["verdict"]) == (1.0, 0.5, "worse")
    assert v["regressed"] == [f"refund-{i}" for i in sorted(wrong["cases"])] and v["improved"] == []
    assert second[0]["previous"] == first[0]["experiment"]
    # one alert, through the monitors' path: the monitor names the regressions; the webhook got the documented body
    monitor = store.get_monitor(loop.monitor_name("nightly"))
    (alert,) = store.alerts(monitor["id"])
    assert alert["resolved_at"] is None and alert["figure"]["regressions"] == {v["variant"]: v["regressed"]}
    assert [b["event"] for b in hook.sent] == ["opened"]
    assert "100% → 50%" in hook.sent[0]["sentence"] and "8 cases passed before and fail now" in hook.sent[0]["sentence"]
    assert hook.sent[0]["runs_link"].endswith(f"/experiments?experiment={second[0]['experiment']}")
    # the periodic pass judges it again without a second alert; a recovered run resolves it, once
    check.check(store, monitor, T0 + timedelta(hours=26), deliver_to=hook)
    wrong["cases"] = set()
    third = loop.run_due(store, T0 + timedelta(hours=50), deliver_to=hook)
    assert third[0]["variants"][0]["verdict"] == "better" and [b["event"] for b in hook.sent] == ["opened", "resolved"]
    history = store.schedule_runs(schedule["id"])
    assert [len(r["result"]["variants"][0].get("regressed", [])) for r in history] == [0, 8, 0]
    # every scheduled replay is audited as the schedule, on behalf of whoever made it
    who = {e["who"] for e in store.audit_entries(limit=500) if e["action"] == "replay" and e["target"].startswith("refund-")}
    assert who == {f"schedule nightly (by {schedule['created_by']})"}


def test_a_queue_feeds_its_new_bad_verdicts_to_the_next_dataset_version(store):
    make_cases(store, 6)
    queue_id = reviewed_queue(store, 6, bad={1})
    fed = loop.set_feed(store, queue_id, "fed")
    assert fed["synced"] == {"name": "fed", "version": 1, "cases": 1, "added": None}
    schedule = loop.add_schedule(store, "on new cases", "fed", [{"model": RECORDED}], trigger="dataset_version")
    assert [r["reason"] for r in loop.run_due(store, T0)] == ["first run"]
    assert loop.run_due(store, T0 + timedelta(minutes=10)) == []  # nothing new
    item = next(i for i in store.queue_items(queue_id) if i["session_id"] == "refund-4")
    queues.save_review(store, queue_id, item["id"], "bo", "Bad", should_have=answer(4))
    ran = loop.run_due(store, T0 + timedelta(minutes=20))
    assert [r["reason"] for r in ran] == ["dataset fed version 2"]
    ds = store.get_dataset("fed")
    assert ds["version"] == 2 and [c["session_id"] for c in store.dataset_cases(ds["id"])] == ["refund-1", "refund-4"]
    assert store.dataset_cases(ds["id"])[1]["expected"] == answer(4)
    assert loop.run_due(store, T0 + timedelta(minutes=30)) == []  # the same verdicts add nothing
    assert [r["dataset_version"] for r in store.schedule_runs(schedule["id"])] == [2, 1]
    loop.set_feed(store, queue_id, None)
    assert store.queue_feeds() == []


def test_each_schedule_runs_once_across_replicas(store):
    make_cases(store, 2)
    loop.set_feed(store, reviewed_queue(store, 2, bad={0, 1}), "both")
    loop.add_schedule(store, "once", "both", [{"model": RECORDED}])
    assert len(loop.run_due(store, T0)) == 1
    assert loop.run_due(store, T0 + timedelta(seconds=1)) == []  # a second replica, the same period


def test_refusals_name_the_field(store):
    make_cases(store, 2)
    queue_id = reviewed_queue(store, 2, bad=set())
    with pytest.raises(loop.LoopError, match="no run of it was given a bad verdict"):
        loop.dataset_from_queue(store, queue_id, "none", bad_only=True)
    with pytest.raises(loop.LoopError, match="^verdicts: expected some of this queue's verdicts"):
        loop.set_feed(store, queue_id, "x", ["Terrible"])
    with pytest.raises(loop.LoopError, match="^no queue 999"):
        loop.dataset_from_queue(store, 999)
    loop.dataset_from_queue(store, queue_id, "all")
    with pytest.raises(loop.LoopError, match="^trigger: expected one of"):
        loop.add_schedule(store, "s", "all", [{"model": RECORDED}], trigger="hourly")
    with pytest.raises(loop.LoopError, match="^dataset: no dataset named 'nope'"):
        loop.add_schedule(store, "s", "nope", [{"model": RECORDED}])
    viewer = Actor("vic", "viewer", "http")
    with pytest.raises(PermissionDenied):
        loop.add_schedule(store, "s", "all", [{"model": RECORDED}], actor=viewer)


def test_a_new_model_in_the_configuration_runs_the_schedule_with_it(sqlite_store, monkeypatch):
    store = sqlite_store
    make_cases(store, 2)
    loop.dataset_from_queue(store, reviewed_queue(store, 2, bad={0}), "q")
    monkeypatch.setenv("AGENT_REPLAY_MODELS", "openai/old-model")
    loop.add_schedule(store, "models", "q", [{"model": RECORDED}], trigger="new_model")
    assert [r["reason"] for r in loop.run_due(store, T0)] == ["first run"]
    assert loop.run_due(store, T0 + timedelta(minutes=10)) == []
    monkeypatch.setenv("AGENT_REPLAY_MODELS", f"openai/old-model,{RECORDED}")
    assert loop.run_due(store, T0 + timedelta(minutes=20)) == []  # the run's own answers are no new model
    monkeypatch.setenv("AGENT_REPLAY_MODELS", "openai/old-model,openai/new-model")
    assert loop.due(store, store.get_schedule("models"), T0) == ("new model openai/new-model", "openai/new-model")

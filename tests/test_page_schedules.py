"""The evaluation loop on the Experiments page (AppTest): a queue's bad verdicts made into a dataset and fed
as they come, a schedule added and run, its regressions listed; viewers see it and cannot act. And the queue
page's one button: only the runs judged bad."""

from __future__ import annotations

from datetime import timedelta

from apptest_helpers import each_empty_store, empty_store, page, texts  # noqa: F401  (fixtures)
from experiment_cases import make_cases
from test_eval_loop import T0, reviewed_queue

from replay_core.monitors import loop
from ui.common import md

PAGE = "pages/experiments.py"


def test_queue_to_dataset_schedule_and_its_last_run(empty_store, monkeypatch):
    monkeypatch.delenv("AGENT_REPLAY_MODELS", raising=False)
    make_cases(empty_store, 4)
    queue_id = reviewed_queue(empty_store, 4, bad={0, 3})
    at = page(PAGE)
    assert not at.exception and "No schedule yet." in texts(at)
    at.selectbox(key="loop_queue").select(queue_id)
    at.text_input(key="loop_ds").input("reviewed bad")
    at.button(key="loop_from_queue").click().run()
    assert md("Dataset “reviewed bad” version 1: 2 cases.") in texts(at)
    at.button(key="loop_feed").click().run()
    assert md(f"Queue {queue_id} now feeds “reviewed bad”.") in texts(at)
    assert md("Every new Bad verdict of this queue goes to dataset “reviewed bad”.") in texts(at)
    at.text_input(key="loop_name").input("nightly")
    at.selectbox(key="loop_dataset").select("reviewed bad")
    at.selectbox(key="loop_model").select("recorded")
    at.button(key="loop_add").click().run()
    assert md("Schedule “nightly” added") in texts(at) and "Not run yet." in texts(at)
    at.button(key="loop_run_due").click().run()
    assert not at.exception
    shown = texts(at)
    assert md("1 schedule(s) ran.") in shown and "(first run): done" in shown and "pass rate 100%" in shown


def test_a_regression_is_listed_and_viewers_cannot_act(each_empty_store, monkeypatch):
    make_cases(each_empty_store, 2)
    loop.dataset_from_queue(each_empty_store, reviewed_queue(each_empty_store, 2, bad={0, 1}), "d")
    schedule = loop.add_schedule(each_empty_store, "nightly", "d", [{"model": "recorded"}])
    loop.run_due(each_empty_store, T0)
    run_id = each_empty_store.start_schedule_run(schedule["id"], "a day since the last run", 1, T0 + timedelta(days=1))
    result = {
        "status": "done",
        "experiment": "exp-0000000000ff",
        "previous": "exp-0000000000fe",
        "variants": [
            {
                "variant": "recorded",
                "cases": 2,
                "pass_rate": 0.0,
                "ci": [0.0, 0.6576],
                "previous_pass_rate": 1.0,
                "previous_ci": [0.3424, 1.0],
                "verdict": "no evidence yet",
                "regressed": ["refund-0", "refund-1"],
                "improved": [],
            }
        ],
    }
    each_empty_store.finish_schedule_run(run_id, experiment_id=None, result=result)
    monkeypatch.setenv("AGENT_REPLAY_PASSWORD", "look-only")  # a door, so the role below is the signed-in one
    at = page(PAGE, state={"role": "viewer"})
    assert not at.exception
    shown = texts(at)
    assert "pass rate 0% (0%–66%), was 100%: **no evidence yet**" in shown
    assert "Passed before, fail now: " + md("refund-0") + ", " + md("refund-1") in shown
    assert at.button(key="loop_run_due").disabled


def test_the_queue_page_makes_a_dataset_of_the_bad_runs_only(empty_store):
    make_cases(empty_store, 3)
    queue_id = reviewed_queue(empty_store, 3, bad={2})
    at = page("pages/queues.py")
    assert not at.exception
    at.button(key=f"ds_bad_{queue_id}").click().run()
    assert "1 cases judged bad." in texts(at)
    assert [c["session_id"] for c in empty_store.dataset_cases(empty_store.get_dataset("refund review")["id"])] == ["refund-2"]

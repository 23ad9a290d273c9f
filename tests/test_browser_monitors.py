"""The Monitors page and the Experiments page's schedules in Chromium: a firing monitor's alert, the runs
behind it and its pattern; acknowledging it; a scheduled experiment's last run with its regressions.

On SQLite: what they check is what the browser shows and sends; the pages' reads on PostgreSQL are
test_monitors_page.py's and test_page_schedules.py's on both databases. Screenshots go to test-output/browser/
(gitignored).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from apptest_helpers import served_app
from experiment_cases import make_cases
from monitor_workload import runs
from test_browser import OUT, settled
from test_eval_loop import T0, reviewed_queue

from replay_core.monitors import check, loop, releases
from replay_core.vocabulary import now_utc

pytestmark = pytest.mark.browser
RULE = {"metric": "failure_rate", "threshold": 0.2, "filters": {"workflow": "checkout"}}


def test_a_firing_monitor_is_shown_with_its_runs_and_acknowledged(browser, sqlite_store):
    store = sqlite_store
    now = now_utc()
    runs(store, 60, day=3, fail=0.05, version="1.5.0", seed=21, now=now)
    runs(store, 60, day=1, fail=0.60, version="1.6.0", seed=22, now=now)
    made = check.add(store, "checkout failures", RULE)
    assert check.check(store, made)["event"] == "opened"
    # the built-in release monitor sees 1.6.0 fail more than 1.5.0 too: judged here, so the served app's own
    # pass cannot add its alert while the page is being read
    check.check_due(store)
    assert {a["monitor"] for a in store.alerts()} == {"checkout failures", releases.monitor_name("agent_version")}
    with served_app(store.url) as base:
        pg = browser.new_page(viewport={"width": 1440, "height": 1000})
        pg.goto(f"{base}/monitors")
        settled(pg)
        pg.get_by_text("checkout failures").first.wait_for(timeout=30_000)
        assert pg.get_by_text("🔴 firing").count() >= 1
        alert = pg.locator("[data-testid=stAlertContentError]").filter(has_text="above 20")
        alert.wait_for(timeout=60_000)
        assert alert.count() == 1
        runs_link = pg.get_by_role("link", name="The runs behind it").first
        # under the alert, once its patterns are named (the first time it is shown: explaining each failing
        # run, 10-20 s on PostgreSQL here, more on a loaded machine)
        runs_link.wait_for(timeout=120_000)
        assert "workflow=checkout" in runs_link.get_attribute("href") and "status=failed" in runs_link.get_attribute("href")
        assert pg.get_by_text("charge_card").count() >= 1  # the failure pattern
        # the page's end, after the release alert's patterns (named in this first run too, seconds on a
        # loaded PostgreSQL): pressed earlier, the button interrupts the run, and the run after the press
        # names them before it ends, showing the old button until then
        pg.get_by_role("heading", name="Releases").wait_for(timeout=120_000)
        settled(pg)
        OUT.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(OUT / "monitors-firing.png"), full_page=True)
        ack = pg.locator(f".st-key-mon_ack_{made['id']} button")
        ack.click()
        pg.get_by_text("acknowledged by").first.wait_for(timeout=30_000)
        ack.wait_for(state="detached", timeout=30_000)
    [stored] = store.alerts(made["id"])
    assert stored["acked_by"]
    [release] = [a for a in store.alerts() if a["id"] != stored["id"]]
    assert not release["acked_by"]  # the other alert's button was not the one pressed


def test_a_scheduled_experiment_lists_its_regressions(browser, sqlite_store):
    store = sqlite_store
    make_cases(store, 3)
    loop.dataset_from_queue(store, reviewed_queue(store, 3, bad={0, 1, 2}), "reviewed")
    # on new dataset versions only: the served app's own schedule pass finds nothing due
    schedule = loop.add_schedule(store, "nightly", "reviewed", [{"model": "recorded"}], trigger="dataset_version")
    loop.run_due(store, T0)
    run_id = store.start_schedule_run(schedule["id"], "a day since the last run", 1, T0 + timedelta(days=1))
    variant = {"variant": "recorded", "cases": 3, "pass_rate": 0.0, "ci": [0.0, 0.5615], "previous_pass_rate": 1.0}
    variant |= {"previous_ci": [0.4385, 1.0], "verdict": "worse", "regressed": ["refund-0", "refund-2"], "improved": []}
    result = {"status": "done", "experiment": None, "previous": "exp-x", "variants": [variant]}
    store.finish_schedule_run(run_id, experiment_id=None, result=result)
    with served_app(store.url) as base:
        pg = browser.new_page(viewport={"width": 1440, "height": 1000})
        pg.goto(f"{base}/experiments")
        settled(pg)
        pg.get_by_text("Scheduled experiments").wait_for(timeout=30_000)
        settled(pg)
        box = pg.get_by_text("Passed before, fail now").first
        box.scroll_into_view_if_needed()
        assert "refund-0, refund-2" in box.inner_text()
        assert pg.get_by_text("was 100%").count() == 1
        OUT.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(OUT / "experiment-schedules.png"), full_page=True)

"""The experiments page in Chromium: launching opens the new experiment in the picker and its results together
(the picker showed "Pick an experiment…" above the results it had opened).

On SQLite: what it checks is what the browser's picker shows; the page's launch and results on PostgreSQL are
test_page_experiments.py's on both databases, its runner's claims test_experiment_claims.py's.

Screenshots go to test-output/browser/ (gitignored).
"""

from __future__ import annotations

import pytest
from apptest_helpers import database, served_app
from test_browser import OUT, settled

from replay_core.storage.store import Store
from replay_core.whatif import dataset as ds
from replay_core.whatif import experiment as ex
from replay_core.whatif.replay_config import ReplayConfig

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def app(demo_db, tmp_path_factory):
    with database("sqlite", tmp_path_factory.mktemp("ex"), demo_db) as url, served_app(url) as base:
        yield base, url


def test_launching_shows_the_new_experiment_in_the_picker_and_its_results(browser, app):
    base, url = app
    store = Store(url)
    ds.create(store, "six", [ds.Case(r["id"]) for r in store.list_sessions(limit=6)])
    earlier, _ = ex.start(store, "six", [ReplayConfig(model="recorded")])  # the picker is there, empty, before the launch
    ex.run(store, earlier)
    store.close()
    pg = browser.new_page(viewport={"width": 1440, "height": 900})
    pg.goto(f"{base}/experiments")
    settled(pg)
    pg.get_by_text("Launch an experiment").wait_for(timeout=30_000)
    typed = pg.get_by_label("Other models")
    typed.fill("recorded")
    typed.press("Enter")
    pg.get_by_text("tokens in (≈)").wait_for(state="attached", timeout=30_000)  # the estimate: the plan is ready
    settled(pg)
    pg.get_by_role("button", name="Launch").click()
    pg.wait_for_url("**experiment=exp-**", timeout=30_000)
    experiment = pg.url.split("experiment=", 1)[1]
    pg.get_by_text("6 of 6 replays done").wait_for(timeout=60_000)
    settled(pg)
    picker = pg.get_by_role("combobox", name="Experiment", exact=True)
    picker.scroll_into_view_if_needed()
    shown = picker.input_value()  # what the box shows; empty shows its placeholder, "Pick an experiment…"
    assert experiment in shown and experiment != earlier, shown
    OUT.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(OUT / "experiment-launched.png"))

"""A shared run in Chromium at 1440×900: its first screen has the header, the reviewer's verdict and note,
the Why and a step with its content (the verdict was below every step, out of sight)."""

from __future__ import annotations

import shutil

import pytest
from apptest_helpers import FAILED_CODING, served_app
from test_browser import settled

from replay_core.storage.actor import Actor
from replay_core.storage.store import Store
from replay_core.team import shares

pytestmark = pytest.mark.browser


def test_a_shared_runs_first_screen_has_the_verdict_the_why_and_a_step(browser, demo_db, tmp_path):
    db = tmp_path / "demo.db"
    shutil.copy(demo_db, db)
    store = Store(f"sqlite:///{db}")
    store.annotate(FAILED_CODING, "bad", "Gave up with the tests failing", author="Dana")
    link = shares.make(store, shares.RUN, session=FAILED_CODING, actor=Actor("Eve", "editor", "test"))["url"]
    store.close()
    with served_app(f"sqlite:///{db}") as base:
        pg = browser.new_page(viewport={"width": 1440, "height": 900})
        pg.goto(base + "/share" + link.split("/share", 1)[1])
        pg.get_by_text("Gave up with the tests failing").wait_for(timeout=30_000)
        settled(pg)

        def on_first_screen(text: str) -> bool:
            box = pg.get_by_text(text).first.bounding_box()
            return box is not None and 0 <= box["y"] and box["y"] + box["height"] <= 900

        assert on_first_screen("Bad — Dana: Gave up with the tests failing")
        assert on_first_screen("Why:")
        assert on_first_screen("Input · step 1")  # the selected step's detail, with its content under it
        assert "Ticket PAY-412" in pg.inner_text("body")

"""The threads page in Chromium, as a person uses it: the latest conversations, a click opening one, its totals and
its runs in order on screen at 1440×900, a click on a run opening its timeline.

Screenshots go to test-output/browser/ (gitignored).
"""

from __future__ import annotations

import pytest
from apptest_helpers import served_app
from test_browser import OUT, settled
from test_threads import _turns

pytestmark = pytest.mark.browser
ROW_PX = 35  # a dataframe's default row (and header) height
CHECKBOX_PX = 32


def test_a_conversation_opened_from_the_list_and_a_run_from_the_conversation(browser, sqlite_store):
    """On SQLite: the clicks and the layout. The threads' reads from PostgreSQL are tests/test_page_threads.py's."""
    store = sqlite_store
    _turns(store)
    OUT.mkdir(parents=True, exist_ok=True)
    with served_app(store.url) as base:
        pg = browser.new_page(viewport={"width": 1440, "height": 900})
        pg.goto(f"{base}/threads")
        settled(pg)
        pg.get_by_text("The latest 2 conversations").wait_for(timeout=30_000)
        grid = pg.locator("[data-testid=stDataFrame]").first
        grid.wait_for()
        settled(pg)
        box = grid.bounding_box()
        pg.screenshot(path=str(OUT / "threads-1440.png"))
        # the second conversation (support-1: three runs) opens on a click on its row
        pg.mouse.click(box["x"] + CHECKBOX_PX + 40, box["y"] + ROW_PX * 2.5)
        pg.wait_for_url("**/threads?thread=support-1**", timeout=30_000)
        pg.get_by_text("2 users: ana, bo").wait_for(timeout=30_000)
        settled(pg)
        totals = pg.locator(".st-key-thread_totals")
        totals.wait_for()
        for figure in ("Runs", "3", "Failed", "330", "$0.7500"):
            assert totals.get_by_text(figure, exact=True).first.is_visible(), figure
        grid = pg.locator("[data-testid=stDataFrame]").first
        grid.wait_for()
        settled(pg)
        box = grid.bounding_box()
        assert box["y"] + ROW_PX * 4 <= 900, box  # the three runs are on screen without scrolling
        pg.screenshot(path=str(OUT / "thread-1440.png"))
        # the second run of the conversation (turn-2, failed) opens its timeline
        pg.mouse.click(box["x"] + CHECKBOX_PX + 120, box["y"] + ROW_PX * 2.5)
        pg.wait_for_url("**/timeline?session=turn-2**", timeout=30_000)
        pg.get_by_text("run turn-2").first.wait_for(timeout=30_000)
    assert store.get_session("turn-2")["thread_id"] == "support-1"

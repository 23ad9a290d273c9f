"""The runs list at 1440×900 in Chromium, as a person uses it: a click on a run's name opens it, the cost is on
screen without scrolling the table sideways, and the page's runs are all listed (no scroll box inside the page).

Screenshots go to test-output/browser/ (gitignored).
"""

from __future__ import annotations

import pytest
from test_browser import OUT, settled

from replay_core.storage.store import Store
from ui.runs_view import HEADER_PX, ROW_PX, WIDE_COLUMNS

pytestmark = pytest.mark.browser
CHECKBOX_PX = 32  # the row's selection box, left of the first column


def test_a_click_on_a_runs_name_opens_it_and_its_cost_is_on_screen(browser, demo_app):
    base, url = demo_app
    store = Store(url)
    newest = store.list_sessions(limit=2)
    store.close()
    pg = browser.new_page(viewport={"width": 1440, "height": 900})
    pg.goto(f"{base}/runs")
    settled(pg)
    pg.get_by_text("18 runs:").wait_for(timeout=30_000)
    grid = pg.locator(".st-key-runs_wide [data-testid=stDataFrame]")
    grid.wait_for()
    settled(pg)
    box = grid.bounding_box()
    # every column up to the cost inside the table's visible width, the table inside the window
    first = ("Status", "Run", "Outcome", "Started", "Steps", "Tokens", "Cost")
    through_cost = CHECKBOX_PX + sum(WIDE_COLUMNS[c]["width"] for c in first)
    assert through_cost <= box["width"] and box["x"] + box["width"] <= 1440, (through_cost, box)
    # the page's runs all listed: the table scrolls with the page, not inside it
    scroller = grid.locator(".dvn-scroller").first
    inner = scroller.evaluate("e => [e.scrollHeight, e.clientHeight]")
    assert inner[0] <= inner[1] + 1 and box["height"] >= HEADER_PX + ROW_PX * 18, (inner, box)
    OUT.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(OUT / "runs-1440.png"))
    # a click on the second run's name (not its checkbox) opens its timeline
    name_x = box["x"] + CHECKBOX_PX + WIDE_COLUMNS["Status"]["width"] + 40
    pg.mouse.click(name_x, box["y"] + HEADER_PX + ROW_PX * 1.5)
    pg.wait_for_url(f"**/timeline?session={newest[1]['id']}**", timeout=30_000)
    pg.get_by_text(newest[1]["name"]).first.wait_for(timeout=30_000)

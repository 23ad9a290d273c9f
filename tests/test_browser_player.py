"""The visual replay in Chromium: the screenshots load in the browser, the filmstrip jumps, and Play
moves through the steps on its own (fragment timers, which AppTest cannot run)."""

from __future__ import annotations

import pytest
from test_browser import OUT, POLL_MS, settled

from replay_core.demo import BROWSER_DEMO

pytestmark = pytest.mark.browser


def test_the_player_shows_plays_and_jumps(browser, demo_app):
    OUT.mkdir(parents=True, exist_ok=True)
    base, _ = demo_app
    pg = browser.new_page(viewport={"width": 1500, "height": 1300})
    pg.goto(f"{base}/timeline?session={BROWSER_DEMO}&step=9")
    settled(pg)
    pg.get_by_text("What the agent saw on screen").wait_for()
    pg.get_by_text("Red: where the agent acted").wait_for()
    images = pg.locator("[data-testid=stImage] img")
    images.first.wait_for()
    pg.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=stImage] img')].every(i => i.complete)", polling=POLL_MS
    )
    settled(pg)  # the layout measured once the run has ended (measured mid-run under load, the two overlapped)
    widths = images.evaluate_all("els => els.map(e => e.naturalWidth)")
    assert len(widths) >= 2 and min(widths) > 0  # every screenshot and thumbnail really arrived
    # sent with the page: none is a media file that an overlapping rerun could delete before it is fetched
    assert images.evaluate_all("els => els.every(e => e.src.startsWith('data:image/'))")
    # the filmstrip is one row under the large screenshot, not a tall column of mostly white space
    strip = pg.locator(".st-key-filmstrip").bounding_box()
    shot = images.first.bounding_box()
    assert strip["y"] >= shot["y"] + shot["height"] - 1 and strip["height"] <= 260, (strip, shot)
    player = pg.locator(".st-key-player").bounding_box()
    assert player["height"] <= 1100, player
    pg.screenshot(path=str(OUT / "player.png"), full_page=True)
    pg.locator(".st-key-film_4 button").click()
    pg.wait_for_url("**step=4**")
    pg.get_by_text("Play", exact=True).first.click()
    pg.wait_for_url("**step=6**", timeout=15_000)  # two steps later, by itself

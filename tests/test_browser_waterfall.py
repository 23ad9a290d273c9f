"""The timeline's span waterfall in headless Chromium: nested rows with bars, the slowest step marked, a click on
a row moving the cursor (the address and the step shown follow), and a 10,000-step run drawn as a screenful of
rows that scrolls to its far end; a step's markup shown as text; the rows longest first and back.

On SQLite, in the app shared with the other reading modules (served_demo.py): what these tests check is what the
browser does with the rows; the rows the page sends from PostgreSQL are test_page_waterfall.py's on `demo_each_store`.

Screenshot: test-output/browser/timeline-waterfall.png (gitignored).
"""

from __future__ import annotations

import pytest
from apptest_helpers import BIG
from playwright.sync_api import expect
from served_demo import HOSTILE, MARKUP, demo_app_to_read  # noqa: F401  (a fixture)
from test_browser import OUT, settled

from replay_core.storage.store import Store
from replay_core.understand.timeline import open_timeline
from replay_core.understand.waterfall import layout

pytestmark = pytest.mark.browser

MULTI_AGENT = "demo-04-multi-agent-competitor-brief"


@pytest.fixture
def served(demo_app_to_read) -> tuple[str, str]:
    return demo_app_to_read.base, demo_app_to_read.url


@pytest.fixture
def app(served) -> str:
    return served[0]


def waterfall_at(browser, app, session: str, step: int, heading: str):
    """A desktop page on the timeline of `session` at `step`, its left column showing the waterfall."""
    pg = browser.new_page(viewport={"width": 1440, "height": 1200})
    pg.goto(f"{app}/timeline?session={session}&step={step}")
    pg.get_by_text(heading).wait_for(timeout=60_000)
    settled(pg)
    pg.locator(".st-key-left_view").get_by_text("Waterfall", exact=True).click()
    pg.locator(".waterfall button.wrow").first.wait_for(timeout=30_000)
    settled(pg)
    return pg


def test_a_click_on_a_row_moves_the_cursor_and_the_slowest_step_stands_out(browser, app):
    OUT.mkdir(parents=True, exist_ok=True)
    pg = waterfall_at(browser, app, MULTI_AGENT, 9, "Tool call · step 9")
    rows = pg.locator(".waterfall button.wrow")
    expect(pg.locator(".waterfall button.wrow[aria-current=step]")).to_have_attribute("data-seq", "9")
    assert rows.count() == 26  # a short run: every row in view
    # nested: the researcher's steps indented under it, under the orchestrator
    indent = {seq: rows.locator(f"xpath=self::*[@data-seq='{seq}']").locator(".name").evaluate("e => e.style.paddingLeft")
              for seq in ("2", "4", "9")}  # fmt: skip
    assert indent == {"2": "0px", "4": "12px", "9": "24px"}
    slow = pg.locator(".waterfall button.wrow[data-seq='20']")
    assert "hot" in slow.locator(".bar").get_attribute("class")
    expect(slow.locator(".rank")).to_have_text("#1")
    expect(pg.locator(".waterfall button.chip").first).to_have_text("3.6 s · step 20")
    assert "holds" in pg.locator(".waterfall button.wrow[data-seq='2'] .bar").get_attribute("class")
    bar = slow.locator(".bar").bounding_box()
    lane = slow.locator(".lane").bounding_box()
    assert 0.1 < bar["width"] / lane["width"] < 0.2  # 3.6 s of a 22.7 s run
    pg.locator(".st-key-left_view").evaluate("e => e.scrollIntoView()")
    pg.screenshot(path=str(OUT / "timeline-waterfall.png"), full_page=True)

    slow.click()
    pg.wait_for_url("**step=20**", timeout=30_000)
    expect(pg.locator(".st-key-step_detail h3").first).to_have_text("🔧 Tool call · step 20")
    settled(pg)
    expect(pg.locator(".waterfall button.wrow[aria-current=step]")).to_have_attribute("data-seq", "20")
    pg.locator(".waterfall button.chip").nth(1).click()  # the second slowest, from the "slowest first" line
    pg.wait_for_url("**step=**", timeout=30_000)
    expect(pg.locator(".st-key-step_detail h3").first).not_to_have_text("🔧 Tool call · step 20", timeout=30_000)


def test_a_long_run_draws_a_screenful_and_scrolls_to_its_end(browser, app):
    pg = waterfall_at(browser, app, BIG, 5000, "· step 5000")
    rows = pg.locator(".waterfall button.wrow")
    expect(pg.locator(".waterfall button.wrow[aria-current=step]")).to_have_attribute("data-seq", "5000")
    assert rows.count() < 60  # a screenful and a margin, not 10,000 elements
    pg.locator(".waterfall .viewport").evaluate("v => { v.scrollTop = v.scrollHeight; }")
    pg.locator(".waterfall button.wrow[data-seq='10000']").wait_for(timeout=30_000)  # the page sent the rows there
    settled(pg)
    assert rows.count() < 60
    pg.locator(".waterfall button.wrow[data-seq='9990']").click()
    pg.wait_for_url("**step=9990**", timeout=30_000)
    expect(pg.locator(".st-key-step_detail h3").first).to_contain_text("step 9990")


def test_a_step_s_text_is_shown_as_text(browser, app):
    dialogs = []
    pg = waterfall_at(browser, app, HOSTILE, 1, "· step 1")
    pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    expect(pg.locator(".waterfall button.wrow .name")).to_have_text(f"💭 {MARKUP}")
    assert pg.locator(".waterfall img").count() == 0 and dialogs == []


def test_longest_first_lists_the_rows_by_duration_and_a_click_still_moves_the_cursor(browser, served):
    base, url = served
    store = Store(url)
    w = layout(open_timeline(store, MULTI_AGENT).columns)
    store.close()
    seqs = [w.row(r).seq for r in range(len(w))]
    longest = sorted(range(len(w)), key=lambda r: (w.duration_ms[r] is None, -(w.duration_ms[r] or 0), r))
    pg = waterfall_at(browser, base, MULTI_AGENT, 9, "Tool call · step 9")
    rows = pg.locator(".waterfall button.wrow")
    expect(pg.locator(".waterfall button.sort[aria-pressed=true]")).to_have_text("Tree order")
    assert rows.evaluate_all("els => els.map(e => Number(e.dataset.seq))") == seqs
    pg.locator(".waterfall button.sort", has_text="Longest first").click()
    expect(pg.locator(".waterfall button.sort[aria-pressed=true]")).to_have_text("Longest first")
    expect(rows.first).to_have_attribute("data-seq", str(seqs[longest[0]]))
    settled(pg)
    assert rows.evaluate_all("els => els.map(e => Number(e.dataset.seq))") == [seqs[r] for r in longest]
    assert set(rows.locator(".name").evaluate_all("els => els.map(e => e.style.paddingLeft)")) == {"0px"}  # flat
    expect(pg.locator(".waterfall button.wrow[aria-current=step]")).to_have_attribute("data-seq", "9")
    pg.screenshot(path=str(OUT / "timeline-waterfall-longest.png"), full_page=True)
    # a click on a row still moves the cursor, and the order stays
    third = seqs[longest[2]]
    rows.nth(2).click()
    pg.wait_for_url(f"**step={third}**", timeout=30_000)
    expect(pg.locator(".waterfall button.wrow[aria-current=step]")).to_have_attribute("data-seq", str(third))
    settled(pg)
    expect(pg.locator(".waterfall button.sort[aria-pressed=true]")).to_have_text("Longest first")
    assert rows.evaluate_all("els => els.map(e => Number(e.dataset.seq))") == [seqs[r] for r in longest]
    pg.locator(".waterfall button.sort", has_text="Tree order").click()
    expect(rows.first).to_have_attribute("data-seq", str(seqs[0]))
    settled(pg)
    assert rows.evaluate_all("els => els.map(e => Number(e.dataset.seq))") == seqs

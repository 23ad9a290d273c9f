"""The timeline in headless Chromium: the strip's slider and ticks move the cursor, and the phone layout (390 × 844).

On SQLite, in the app shared with the other reading modules (served_demo.py): what these tests check is what the
browser does with the page; the page's reads on PostgreSQL are test_page_timeline.py's on `demo_each_store`.

Screenshots go to test-output/browser/ (gitignored): timeline-strip.png, timeline-phone.png,
timeline-phone-detail.png.
"""

from __future__ import annotations

import pytest
from apptest_helpers import FAILED_CODING
from playwright.sync_api import expect
from served_demo import GAPPED, ONE, demo_app_to_read  # noqa: F401  (a fixture)
from test_browser import OUT, settled

pytestmark = pytest.mark.browser


@pytest.fixture
def app(demo_app_to_read) -> str:
    return demo_app_to_read.base


@pytest.fixture(scope="module")
def tab(browser_context):
    """One desktop tab for the module's tests, each opening its run by address (a new session each time): a load in
    an open tab costs Chromium about 0.3 CPU-s less than a new page, even one of the shared context."""
    pg = browser_context.new_page()
    pg.set_viewport_size({"width": 1500, "height": 1400})
    yield pg
    pg.close()


def opened(tab, app, session: str, step: int, heading: str):
    """The tab on the timeline of `session` at `step`, once `heading` shows and the run is over."""
    tab.goto(f"{app}/timeline?session={session}&step={step}")
    tab.get_by_text(heading).wait_for(timeout=60_000)
    settled(tab)
    return tab


def tick(pg, what: str, seq: int):
    mark = pg.locator(f'.st-key-strip [aria-label$="what: {what}; step: {seq}"]').first
    mark.wait_for(timeout=30_000)
    return mark


def test_clicking_a_tick_on_the_strip_goes_to_its_step(tab, app):
    OUT.mkdir(parents=True, exist_ok=True)
    pg = opened(tab, app, FAILED_CODING, 3, "Tool call · step 3")
    tick(pg, "cause", 9).dispatch_event("click")  # the causal chain's "acted on it" step
    pg.wait_for_url("**step=9**", timeout=30_000)
    pg.get_by_text("Tool call · step 9").wait_for()
    settled(pg)
    pg.locator(".st-key-run_search input").fill("run_tests")
    pg.locator(".st-key-run_search input").press("Enter")
    tick(pg, "search hit", 22).dispatch_event("click")
    pg.wait_for_url("**step=22**", timeout=30_000)
    pg.get_by_text("Tool call · step 22").wait_for()
    settled(pg)
    assert pg.locator('.st-key-strip [aria-label$="what: you are here; step: 22"]').count() == 1
    assert pg.locator(".st-key-strip .axis span").all_inner_texts() == ["5", "10", "15", "20", "25"]
    pg.screenshot(path=str(OUT / "timeline-strip.png"))
    mark = tick(pg, "error", 18).bounding_box()  # a click a few pixels beside a tick, in its lane, is on it
    pg.mouse.click(mark["x"] + mark["width"] + 4, mark["y"] + mark["height"] / 2)
    pg.wait_for_url("**step=18**", timeout=30_000)
    pg.get_by_text("Tool result · step 18").wait_for()
    assert pg.locator('.st-key-strip [aria-label$="what: you are here; step: 18"]').count() == 1


def test_the_slider_follows_the_keyboard_and_the_mouse(tab, app):
    pg = opened(tab, app, FAILED_CODING, 3, "Tool call · step 3")
    slider = pg.locator(".st-key-strip input[type=range]")
    expect(pg.locator(".st-key-strip .where")).to_have_text("Step 3 (of steps 1–25)")  # once its script has run
    slider.focus()
    pg.keyboard.press("ArrowRight")
    pg.wait_for_url("**step=4**", timeout=30_000)
    pg.locator(".st-key-step_detail h3", has_text="· step 4").wait_for()
    settled(pg)
    expect(slider).to_have_value("4")
    # a drag: the cursor and the line above follow the hand; the step opens when it lets go
    box, first_tick = slider.bounding_box(), pg.locator(".st-key-strip svg").bounding_box()
    y = box["y"] + box["height"] / 2
    pg.mouse.move(first_tick["x"] + first_tick["width"] * 3 / 24, y)
    pg.mouse.down()
    pg.mouse.move(first_tick["x"] + first_tick["width"] * 17 / 24, y, steps=8)  # step 18 lies 17/24 along the axis
    assert pg.locator(".st-key-strip .where").inner_text() == "Step 18 (of steps 1–25)"
    assert pg.locator('.st-key-strip [aria-label$="what: you are here; step: 18"]').count() == 1
    pg.mouse.up()
    pg.wait_for_url("**step=18**", timeout=30_000)
    pg.get_by_text("Tool result · step 18").wait_for()
    settled(pg)
    pg.locator(".st-key-strip button[data-jump=next_error]").click()  # a jump moves the slider too
    pg.wait_for_url("**step=23**", timeout=30_000)
    settled(pg)
    expect(slider).to_have_value("23")


def test_a_key_on_the_slider_moves_the_slider_only(tab, app):
    """→ on the focused slider is the slider's (one seq on), not the Next button's shortcut (the next step)."""
    pg = opened(tab, app, GAPPED, 3, "Thought · step 3")
    slider = pg.locator(".st-key-strip input[type=range]")
    expect(pg.locator(".st-key-strip .where")).to_have_text("Step 3 (of steps 1–11)")
    slider.focus()
    pg.keyboard.press("ArrowRight")
    pg.wait_for_url("**step=4**", timeout=30_000)
    pg.get_by_text("Step 4 was never received; showing step 10, the next one that was.").wait_for()
    settled(pg)
    assert "step=4" in pg.url
    slider.blur()  # focus elsewhere: → is the Next button's again
    pg.keyboard.press("ArrowRight")
    pg.wait_for_url("**step=11**", timeout=30_000)


def test_the_go_to_box_and_the_jump_keys(tab, app):
    """A step number entered goes there (a missing one to the next received); → and E jump, but not while a
    field has the focus; a run of one step has the buttons alone, with nowhere to go."""
    pg = opened(tab, app, GAPPED, 1, "Thought · step 1")
    box = pg.locator(".st-key-strip .goto input")
    box.fill("5")
    box.press("Enter")
    pg.wait_for_url("**step=5**", timeout=30_000)
    pg.get_by_text("Step 5 was never received; showing step 10, the next one that was.").wait_for()
    settled(pg)
    assert pg.locator(".st-key-strip .goto input").input_value() == ""  # no old number beside the new cursor
    expect(pg.locator(".st-key-step_detail h3").first).to_have_text("💭 Thought · step 10")
    search = pg.locator(".st-key-run_search input")
    search.fill("thought")
    search.press("ArrowRight")  # the field's, not Next's: the cursor stays
    search.press("Enter")
    pg.locator(".st-key-strip [aria-label$='what: search hit; step: 11']").first.wait_for(timeout=30_000)
    settled(pg)
    assert "step=5" in pg.url
    pg.locator("h1").first.click()  # the focus out of the field: → is Next's again
    pg.keyboard.press("ArrowRight")
    pg.wait_for_url("**step=11**", timeout=30_000)
    expect(pg.locator(".st-key-step_detail h3").first).to_have_text("💭 Thought · step 11")
    assert pg.locator(".st-key-strip button[data-jump=next]").is_disabled()
    opened(tab, app, FAILED_CODING, 3, "Tool call · step 3")
    assert pg.locator(".st-key-strip button[data-jump=next_error]").get_attribute("title") == "Step 18 (key: e)"
    pg.keyboard.press("e")
    pg.wait_for_url("**step=18**", timeout=30_000)
    pg.get_by_text("Tool result · step 18").wait_for()
    opened(tab, app, ONE, 1, "Thought · step 1")
    assert pg.locator(".st-key-strip button.jump").count() == 8
    assert all(b.is_disabled() for b in pg.locator(".st-key-strip button.jump").all())
    assert not pg.locator(".st-key-strip input[type=range]").is_visible()


def test_the_back_button_goes_back_a_step_and_the_page_follows(tab, app):
    """Each move is an entry of the browser's history: Back shows the step its address names, never another."""
    pg = opened(tab, app, FAILED_CODING, 3, "Tool call · step 3")
    for step in (4, 5):
        pg.locator(".st-key-strip button[data-jump=next]").click()
        pg.wait_for_url(f"**step={step}**", timeout=30_000)
        settled(pg)
    pg.go_back()
    pg.wait_for_url("**step=4**", timeout=30_000)
    expect(pg.locator(".st-key-step_detail h3").first).to_have_text("📦 Tool result · step 4")
    expect(pg.locator(".st-key-strip input[type=range]")).to_have_value("4")


def test_clicking_a_step_in_the_list_goes_to_it(tab, app):
    pg = opened(tab, app, FAILED_CODING, 3, "Tool call · step 3")
    rows = pg.locator("button.step")  # drawn in the component's shadow root (ui/components.py)
    assert rows.locator("nth=0").inner_text().startswith("1 ") and rows.count() == 3 + 9
    assert pg.locator("button.step[aria-current=step]").inner_text().startswith("▶ 3 🔧 Tool call · search_code")
    pg.locator("button.step[data-seq='9']").click()
    pg.wait_for_url("**step=9**", timeout=30_000)
    pg.get_by_text("Tool call · step 9").wait_for()
    settled(pg)
    assert pg.locator("button.step[aria-current=step]").inner_text().startswith("▶ 9 ")
    assert "Cycle 3 of 8 · steps 8–10" in pg.locator(".rows .cycle").all_inner_texts()
    pg.locator("button.step[data-seq='9']").click()  # the step already shown: nothing to do
    assert pg.locator("button.step[aria-current=step]").inner_text().startswith("▶ 9 ")
    pg.keyboard.press("Shift+Tab")  # the rows are buttons: reachable and pressed from the keyboard
    pg.locator("button.step[data-seq='8']").focus()
    pg.keyboard.press("Enter")
    pg.wait_for_url("**step=8**", timeout=30_000)
    pg.get_by_text("· step 8").first.wait_for()


def test_on_a_phone_the_step_comes_right_under_the_scrubber_and_metrics_sit_two_a_row(browser, app):
    OUT.mkdir(parents=True, exist_ok=True)
    pg = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    pg.goto(f"{app}/timeline?session={FAILED_CODING}&step=18")
    pg.get_by_text("Tool result · step 18").wait_for(timeout=60_000)
    settled(pg)
    metrics = [m.bounding_box() for m in pg.locator(".st-key-run_metrics .metric").all()]
    assert len(metrics) == 6
    assert len({round(m["x"]) for m in metrics}) == 2 and len({round(m["y"]) for m in metrics}) == 3  # two columns, three rows
    assert all(m["x"] + m["width"] <= 390 for m in metrics)
    pg.screenshot(path=str(OUT / "timeline-phone.png"))
    slider = pg.locator(".st-key-strip input[type=range]").bounding_box()
    detail = pg.locator(".st-key-step_detail h3").first.bounding_box()
    first_row = pg.locator("button.step[data-seq='12']").bounding_box()  # the list of steps around the cursor
    assert slider["y"] < detail["y"] < first_row["y"]  # the step before the list of steps
    assert detail["y"] - (slider["y"] + slider["height"]) < 844  # within one phone screen of the slider
    pg.locator(".st-key-step_detail h3").first.scroll_into_view_if_needed()
    pg.screenshot(path=str(OUT / "timeline-phone-detail.png"))


def test_a_long_context_is_folded_with_show_all(tab, app):
    """What the agent saw, at the end of the failed coding run: long messages show their start and "Show all", saying
    how much it hides; the page stays short enough to read (4,627 px tall with every message whole)."""
    pg = opened(tab, app, FAILED_CODING, 25, "Error · step 25")
    more = pg.locator(".st-key-transcript button.show-all")
    more.first.wait_for(timeout=30_000)
    height = pg.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    assert height < 4_000, height
    label = more.first.inner_text()
    assert label.startswith("Show all (") and ("more line" in label or "more characters" in label), label
    part = pg.locator(".st-key-transcript .folded").first
    folded_px, before = part.bounding_box()["height"], part.inner_text()
    assert before.endswith("…")
    more.first.click()
    expect(more.first).to_have_text("Show less")
    assert pg.locator(".st-key-transcript .folded").count() == more.count() - 1  # that one opened whole
    assert folded_px < 200
    assert len(more.first.locator("xpath=preceding-sibling::*[1]").inner_text()) > len(before)

"""Filters that let go, in Chromium: every filter cleared (Any, an emptied box, a chip, Clear all) stays
cleared; an analytics drill-down shows as a chip that removes it; the runs list at phone width.

Screenshots go to test-output/browser/ (gitignored).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, time
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect
from test_browser import OUT, POLL_MS, settled

from replay_core.storage.store import SessionFilter, Store

pytestmark = pytest.mark.browser

SELECTS = {
    "status": "failed",
    "review": "unreviewed",
    "tag": "coding",
    "has": "retry",
    "model": None,
    "agent_id": None,
    "workflow": None,
    "environment": None,
    "agent_version": None,
    "source": None,
}  # None: the first stored value
TEXTS = {"q": "format_price", "failed_tool": "run_tests", "error_class": "TestFailure"}


@pytest.fixture(scope="module")
def app(demo_app):
    base, url = demo_app
    store = Store(url)
    yield base, store
    store.close()


def listed(pg) -> int:
    pg.wait_for_selector("text=/\\d+ runs?:/", timeout=30_000)
    summary = next(t for t in pg.locator('[data-testid="stMarkdownContainer"]').all_inner_texts() if re.match(r"\d+ runs?:", t))
    return int(summary.split(" ")[0])


def params(pg) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(pg.url).query).items()}


def open_runs(pg, base: str, query: str) -> None:
    pg.goto(f"{base}/runs?{query}")
    settled(pg)
    listed(pg)


def wait_listed(pg, n: int) -> None:
    """Until the summary counts n runs (the run after a click may still be drawing the old one)."""
    pg.wait_for_function(
        "n => Array.from(document.querySelectorAll('[data-testid=stMarkdownContainer]'))"
        ".some(e => e.innerText.startsWith(n + (n === 1 ? ' run:' : ' runs:')))",
        arg=n,
        timeout=15_000,
        polling=POLL_MS,
    )


def wait_cleared(pg, key: str) -> None:
    pg.wait_for_function(f"() => !new URLSearchParams(location.search).has({key!r})", timeout=15_000, polling=POLL_MS)
    settled(pg)


def test_every_filter_clears_and_stays_cleared(browser, app):
    base, store = app
    pg = browser.new_page(viewport={"width": 1400, "height": 1600})
    total = store.count_sessions()
    for key, value in SELECTS.items():
        value = value or (store.distinct_values(key) or [None])[0]
        if value is None:
            continue
        open_runs(pg, base, f"{key}={value}")
        box = pg.locator(f".st-key-filters select[name={key}]")  # the bar's form (ui/assets/filters.js)
        expect(box).to_have_value(value, timeout=15_000)
        expect(box).to_be_visible()  # in "More filters" too: a filter set there opens it
        box.select_option("")  # Any
        wait_cleared(pg, key)
        wait_listed(pg, total)
        pg.wait_for_timeout(300)
        assert key not in params(pg) and box.input_value() == "", key  # nothing put it back
    for key, value in TEXTS.items():
        open_runs(pg, base, f"{key}={value}")
        field = pg.locator(f".st-key-filters input[name={key}]")
        expect(field).to_have_value(value, timeout=15_000)
        field.fill("")
        field.press("Enter")
        wait_cleared(pg, key)
        wait_listed(pg, total)
        assert field.input_value() == "", key
        pg.locator("h1").first.click()  # another rerun, the focus elsewhere: the old value must not come back
        pg.locator(".st-key-filters input[name=replays]").check()
        pg.wait_for_function("() => new URLSearchParams(location.search).get('replays') === '1'", timeout=15_000, polling=POLL_MS)
        settled(pg)
        assert key not in params(pg) and field.input_value() == "", key
        pg.locator(".st-key-filters input[name=replays]").uncheck()
        wait_cleared(pg, "replays")
    # a date typed in sets its filter
    open_runs(pg, base, "")
    assert pg.locator(".st-key-filters details.more").get_attribute("open") is None  # nothing there set: closed
    pg.locator(".st-key-filters input[name=until]").fill("2000-01-01")
    pg.wait_for_function(
        "() => new URLSearchParams(location.search).get('until') === '2000-01-01'", timeout=15_000, polling=POLL_MS
    )
    settled(pg)
    pg.get_by_text("No run matches these filters.").wait_for(timeout=15_000)
    # dates go by their chips; everything at once by Clear all
    open_runs(pg, base, "since=2000-01-01&until=2100-01-01&status=failed&q=format")
    pg.locator(".st-key-chip_since button").click()
    wait_cleared(pg, "since")
    assert set(params(pg)) == {"until", "status", "q"}
    pg.screenshot(path=str(OUT / "filters-chips.png"), full_page=True)
    pg.locator(".st-key-filters button.clear").click()
    wait_cleared(pg, "status")
    wait_listed(pg, total)
    assert not set(params(pg)) & {"until", "status", "q"}
    assert not pg.locator("[class*=st-key-chip_]").count()
    # and the sidebar's Runs link, from another page, opens the list unfiltered
    open_runs(pg, base, "status=failed")
    pg.locator("[data-testid=stSidebarNav] a", has_text="Start").click()
    pg.get_by_text("Needs attention now").wait_for(timeout=30_000)
    pg.locator("[data-testid=stSidebarNav] a", has_text="Runs").click()
    pg.wait_for_selector("h1:has-text('Runs')", timeout=30_000)
    settled(pg)
    wait_listed(pg, total)
    assert "status" not in params(pg)


def test_a_drill_down_shows_as_a_chip_that_removes_it(browser, app):
    base, store = app
    pg = browser.new_page(viewport={"width": 1600, "height": 3000})
    pg.goto(f"{base}/analytics?charts=Tools+and+errors")
    mark = pg.locator('[aria-label*="tool_name: run_tests"]').first
    mark.wait_for(timeout=60_000)
    mark.dispatch_event("click")
    pg.wait_for_selector("h1:has-text('Runs')", timeout=30_000)
    settled(pg)
    assert params(pg)["failed_tool"] == "run_tests"
    chip = pg.locator(".st-key-chip_failed_tool button")
    assert chip.is_visible() and "Failed tool: run_tests" in chip.inner_text()  # in view, not in a collapsed expander
    wait_listed(pg, 1)
    pg.screenshot(path=str(OUT / "drill-down-chip.png"), full_page=True)
    chip.click()
    wait_cleared(pg, "failed_tool")
    since = datetime.combine(datetime.fromisoformat(params(pg)["since"]), time(), UTC)  # the dashboard's period stays, as a chip
    expected = store.count_sessions(SessionFilter(since=since))
    assert expected > 1
    wait_listed(pg, expected)
    assert pg.locator(".st-key-chip_since button").is_visible()


def test_the_runs_list_at_phone_width_keeps_status_name_outcome_and_start(browser, app):
    base, _ = app
    pg = browser.new_page(viewport={"width": 390, "height": 844})
    open_runs(pg, base, "status=failed")
    headers = pg.locator(".st-key-runs_narrow [data-testid=stDataFrame] [role=columnheader]")
    expect(headers).to_have_text(["Status", "Run", "Outcome", "Started"], timeout=30_000)  # drawn, all within the width
    hidden = "s => { const e = document.querySelector(s); return e !== null && getComputedStyle(e).display === 'none'; }"
    pg.wait_for_function(hidden, arg=".st-key-runs_wide", timeout=15_000, polling=POLL_MS)
    box = pg.locator(".st-key-runs_narrow [data-testid=stDataFrame]").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    width = pg.evaluate("() => document.documentElement.scrollWidth")
    assert width <= 390  # nothing sideways
    pg.screenshot(path=str(OUT / "runs-390.png"), full_page=True)
    wide = browser.new_page(viewport={"width": 1400, "height": 1000})
    open_runs(wide, base, "status=failed")
    wide.wait_for_function(hidden, arg=".st-key-runs_narrow", timeout=15_000, polling=POLL_MS)
    wide.wait_for_selector(".st-key-runs_wide [data-testid=stDataFrame] [role=columnheader]", state="attached", timeout=30_000)
    assert "Cost" in wide.locator(".st-key-runs_wide [data-testid=stDataFrame] [role=columnheader]").all_inner_texts()

"""The browser context that tests' pages share (tests/conftest.py): what a test leaves in it (a cookie, local storage,
an IndexedDB database, a page stuck on a dialog, a popup) is gone for the next test, and a page that asks for more
than a viewport gets a context of its own.

No app is served: the pages' requests are answered by the test (`page.route`), on an origin nothing listens on.
"""

from __future__ import annotations

import pytest
from conftest import _Chromium

pytestmark = pytest.mark.browser
ORIGIN = "http://127.0.0.1:9"

LEAVE = """async () => {
  document.cookie = "left=1; max-age=3600";
  localStorage.setItem("left", "1");
  await new Promise((done) => {
    const asked = indexedDB.open("left");
    asked.onsuccess = () => { asked.result.close(); done(); };
  });
}"""
FOUND = """async () => [document.cookie, localStorage.getItem("left"), (await indexedDB.databases()).map((db) => db.name)]"""


def answered(page, path: str):
    page.route("**/*", lambda route: route.fulfill(body="<html><body>a page</body></html>", content_type="text/html"))
    page.goto(ORIGIN + path)
    return page


def test_what_a_test_leaves_in_the_shared_context_is_gone_for_the_next(browser, browser_context):
    kept = set(browser_context.pages)
    pg = answered(browser.new_page(viewport={"width": 800, "height": 600}), "/first")
    assert pg.context is browser_context and pg.viewport_size == {"width": 800, "height": 600}
    pg.evaluate(LEAVE)
    assert pg.evaluate(FOUND) == ["left=1", "1", ["left"]]
    with pg.expect_popup() as popup:
        pg.evaluate("() => window.open('about:blank')")
    pg.on("dialog", lambda dialog: None)  # never answered: the page stays on it
    with pg.expect_event("dialog"):
        pg.evaluate("() => setTimeout(() => alert('left open'))")
    _Chromium.reset(kept)  # what the `browser` fixture does after each test
    assert pg.is_closed() and popup.value.is_closed()
    assert set(browser_context.pages) == kept
    fresh = answered(browser.new_page(), "/next")
    assert fresh.evaluate(FOUND) == ["", None, []]


def test_a_page_asking_for_more_than_a_viewport_has_a_context_of_its_own(browser, browser_context):
    phone = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    assert phone.context is not browser_context
    assert answered(phone, "/phone").evaluate("() => navigator.maxTouchPoints > 0")

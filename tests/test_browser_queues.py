"""Review queues in headless Chromium, on the served app with the demo runs: a queue worked through by keyboard
(share links: test_browser_share.py).

On SQLite: what it checks is what the browser does with the keys; the page's claims and saves on PostgreSQL are
test_page_queues.py's on `demo_each_store`, and concurrent claims test_queues.py's on both databases.

Screenshots go to test-output/browser/ (gitignored; the path is printed).
"""

from __future__ import annotations

import pytest
from apptest_helpers import database, served_app
from test_browser import OUT, POLL_MS, settled

from replay_core.storage.actor import Actor
from replay_core.storage.store import SessionFilter, Store
from replay_core.team import queues

pytestmark = pytest.mark.browser
EDITOR = Actor("Eve", "editor", "test")


@pytest.fixture(scope="module")
def app(demo_db, tmp_path_factory):
    with database("sqlite", tmp_path_factory.mktemp("queues"), demo_db) as url, served_app(url) as base:
        store = Store(url)
        yield base, store
        store.close()


def test_a_queue_worked_through_by_keyboard(browser, app):
    OUT.mkdir(parents=True, exist_ok=True)
    base, store = app
    made = queues.create(
        store,
        "failed runs",
        flt=SessionFilter(status="failed"),
        rubric={"verdicts": ["Good", "Bad", "Needs attention"]},
        actor=EDITOR,
    )
    pg = browser.new_page(viewport={"width": 1500, "height": 1300})
    pg.goto(f"{base}/queues?queue={made['id']}")
    settled(pg)
    pg.get_by_text("Type your name above to start").wait_for()
    name = pg.get_by_label("Your name")
    name.fill("Sam")
    name.press("Enter")
    pg.get_by_text(f"Run 1 of {made['items']}").wait_for()
    settled(pg)
    pg.get_by_text("Reviewing as Sam").wait_for()  # the name box is gone: no click needed to leave it
    settled(pg)
    pg.keyboard.press("2")  # the second verdict: the key is a verdict's, not typed into the name ("Sam2")
    pg.wait_for_function("() => [...document.querySelectorAll('input[type=radio]')].some(r => r.checked)", polling=POLL_MS)
    settled(pg)
    checked = pg.locator("[data-testid=stRadio] label:has(input:checked)").first.inner_text()
    assert "Bad" in checked
    pg.screenshot(path=str(OUT / "queue-verdict.png"), full_page=True)
    pg.keyboard.press("n")  # save and next
    pg.get_by_text(f"Run 2 of {made['items']}").wait_for()
    settled(pg)
    res = queues.results(store, made["id"])
    assert [(r["reviewer"], r["verdict"]) for r in res["items"][0]["reviews"]] == [("Sam", "Bad")]
    # the next run starts blank
    pg.wait_for_function("() => !document.querySelector('input[type=radio]:checked')", timeout=15_000, polling=POLL_MS)
    pg.get_by_text("Reviewing as Sam").wait_for()  # the name stays, shown, not in an open box
    pg.keyboard.press("s")  # skip
    pg.get_by_text(f"Run 3 of {made['items']}").wait_for()
    settled(pg)
    assert [p["skipped"] for p in queues.results(store, made["id"])["reviewers"]] == [1]
    pg.screenshot(path=str(OUT / "queue-next.png"), full_page=True)
    print(f"screenshots: {OUT}")

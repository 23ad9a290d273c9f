"""Review queues and share links in headless Chromium, on the served app with the demo runs:
a queue worked through by keyboard, and a share link opened without signing in, then revoked.

Screenshots go to test-output/browser/ (gitignored; the path is printed).
"""

from __future__ import annotations

import shutil

import pytest
from apptest_helpers import FAILED_CODING, served_app
from test_browser import OUT, settled

from replay_core.storage.actor import Actor
from replay_core.storage.store import SessionFilter, Store
from replay_core.team import queues, shares

pytestmark = pytest.mark.browser
EDITOR = Actor("Eve", "editor", "test")


def _copy(demo_db, tmp_path) -> tuple[str, Store]:
    db = tmp_path / "demo.db"
    shutil.copy(demo_db, db)
    url = f"sqlite:///{db}"
    return url, Store(url)


def test_a_queue_worked_through_by_keyboard(browser, demo_db, tmp_path):
    OUT.mkdir(parents=True, exist_ok=True)
    url, store = _copy(demo_db, tmp_path)
    made = queues.create(
        store,
        "failed runs",
        flt=SessionFilter(status="failed"),
        rubric={"verdicts": ["Good", "Bad", "Needs attention"]},
        actor=EDITOR,
    )
    with served_app(url) as base:
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
        pg.wait_for_function("() => [...document.querySelectorAll('input[type=radio]')].some(r => r.checked)")
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
        pg.wait_for_function("() => !document.querySelector('input[type=radio]:checked')", timeout=15_000)
        pg.get_by_text("Reviewing as Sam").wait_for()  # the name stays, shown, not in an open box
        pg.keyboard.press("s")  # skip
        pg.get_by_text(f"Run 3 of {made['items']}").wait_for()
        settled(pg)
        assert [p["skipped"] for p in queues.results(store, made["id"])["reviewers"]] == [1]
        pg.screenshot(path=str(OUT / "queue-next.png"), full_page=True)
    store.close()
    print(f"screenshots: {OUT}")


def test_a_share_link_opens_without_sign_in_and_stops_when_revoked(browser, demo_db, tmp_path):
    OUT.mkdir(parents=True, exist_ok=True)
    url, store = _copy(demo_db, tmp_path)
    made = shares.make(store, shares.RUN, session=FAILED_CODING, actor=EDITOR)
    link = made["url"].split("/share", 1)[1]
    with served_app(url, AGENT_REPLAY_PASSWORD="look-only") as base:
        pg = browser.new_page(viewport={"width": 1400, "height": 1200})
        pg.goto(f"{base}/share{link}")
        pg.get_by_text("PAY-412: add currency to format_price").first.wait_for(timeout=30_000)
        pg.get_by_text("Shared read-only from Agent Replay").wait_for()
        settled(pg)
        body = pg.inner_text("body")
        assert "Shared read-only from Agent Replay" in body
        assert "This dashboard is private." not in body
        assert pg.locator("[data-testid=stSidebarNav]").count() == 0
        assert pg.locator("[data-testid=stSidebar]").count() == 0
        assert pg.locator("a[href*='/runs'], a[href*='/timeline'], a[href*='/review']").count() == 0
        pg.screenshot(path=str(OUT / "share-open.png"), full_page=True)
        # the door still holds everywhere else
        pg.goto(f"{base}/runs")
        pg.get_by_text("This dashboard is private.").wait_for()
        shares.revoke(store, made["id"], actor=EDITOR)
        pg.goto(f"{base}/share{link}")
        pg.get_by_text("This link was revoked on ").wait_for(timeout=30_000)
        settled(pg)
        body = pg.inner_text("body")
        assert "This link no longer opens" in body and "PAY-412" not in body
        pg.screenshot(path=str(OUT / "share-revoked.png"), full_page=True)
    opens = [e for e in store.audit_entries(actions=["share"]) if e["detail"]["op"] == "open"]
    assert [e["outcome"] for e in opens] == ["revoked", "ok"]
    store.close()
    print(f"screenshots: {OUT}")

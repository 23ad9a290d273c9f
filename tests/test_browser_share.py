"""The door and share links in Chromium, on an app behind a password, served from SQLite: a deep
link meets the door and survives signing in; a shared run's first screen at 1440×900 has the header, the reviewer's
verdict and note, the Why and a step with its content (the verdict was below every step, out of sight); a link opens
without signing in, nothing else does, and it stops once revoked.

Screenshots go to test-output/browser/ (gitignored).
"""

from __future__ import annotations

import pytest
from apptest_helpers import FAILED_CODING, database, served_app
from test_browser import OUT, settled

from replay_core.demo import BROWSER_DEMO
from replay_core.storage.actor import Actor
from replay_core.storage.store import Store
from replay_core.team import shares

pytestmark = pytest.mark.browser
EDITOR = Actor("Eve", "editor", "test")
SHOPPING = BROWSER_DEMO  # another demo run, for the link that is revoked


@pytest.fixture(scope="module")
def app(demo_db, tmp_path_factory):
    """On SQLite: what the browser does with the door and the links. What the share page reads from PostgreSQL
    is tests/test_page_share.py's, through AppTest on both databases."""
    with database("sqlite", tmp_path_factory.mktemp("share"), demo_db) as url:
        with served_app(url, AGENT_REPLAY_PASSWORD="look-only") as base:
            store = Store(url)
            yield base, store
            store.close()


def link_path(made: dict) -> str:
    return "/share" + made["url"].split("/share", 1)[1]


def test_the_door_holds_on_a_deep_link(browser, app):
    OUT.mkdir(parents=True, exist_ok=True)
    base, _ = app
    pg = browser.new_page(viewport={"width": 1200, "height": 900})
    pg.goto(f"{base}/timeline?session={FAILED_CODING}")
    pg.get_by_text("This dashboard is private.").wait_for()
    settled(pg)
    body = pg.inner_text("body")
    assert "This dashboard is private. Sign in to see the runs." in body
    assert "PAY-412" not in body
    pg.locator("input[type=password]").fill("look-only")
    pg.get_by_role("button", name="Sign in").click()
    pg.get_by_text("PAY-412: add currency to format_price").first.wait_for(timeout=30_000)
    assert "/timeline?session=" in pg.url  # the deep link survived the door
    settled(pg)
    pg.screenshot(path=str(OUT / "signed-in.png"), full_page=True)


def test_a_shared_runs_first_screen_has_the_verdict_the_why_and_a_step(browser, app):
    base, store = app
    store.annotate(FAILED_CODING, "bad", "Gave up with the tests failing", author="Dana")
    made = shares.make(store, shares.RUN, session=FAILED_CODING, actor=EDITOR)
    pg = browser.new_page(viewport={"width": 1440, "height": 900})
    pg.goto(base + link_path(made))
    pg.get_by_text("Gave up with the tests failing").wait_for(timeout=30_000)
    settled(pg)

    def on_first_screen(text: str) -> bool:
        box = pg.get_by_text(text).first.bounding_box()
        return box is not None and 0 <= box["y"] and box["y"] + box["height"] <= 900

    assert on_first_screen("Bad — Dana: Gave up with the tests failing")
    assert on_first_screen("Why:")
    assert on_first_screen("Input · step 1")  # the selected step's detail, with its content under it
    assert "Ticket PAY-412" in pg.inner_text("body")


def test_a_share_link_opens_without_sign_in_and_stops_when_revoked(browser, app):
    OUT.mkdir(parents=True, exist_ok=True)
    base, store = app
    name = store.get_session(SHOPPING)["name"]
    made = shares.make(store, shares.RUN, session=SHOPPING, actor=EDITOR)
    pg = browser.new_page(viewport={"width": 1400, "height": 1200})
    pg.goto(base + link_path(made))
    pg.get_by_text(name).first.wait_for(timeout=30_000)
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
    pg.goto(base + link_path(made))
    pg.get_by_text("This link was revoked on ").wait_for(timeout=30_000)
    settled(pg)
    body = pg.inner_text("body")
    assert "This link no longer opens" in body and name not in body
    pg.screenshot(path=str(OUT / "share-revoked.png"), full_page=True)
    opens = [e for e in store.audit_entries(actions=["share"]) if e["who"] == f"share link {made['id']}"]
    assert [e["outcome"] for e in opens] == ["revoked", "ok"]

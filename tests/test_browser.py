"""Browser smoke tests: Chromium's headless shell, driven by Playwright, on an app served fresh for each test (a deep
link on a new server, an agent posting). The door on a deep link: test_browser_share.py, on its app behind a password.

The deep link on SQLite: the pages' reads on PostgreSQL are test_page_timeline.py's on `demo_each_store` (the
timeline's and the runs list's). The agent posting on both databases (the `store` fixture's): a step posted over HTTP
to the served app shows on its open live page, across its processes, as each database makes a commit visible.

Screenshots go to test-output/browser/ (gitignored).
"""

from __future__ import annotations

import pytest
from apptest_helpers import FAILED_CODING, REPO, served_app

pytestmark = pytest.mark.browser

OUT = REPO / "test-output" / "browser"
# how often a wait_for_function asks again: by default on every animation frame, about 60 times a second in
# Chromium for as long as the wait lasts (a tenth of a CPU-second each second here); 10 times is as soon as a test needs
POLL_MS = 100


def settled(pg) -> None:
    """Wait until Streamlit has finished the run: no skeletons, no 'running' indicator."""
    pg.wait_for_selector("[data-testid=stAppViewContainer]", timeout=30_000)
    pg.wait_for_function(
        "() => !document.querySelector('[data-testid=stSkeleton]') && !document.querySelector('[data-testid=stStatusWidget]')",
        timeout=30_000,
        polling=POLL_MS,
    )


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
def test_runs_list_and_a_timeline_in_chromium(browser, demo):
    OUT.mkdir(parents=True, exist_ok=True)
    with served_app(demo.url) as base:
        pg = browser.new_page(viewport={"width": 1500, "height": 1400})
        # A deep link first, on a fresh server: it must go through the entry script's navigation.
        pg.goto(f"{base}/timeline?session={FAILED_CODING}&step=18")
        settled(pg)
        pg.get_by_text("PAY-412: add currency to format_price").first.wait_for()
        pg.get_by_text("Tool result · step 18").wait_for()
        settled(pg)
        body = pg.inner_text("body")
        assert "Failed after 8 cycles (25 steps); first error at step 18" in body
        detail = pg.locator(".st-key-step_detail .detail")  # drawn in its component's shadow root (ui/components.py)
        assert detail.locator("h3").inner_text() == "📦 Tool result · step 18"
        assert detail.locator(".failed").inner_text() == "❌ This step failed: TestFailure."
        fold = detail.locator("button.show-all").first  # a long result shows its start and says what is folded
        assert "more lines" in fold.inner_text()
        fold.click()
        assert (
            "TypeError: format_price() got an unexpected keyword argument 'rounding'" in detail.locator("pre").first.inner_text()
        )
        assert "Import" in pg.inner_text("[data-testid=stSidebarNav]")
        assert "streamlit app" not in pg.inner_text("[data-testid=stSidebarNav]")
        pg.screenshot(path=str(OUT / "timeline.png"), full_page=True)
        # The next-error button moves the cursor and the address bar.
        pg.locator(".st-key-strip button[data-jump=next_error]").click()
        pg.wait_for_url("**step=23**")
        pg.get_by_text("Tool result · step 23").wait_for()
        # The runs list.
        pg.goto(f"{base}/runs")
        settled(pg)
        pg.get_by_text("18 runs:").wait_for()  # the summary line ("18 runs: ⏳ 1 running …"), not the dataset form
        settled(pg)
        table = pg.locator(".st-key-runs_wide [data-testid=stDataFrame]")
        table.first.wait_for()  # it comes a moment after the summary line (0.4 s here): settled() can fall between
        assert table.count() == 1
        pg.screenshot(path=str(OUT / "runs.png"), full_page=True)


def test_an_agent_posting_over_http_appears_live(browser, store):
    import httpx

    token = "live-token"
    with served_app(store.url, AGENT_REPLAY_API_TOKENS=token) as base:
        pg = browser.new_page(viewport={"width": 1400, "height": 1000})
        pg.goto(f"{base}/live")
        pg.get_by_text("No run is sending steps right now.").wait_for(timeout=30_000)
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            http.post("/api/v1/sessions", json={"session_id": "live-1", "name": "Refund for order A-17"}).raise_for_status()
            http.post(
                "/api/v1/sessions/live-1/steps", json=[{"type": "think", "content": "Look the order up first."}]
            ).raise_for_status()
            # No reload: the page's fragment redraws itself.
            pg.get_by_text("Look the order up first.").wait_for(timeout=15_000)
            http.post(
                "/api/v1/sessions/live-1/steps",
                json={"type": "tool_call", "tool_name": "get_order", "tool_args": {"order_id": "A-17"}},
            ).raise_for_status()
            pg.get_by_text("Tool call · get_order").wait_for(timeout=15_000)
        assert "Refund for order A-17" in pg.inner_text("body")
        assert pg.url == f"{base}/live"
        pg.screenshot(path=str(OUT / "live.png"), full_page=True)

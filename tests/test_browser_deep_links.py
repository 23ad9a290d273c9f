"""Every page opened by its own address in Chromium: no failed request, no error in the console.

Streamlit's browser code used to look for the server under the page's address first
(`/runs/_stcore/health`, `/runs/_stcore/host-config`): two 404s on every deep link (ui/deep_links.py).
"""

from __future__ import annotations

import ast

import pytest
from apptest_helpers import FAILED_CODING, REPO
from test_browser import POLL_MS

pytestmark = pytest.mark.browser
IDLE = "() => !document.querySelector('[data-testid=stSkeleton], [data-testid=stStatusWidget]')"


def page_paths() -> list[str]:
    """The addresses of streamlit_app.PAGES, read from the file (importing it would build the server); the
    default page ("home") is at the root."""
    tree = ast.parse((REPO / "streamlit_app.py").read_text())
    pages = next(n.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "PAGES")
    return ["" if row[3] == "home" else row[3] for row in ast.literal_eval(pages)]


def test_each_page_opened_by_its_address_logs_no_error_and_no_404(browser, demo_app):
    base, _ = demo_app
    pg = browser.new_page(viewport={"width": 1440, "height": 900})
    errors: list[str] = []
    pg.on("console", lambda m: m.type == "error" and errors.append(f"console: {m.text} ({m.location.get('url')})"))
    pg.on("response", lambda r: r.status >= 400 and errors.append(f"{r.status} {r.url}"))
    paths = [*page_paths(), f"timeline?session={FAILED_CODING}&step=3", "share?token=no-such-token"]
    assert "" in paths and "runs" in paths and "analytics" in paths
    for path in paths:
        pg.goto(f"{base}/{path}")
        pg.wait_for_selector("[data-testid=stAppViewContainer] h1, [data-testid=stAppViewContainer] h2", timeout=60_000)
        pg.wait_for_function(IDLE, timeout=60_000, polling=POLL_MS)
        assert errors == [], path
        assert pg.evaluate("window.__streamlit.BACKEND_BASE_URL") == f"{base}/"


def test_only_a_browsers_page_is_changed_the_api_stays_compressed(demo_app):
    import httpx

    base, _ = demo_app
    page = httpx.get(f"{base}/runs", headers={"accept": "text/html", "accept-encoding": "gzip"})
    assert b"window.__streamlit = {BACKEND_BASE_URL:" in page.content
    assert int(page.headers["content-length"]) == len(page.content)
    api = httpx.get(f"{base}/api/v1/runs", headers={"accept-encoding": "gzip"})
    assert api.status_code == 200 and api.headers["content-encoding"] == "gzip"


def test_an_event_link_opens_its_step_and_the_address_bar_then_names_its_number(browser, demo_app):
    from urllib.parse import quote

    from replay_core.storage.store import Store

    base, url = demo_app
    store = Store(url, migrate=False)
    try:
        named = store.load_steps(FAILED_CODING)[17]
    finally:
        store.close()
    pg = browser.new_page(viewport={"width": 1440, "height": 900})
    pg.goto(f"{base}/timeline?session={FAILED_CODING}&event={quote(named.event_id)}")
    pg.get_by_text(f"Tool result · step {named.seq}").wait_for(timeout=60_000)
    pg.wait_for_url(f"**step={named.seq}**", timeout=30_000)
    assert "event=" not in pg.url

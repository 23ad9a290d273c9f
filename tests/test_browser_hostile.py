"""Stored strings are shown as text on every page: a run whose name, content, tool arguments,
notes and dimensions hold markdown images, raw HTML and `javascript:` links, opened in headless
Chromium, makes 0 requests to the address they point at and renders no link or image of theirs.

The address is a real listener on a high port of 127.0.0.1 that counts what it is asked.
Screenshots go to test-output/browser/.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import pytest
from apptest_helpers import REPO, served_app
from test_browser import settled

from replay_core.events import SessionEndEvent, SessionEvent, StepEvent
from replay_core.ingest.annotate import annotate
from replay_core.ingest.pipeline import ingest
from replay_core.storage.store import Store

pytestmark = pytest.mark.browser
OUT = REPO / "test-output" / "browser"
SID, LIVE = "hostile-run", "hostile-live"
THREAD = "[t](javascript:alert(1)) <b>thread</b>"  # a conversation id as markup


class Listener:
    """An HTTP server that records every request it gets."""

    def __init__(self):
        hits = self.hits = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                hits.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def hostile(port: int, what: str) -> str:
    base = f"http://127.0.0.1:{port}"
    return (
        f'![beacon]({base}/{what}-md.png) <img src="{base}/{what}-html.png"> '
        f"[click me](javascript:fetch('{base}/{what}-js')) <a href=\"{base}/{what}-a\">there</a> "
        f"<script>fetch('{base}/{what}-script')</script> {base}/{what}-bare www.example.invalid"
    )


def plant(store: Store, port: int) -> None:
    h = lambda what: hostile(port, what)  # noqa: E731
    events = [
        SessionEvent(
            session_id=SID,
            name=h("name"),
            agent_id="agent <b>x</b>",
            model=f"![m](http://127.0.0.1:{port}/model.png)",
            workflow="[wf](javascript:alert(1))",
            tags=[h("tag")],
            user_id=f"<img src=http://127.0.0.1:{port}/user.png> [u](http://127.0.0.1:{port}/user)",
            thread_id=THREAD,
        ),
        StepEvent(session_id=SID, seq=1, event_id="e1", type="input", content=h("input")),
        StepEvent(session_id=SID, seq=2, event_id="e2", type="think", content=h("think")),
        StepEvent(
            session_id=SID,
            seq=3,
            event_id="e3",
            type="tool_call",
            tool_name="fetch",
            tool_call_id="c1",
            tool_args={"url": h("args"), "note": h("args2")},
        ),
        StepEvent(
            session_id=SID,
            seq=4,
            event_id="e4",
            type="tool_result",
            tool_name="fetch",
            tool_call_id="c1",
            content=h("result"),
            status="error",
            error_class="Err<img src=x>",
        ),
        StepEvent(session_id=SID, seq=5, event_id="e5", type="decision", content=h("decision")),
        SessionEndEvent(session_id=SID, status="failed", outcome=h("outcome")),
        SessionEvent(session_id=LIVE, name=h("live")),
        StepEvent(session_id=LIVE, seq=1, event_id="l1", type="think", content=h("livestep")),
    ]
    ingest(store, events)
    # an author within the 200 characters a name may hold (a longer one is refused, on both databases)
    base = f"http://127.0.0.1:{port}"
    author = f'![a]({base}/author-md.png) <img src="{base}/author-html.png"> [x](javascript:alert(1))'
    annotate(store, SID, "bad", h("note"), author=author)
    annotate(store, SID, "needs_attention", h("stepnote"), event_id="e2", author="Ana")


# every element's attribute, shadow roots (the components of ui/components.py) included
EVERY_ATTRIBUTE = """([tag, name]) => {
  const found = [];
  const walk = (root) => root.querySelectorAll("*").forEach((el) => {
    if (el.shadowRoot) walk(el.shadowRoot);
    if (el.localName === tag && el.hasAttribute(name)) found.push(el.getAttribute(name));
  });
  walk(document);
  return found;
}"""

PAGES = [
    "runs",
    f"timeline?session={SID}&step=1",
    f"timeline?session={SID}&step=2",
    f"timeline?session={SID}&step=3",
    f"timeline?session={SID}&step=4",
    f"timeline?session={SID}&step=5",
    "review?review=bad",
    "review?review=needs_attention",
    f"live?live={LIVE}",
    f"compare?a={SID}&b={LIVE}",
    f"whatif?session={SID}",
    f"playground?session={SID}&step=3",  # the messages to edit and the recorded answer
    "analytics",
    "analytics?charts=Speed+and+cost",
    "analytics?charts=Tools+and+errors",
    "analytics?charts=Retries+and+loops",  # one tab each
    "threads",
    "threads?thread=" + quote(THREAD),
]


def test_hostile_strings_render_as_text_and_fetch_nothing(browser, sqlite_store):
    """On SQLite: what the browser does with the strings. What each page reads of them from PostgreSQL is
    tests/test_page_hostile.py's, through AppTest on both databases."""
    store = sqlite_store
    OUT.mkdir(parents=True, exist_ok=True)
    with Listener() as listener:
        plant(store, listener.port)
        with served_app(store.url) as base:
            pg = browser.new_page(viewport={"width": 1400, "height": 1200})
            dialogs = []
            pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            seen_text = 0
            for path in PAGES:
                pg.goto(f"{base}/{path}")
                settled(pg)
                pg.wait_for_timeout(500)
                settled(pg)
                port = f"127.0.0.1:{listener.port}"
                links = pg.evaluate(EVERY_ATTRIBUTE, ["a", "href"])
                bad_links = [h for h in links if h.lower().startswith("javascript:") or port in h]
                images = pg.evaluate(EVERY_ATTRIBUTE, ["img", "src"])
                where = pg.eval_on_selector_all(
                    "a[href]",
                    f"els => els.filter(e => e.getAttribute('href').includes('{port}'))"
                    ".map(e => [e.getAttribute('href'), "
                    "(e.closest('[data-testid]')||{}).getAttribute && e.closest('[data-testid]').getAttribute('data-testid'), "
                    "e.outerHTML.slice(0,200)])",
                )
                assert bad_links == [], (path, where[:5])
                assert [s for s in images if port in s or s == "x"] == [], path
                assert pg.locator("script", has_text=port).count() == 0, path
                body = pg.inner_text("body")
                seen_text += body.count("click me")
                pg.screenshot(path=str(OUT / f"hostile-{path.split('?')[0]}.png"), full_page=True)
            # the hostile text is there, shown as the characters it is
            pg.goto(f"{base}/timeline?session={SID}&step=2")
            settled(pg)
            title = pg.inner_text("h1").replace("\u2060", "")  # the invisible joiner that keeps URLs plain
            assert f"![beacon](http://127.0.0.1:{listener.port}/name-md.png)" in title
            assert "<img src=" in title
            # the steps around the cursor and what the agent saw (drawn in shadow roots by ui/components.py)
            row = pg.locator("button.step[aria-current=step]").inner_text()
            assert row.startswith(f"▶ 2 💭 Thought 📝 — ![beacon](http://127.0.0.1:{listener.port}/think-md.png) <img src="), row
            said = pg.locator(".message").all_inner_texts()
            assert any(f'<img src="http://127.0.0.1:{listener.port}/input-html.png">' in m for m in said), said
        assert listener.hits == []
        assert dialogs == []
        assert seen_text > 0

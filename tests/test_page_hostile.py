"""Stored strings shown as text, through AppTest on SQLite and on PostgreSQL: the run of tests/test_browser_hostile.py,
whose name, content, tool arguments, notes and dimensions hold markdown images, raw HTML and `javascript:` links,
read back from each database on every page that browser test opens. No markdown the pages hand the browser holds
such a link or tag unescaped, nor is any of it HTML; the components' data carries them as the characters they are
(their scripts set them with `textContent`). What Chromium does with the pages (nothing fetched, no link, no image)
is the browser test's, on SQLite.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl

import pytest
from apptest_helpers import component_data, each_empty_store, page, texts  # noqa: F401  (a fixture)
from test_browser_hostile import LIVE, PAGES, SID, plant

from replay_core.storage.store import Store
from ui.common import WORD_JOINER, md

PORT = 9  # the address the strings point at (nothing listens: AppTest fetches nothing)
TARGET = f"127.0.0.1:{PORT}"
# markdown that would become a link, an image or a tag: a `](`, `![` or `<` with no backslash before it
UNESCAPED = re.compile(r"(?<!\\)(?:\]\(|!\[|<(?:img|a|script|b)\b)")
MARKDOWN = ("title", "header", "subheader", "markdown", "caption", "info", "warning", "error", "success")


@pytest.fixture
def hostile_store(each_empty_store) -> Store:
    """The hostile runs on both databases, the app pointed at them."""
    plant(each_empty_store, PORT)
    return each_empty_store


def opened(path: str):
    """The page of `path` (a browser address of PAGES) through AppTest: its file, its link's parameters, and the
    analytics tab it names set as the tab's state (AppTest hands no URL value to a widget bound to the URL)."""
    name, _, query = path.partition("?")
    params = dict(parse_qsl(query))
    state = {"charts": params.pop("charts")} if "charts" in params else None
    return page(f"pages/{name}.py", params=params, state=state)


def markdown_of(at) -> list[tuple[str, str]]:
    """Each text the page hands the browser as markdown: element values and widget labels."""
    found = [(kind, str(el.value)) for kind in MARKDOWN for el in getattr(at, kind)]
    found += [("button", b.label) for b in at.button] + [("expander", e.label) for e in at.expander]
    found += [("tab", t.label) for t in at.tabs]
    return found


def test_hostile_strings_read_from_each_database_are_shown_as_text(hostile_store):
    seen = 0
    for path in PAGES:
        at = opened(path)
        assert not at.exception, (path, at.exception)
        for kind, value in markdown_of(at):
            assert not (TARGET in value and UNESCAPED.search(value)), (path, kind, value)
            assert "](javascript:" not in value, (path, kind, value)
        html = [el for el in at.markdown if el.proto.allow_html]
        assert not [el.value for el in html if TARGET in el.value or "javascript:" in el.value], path
        seen += texts(at).count("click me")
    assert seen > 0
    # the run's own strings, as stored, on the step the browser test reads them at
    name = hostile_store.get_session(SID)["name"]
    at = opened(f"timeline?session={SID}&step=2")
    assert at.title[0].value == md(name)
    assert f"![beacon](http://{TARGET}/name-md.png)" in at.title[0].value.replace("\\", "").replace(WORD_JOINER, "")
    rows = [row["text"] for row in component_data(at, "step_rows")["rows"] if row.get("seq") == 2]
    thought = f"💭 Thought 📝 — ![beacon](http://{TARGET}/think-md.png) <img src="
    assert rows and rows[0].startswith("▶ 2") and thought in rows[0], rows
    said = [text for message in component_data(at, "transcript")["messages"] for _, text in message["parts"]]
    assert any(f'<img src="http://{TARGET}/input-html.png">' in text for text in said), said
    assert hostile_store.get_session(LIVE)["name"].startswith(f"![beacon](http://{TARGET}/live-md.png)")

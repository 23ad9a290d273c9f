"""Parts of pages drawn by the browser as one element each (st.components.v2).

A click on the timeline redraws everything around the cursor, and the browser's cost of a redraw
grows with the number of Streamlit elements in it: the steps around the cursor (~20 buttons and
headings) and what the agent saw (~40 bubbles, captions and code boxes) as one element each took a
quarter off a click's repaint, and the selected step is one too; the strip, a Vega-Lite chart before,
redraws only its cursor from click to click, and its slider is the page's (docs/architecture.md). A row of
numbers is one too (each st.metric cost a page's open ~7 ms in the browser), and so is the runs' filter bar. The
scripts set everything from a trace as text (textContent), never as HTML, as the rest of the UI does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import streamlit as st

ASSETS = Path(__file__).parent / "assets"
CSS = (ASSETS / "components.css").read_text()

_step_rows = st.components.v2.component(
    "agent_replay.step_rows", html='<nav class="rows"></nav>', css=CSS, js=(ASSETS / "step_rows.js").read_text()
)
EL = (ASSETS / "el.js").read_text()  # the helper the scripts after it share
CHAT = (ASSETS / "chat.js").read_text()  # bubbles, cards, folds and the raw JSON switch, after EL
_strip = st.components.v2.component(
    "agent_replay.strip",
    css=CSS,
    js=EL + (ASSETS / "strip.js").read_text(),
    html='<div class="strip"><label class="scrub"><span class="where"></span>'
    '<input type="range" step="1" aria-label="Step"></label><svg role="group" aria-label="Places in the run">'
    '<g class="marks"></g><rect class="cursor"></rect></svg><div class="axis"></div><div class="legend"></div>'
    '<div class="controls"><div class="jumps" role="toolbar" aria-label="Go to another step"></div>'
    '<form class="goto"><label>Go to step <input type="number" step="1" placeholder="step number"></label></form>'
    "</div></div>",
)
_step_detail = st.components.v2.component(
    "agent_replay.step_detail",
    html='<article class="detail"></article>',
    css=CSS,
    js=EL + (ASSETS / "tree.js").read_text() + CHAT + (ASSETS / "step_detail.js").read_text(),
)
_metrics = st.components.v2.component(
    "agent_replay.metrics", html='<div class="metrics"></div>', css=CSS, js=EL + (ASSETS / "metrics.js").read_text()
)
_filters = st.components.v2.component(
    "agent_replay.filters",
    css=CSS,
    js=EL + (ASSETS / "filters.js").read_text(),
    html='<form class="filters"><div class="head"><h2>Filter runs</h2>'
    '<button type="button" class="clear">Clear all</button></div><div class="fields"></div>'
    '<details class="more"><summary>More filters</summary><div class="fields"></div></details>'
    '<div class="toggles"></div></form>',
)
_transcript = st.components.v2.component(
    "agent_replay.transcript", html='<div class="messages"></div>', css=CSS, js=EL + CHAT + (ASSETS / "transcript.js").read_text()
)


_let_go = st.components.v2.component(
    "agent_replay.let_go",
    html="<span hidden></span>",
    js="export default function () { const e = document.activeElement; if (e && e.matches('input, textarea')) e.blur(); }",
)


def let_go_of_the_field(*, key: str) -> None:
    """Take the focus out of the text field that has it: Streamlit keeps a focused field on the page after its
    script stopped drawing it, and the next key would be typed into it instead of reaching a shortcut."""
    _let_go(key=key)


def step_rows(rows: list[dict], *, key: str, on_pick: Callable[[int], None]) -> None:
    """A list of rows: a step ({"seq", "text", "current"}, a button: clicking it calls `on_pick(seq)`) or a
    line between them ({"kind": "cycle" | "gap" | "more", "text"})."""
    _step_rows(data={"rows": rows}, key=key, on_picked_change=_picked(key, on_pick))


def strip(data: dict, *, key: str, on_pick: Callable[[int], None]) -> None:
    """The timeline's strip (ui/assets/strip.js): a slider over the run's steps, its ticks, then the jump buttons
    and a go-to box. {"first", "last": the axis; "lanes"; "kinds": what → [lane, colour]; "ticks": [[seq, what]];
    "gaps": [[from, to]]; "cursor": seq; "legend": [[what, colour]]; "left_off": what the ticks leave out;
    "jumps": [[name, label, seq | None, key | None]]}. Letting go of the slider (or a key on it), clicking a tick
    (or next to one in its lane) or a jump button, pressing a button's key while no field has the focus, or a
    step number entered in the box calls `on_pick(seq)`. A run of one step has the buttons alone. A native range
    input: Streamlit's slider measured its track on every redraw, a sixth of a click's repaint."""
    _strip(data=data, key=key, on_picked_change=_picked(key, on_pick))


def _picked(key: str, on_pick: Callable[[int], None]) -> Callable[[], None]:
    """The callback of a component whose script sends a step as its "picked" trigger."""
    return lambda: on_pick(int(st.session_state[key]["picked"]))


def step_detail(view: dict, *, key: str) -> None:
    """The selected step (ui/assets/step_detail.js): {"heading"; "facts"; "lines": captions; "call": {"tool", "tree"
    | "text", "long": [[key, text]]} | None; "error": text | None; "content": {"tree", "recorded"} | {"box"} |
    {"line"} | None; "bubble": the role it speaks as | None; "tool": the tool a result answers; "raw": the step as
    stored, JSON text; "notes": [text]}. Its parts were a dozen Streamlit elements redrawn on every click."""
    _step_detail(data=view, key=key)


def transcript(notes: list[str], messages: list[dict], *, key: str) -> None:
    """Lines saying how the messages were put together and what is left out, then chat messages as bubbles by role,
    each {"role", "origin": where it came from, "parts": [("line" | "text", text)]: a short one-line text as a line,
    other text verbatim in a box, "calls": [{"name", "id", "arguments"}] and for a tool's answer "tool" and "call_id"
    (cards), "json": the message as stored}."""
    _transcript(data={"notes": notes, "messages": messages}, key=key)


def card(label: str, value: str, *, delta: str | None = None, good: bool | None = None, help: str | None = None) -> dict:
    """One number of a `metrics` row: `delta` is its change (a leading "-" points its arrow down), `good` whether
    that change is good news (green), bad (red) or neither (None, grey)."""
    tone = None if good is None else "good" if good else "bad"
    return {"label": label, "value": value, "delta": delta, "tone": tone, "help": help}


def metrics(cards: list[dict], *, key: str, width: int | None = None, columns: int | None = None) -> None:
    """A row of numbers (`card`s): cards `width` pixels wide that wrap (two a row on a phone), else `columns` a
    row (two on a phone)."""
    _metrics(data={"cards": cards, "width": width, "columns": columns}, key=key)


def filters(
    fields: list[dict],
    *,
    more: list[str],
    active: bool,
    key: str,
    on_set: Callable[[str, str | bool], None],
    on_clear: Callable[[], None],
) -> None:
    """The runs' filters, one form (ui/assets/filters.js): `fields` each {"key", "kind": "text" | "choice" | "date" |
    "toggle", "label", "value", "options": [[value, label]] for a choice, "placeholder", "help"}; those keyed in `more`
    sit under "More filters" (open when one is set); "Clear all" is enabled when `active`. A changed field calls
    `on_set(key, value)` ("" or False: let go); "Clear all" calls `on_clear()`. Ten Streamlit widgets cost a page's
    open about a tenth."""

    def changed() -> None:
        event = st.session_state[key]["set"]
        if isinstance(event, dict) and isinstance(event.get("key"), str):
            on_set(event["key"], event.get("value"))

    _filters(data={"fields": fields, "more": more, "active": active}, key=key, on_set_change=changed, on_clear_change=on_clear)

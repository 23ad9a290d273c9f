"""The timeline's span waterfall: every step a row nested under its parent, a bar on the run's clock, the slow
ones coloured and named first, a click on a row moves the cursor there. A toggle lists the rows longest first
instead (flat: what took the time, whatever its nesting).

The layout (understand/waterfall.py) is made once per opened version of the run; the browser is sent a window
of rows around the cursor (or around where it scrolled to) and draws only those in view
(ui/assets/waterfall.js), so a 100,000-step run opens as fast as a 100-step one once it is laid out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

from replay_core.understand.timeline import Timeline
from replay_core.understand.waterfall import Row, Waterfall, layout

from .common import STEP_LABELS
from .components import ASSETS, CSS, EL

WINDOW = 300  # rows sent at a time: a screenful is ~18
SLOWEST = 5  # steps named in the "slowest first" line
HOT, WARM = 0.15, 0.05  # shares of the run's span that colour a bar
KEY = "waterfall"
WHERE = "_waterfall_at"  # (run, order, cursor's place, first place sent): a scroll past the window moves it
ORDER = "_waterfall_order"  # one of ORDERS, kept while the page is open
ORDERS = {"tree": "Tree order", "time": "Longest first"}

HTML = (
    '<div class="waterfall"><div class="order" role="group" aria-label="Order of the rows"></div>'
    '<div class="slowest"></div><div class="head"><span>Step</span><span>took</span>'
    '<span class="axis"></span></div><div class="viewport" tabindex="-1"><div class="space"></div></div>'
    '<div class="caption"></div></div>'
)
_waterfall = st.components.v2.component(
    "agent_replay.waterfall", html=HTML, css=CSS, js=EL + (ASSETS / "waterfall.js").read_text()
)


def waterfall_of(tl: Timeline) -> Waterfall:
    """The run's layout, once per opened version of the run (the Timeline is cached per version)."""
    if "waterfall" not in tl.cache:
        w = layout(tl.columns)
        tl.cache["waterfall"] = w
        tl.cache["waterfall_run_wide"] = (w.slowest(SLOWEST), sum(1 for d in w.duration_ms if d is None))
    return tl.cache["waterfall"]


def shown_order(tl: Timeline, order: str) -> tuple[Sequence[int], Sequence[int]]:
    """The layout's rows in the order drawn, and each row's place in it: as laid out (nesting, run order), or by
    duration, longest first, rows without one last (made once per opened version of the run)."""
    w = waterfall_of(tl)
    if order != "time":
        return range(len(w)), range(len(w))
    if "waterfall_by_time" not in tl.cache:
        d = w.duration_ms
        rows = sorted(range(len(w)), key=lambda r: (d[r] is None, -(d[r] or 0.0), r))
        place = [0] * len(rows)
        for i, r in enumerate(rows):
            place[r] = i
        tl.cache["waterfall_by_time"] = (rows, place)
    return tl.cache["waterfall_by_time"]


def took(ms: float | None) -> str:
    if ms is None:
        return "—"
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, seconds = divmod(round(ms / 1000), 60)
    return f"{minutes} min {seconds:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


CLOCK_STEPS = (  # the clock's label spacings, in ms
    [1, 2, 5, 10, 20, 50, 100, 200, 500]
    + [s * 1000 for s in (1, 2, 5, 10, 15, 30)]
    + [m * 60_000 for m in (1, 2, 5, 10, 15, 30)]
    + [h * 3_600_000 for h in (1, 2, 3, 6, 12, 24)]
)


def axis(total_ms: float) -> list[list]:
    """Where to label the clock: at most 4 labels (the lane is narrow), a round number of ms, s, min or h apart."""
    if total_ms <= 0:
        return []
    raw = total_ms / 3
    every = next((s for s in CLOCK_STEPS if s >= raw), -(-raw // 86_400_000) * 86_400_000)
    unit, name = next((u, n) for u, n in ((3_600_000, "h"), (60_000, "min"), (1000, "s"), (1, "ms")) if every >= u or u == 1)
    return [[k * every, f"{k * every / unit:g} {name}"] for k in range(int(total_ms // every) + 1)]


def heat(w: Waterfall, r: int) -> str:
    """A bar's colour class: a row that holds others is drawn pale (its time is its steps'); the others by
    their share of the run."""
    if w.holds[r]:
        return "holds"
    share = w.share(r) or 0.0
    return "hot" if share >= HOT else "warm" if share >= WARM else ""


def row_title(w: Waterfall, r: int, label: str) -> str:
    row_start, length = w.start_ms[r], w.duration_ms[r]
    when = "time not recorded" if row_start is None else f"starts at {took(row_start)}"
    share = w.share(r)
    spent = "no duration recorded" if length is None else f"took {took(length)}" + (f" ({share:.0%} of the run)" if share else "")
    return f"Step {w.columns['seq'][w.order[r]]} · {label} · {when} · {spent}"


def icon_label(row: Row) -> str:
    return f"{STEP_LABELS.get(row.kind, ('•', ''))[0]} {row.label}"


def window_data(tl: Timeline, pos: int, first: int, order: str = "tree") -> dict:
    """What the component draws: the rows at places `first`… of `order` (at most WINDOW), the cursor's place, the
    clock. Longest first, the rows are not indented (their nesting is the tree order's)."""
    w = waterfall_of(tl)
    slow, untimed = tl.cache["waterfall_run_wide"]  # passes over every row: once per opened run
    rank = {r: k + 1 for k, r in enumerate(slow)}
    shown, place = shown_order(tl, order)
    rows = []
    for r in shown[first : first + WINDOW]:
        row = w.row(r)
        label = icon_label(row)
        length = row.duration_ms
        said = "time not recorded" if row.start_ms is None else "no duration" if length is None else took(length)
        rows.append(
            [
                row.seq,
                row.depth if order == "tree" else 0,
                row.start_ms,
                length,
                label,
                said,
                row.failed,
                heat(w, r),
                rank.get(r, 0),
                row_title(w, r, label),
            ]
        )
    clocked = w.total_ms > 0
    notes = [] if clocked else ["No step of this run has a time and a duration: the rows are its nesting, with no clock."]
    if untimed and clocked:
        notes.append(f"{untimed:,} step{'s' if untimed != 1 else ''} with no duration recorded: drawn as a tick.")
    notes.append(
        f"Bars: red at {HOT:.0%} of the run or more, amber at {WARM:.0%}; a group's bar is pale (its time is its steps')."
    )
    return {
        "rows": rows,
        "first": first,
        "total": len(w),
        "total_ms": w.total_ms,
        "axis": axis(w.total_ms),
        "cursor": place[w.row_of[pos]],
        "order": order,
        "orders": list(ORDERS.items()),
        "slowest": [
            [
                w.columns["seq"][w.order[r]],
                f"{took(w.duration_ms[r])} · step {w.columns['seq'][w.order[r]]}",
                row_title(w, r, icon_label(w.row(r))),
            ]
            for r in slow
        ],
        "caption": " ".join(notes),
    }


def first_row(tl: Timeline, pos: int, order: str) -> int:
    """The window's first place: around the cursor when it moved (or the run or the order changed), else where a
    scroll took it."""
    at = shown_order(tl, order)[1][waterfall_of(tl).row_of[pos]]
    kept = st.session_state.get(WHERE)
    if not kept or kept[:3] != (tl.id, order, at):
        kept = st.session_state[WHERE] = (tl.id, order, at, max(0, at - WINDOW // 2))
    return kept[3]


def waterfall(tl: Timeline, pos: int, *, on_pick: Callable[[int], None]) -> None:
    """The waterfall at the cursor: a click on a row or on a slow step calls `on_pick(seq)`; a scroll past the
    rows sent asks for the window there; the order toggle redraws it tree-ordered or longest first."""

    def picked() -> None:
        on_pick(int(st.session_state[KEY]["picked"]))

    def scrolled() -> None:
        place = int(st.session_state[KEY]["scrolled"])
        run, order, at, _ = st.session_state[WHERE]
        st.session_state[WHERE] = (run, order, at, max(0, place - WINDOW // 2))

    def ordered() -> None:
        wanted = st.session_state[KEY]["order"]
        st.session_state[ORDER] = wanted if wanted in ORDERS else "tree"

    order = st.session_state.get(ORDER, "tree")
    data = window_data(tl, pos, first_row(tl, pos, order), order)
    _waterfall(data=data, key=KEY, on_picked_change=picked, on_scrolled_change=scrolled, on_order_change=ordered)

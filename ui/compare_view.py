"""Two runs compared on screen: picking them, the verdict and totals, the rows side by side around the
first divergence, and one pair of steps in full."""

from __future__ import annotations

import json

import streamlit as st

from replay_core.storage.store import SessionFilter, Store
from replay_core.understand.compare import OPTIONAL, Row, describe

from .common import (
    PAGE_TIMELINE,
    ended_label,
    fmt_cost,
    fmt_duration,
    load_comparison,
    md,
    run_label,
    short,
    status_label,
    step_label,
    url_choice,
    with_linked_runs,
)

WINDOW = 40  # rows shown around the first divergence unless all are asked for
MARKS = {True: "=", False: "≠"}


def pick_runs(store: Store) -> tuple[str | None, str | None]:
    """Runs A and B, bound to `?a=` and `?b=`; a link with only `?b=<replay>` gets the run it replays as A."""
    b_wanted = st.query_params.get("b")
    if b_wanted and not st.query_params.get("a") and (b_row := store.get_session(b_wanted)) and b_row.get("replay_of"):
        st.query_params["a"] = b_row["replay_of"]
    rows = with_linked_runs(store, store.list_sessions(SessionFilter(include_replays=True), limit=100), "a", "b")
    if not rows:
        st.info(
            "There are no runs to compare yet. Load the demo runs with `agent-replay demo`, or import traces on the "
            "**Import** page."
        )
        return None, None
    names = {r["id"]: run_label(r) for r in rows}
    left, right = st.columns(2)
    with left:
        a_id = url_choice("Run A", "a", list(names), format_func=names.get, placeholder="Pick a run…")
    with right:
        b_id = url_choice("Run B", "b", list(names), format_func=names.get, placeholder="Pick a run…")
    if a_id is None or b_id is None:
        st.caption("Pick two runs.")
    return a_id, b_id


def comparison(store: Store, a_id: str, b_id: str):
    """The comparison with the options picked, and what it found first."""
    with st.expander("Options"):
        include = st.multiselect(
            "Also compare",
            list(OPTIONAL),
            key="include",
            help="Ids, times, tokens, costs and the model name are left out unless picked here.",
        )
        whole = st.toggle(
            "Whole source run",
            key="whole",
            help="A replay is compared with the replayed range of its source; turn this on to compare it with the whole run.",
        )
    result = load_comparison(store, a_id, b_id, include=include, whole=whole)
    if result.source_range:
        st.caption(f"The source run is cut to the replayed range: steps {result.source_range[0]}–{result.source_range[1]}.")
    div = result.first_divergence
    if div is None:
        st.success("No divergence: the two runs took the same steps and ended the same way.")
    else:
        st.error(md(f"First divergence — {div.kind}: {div.summary}"))
    return result


def _outcome(store: Store, session_id: str, totals: dict) -> str:
    row = store.get_session(session_id)
    ended = ended_label(store, row) if row is not None else status_label(totals["status"])
    return ended + (f" ({totals['error_class']})" if totals["error_class"] else "")


def totals(store: Store, result, a_id: str, b_id: str) -> None:
    """Both runs' totals in one table, and a link to each one's timeline."""
    a, b = result.totals["a"], result.totals["b"]
    lines = [
        ("steps", a["steps"], b["steps"]),
        ("cycles", a["cycles"], b["cycles"]),
        ("tokens in", a["tokens_in"], b["tokens_in"]),
        ("tokens out", a["tokens_out"], b["tokens_out"]),
        ("cost", fmt_cost(a["cost_usd"]), fmt_cost(b["cost_usd"])),
        ("duration", fmt_duration(a["duration_s"]), fmt_duration(b["duration_s"])),
        ("outcome", _outcome(store, a_id, a), _outcome(store, b_id, b)),
    ]
    st.dataframe([{"": name, "A": str(va), "B": str(vb)} for name, va, vb in lines], hide_index=True)
    links = st.columns(2)
    links[0].page_link(PAGE_TIMELINE, label="Timeline of A", icon=":material/timeline:", query_params={"session": a_id})
    links[1].page_link(PAGE_TIMELINE, label="Timeline of B", icon=":material/timeline:", query_params={"session": b_id})


def _side(step) -> str:
    return "" if step is None else f"{step.seq} · {step_label(step.type)} · {short(describe(step), 70)}"


def _mark(row: Row) -> str:
    return MARKS[row.same] if row.paired else ("only A" if row.b is None else "only B")


def first_row(result) -> int:
    """The row of the first divergence (the first row when there is none)."""
    div = result.first_divergence
    return div.row if div is not None and div.row is not None else 0


def side_by_side(result) -> range:
    """The rows around the first divergence (all of them when asked); returns the rows listed."""
    st.subheader("Side by side")
    count = len(result.rows)
    show_all = st.toggle(f"Show all {count} rows", key="all_rows") if count > WINDOW else True
    top = 0 if show_all else max(0, first_row(result) - 5)
    window = range(top, count if show_all else min(count, top + WINDOW))
    if top:
        st.caption(f"Opened at the first divergence: rows {top + 1}–{window[-1] + 1} of {count}.")
    div_row = result.first_divergence.row if result.first_divergence is not None else None
    st.dataframe(
        [
            {
                "": "▶ first divergence" if i == div_row else "",
                "A": _side(result.rows[i].a),
                "match": _mark(result.rows[i]),
                "B": _side(result.rows[i].b),
                "difference": result.rows[i].kind or "",
            }
            for i in window
        ],
        hide_index=True,
    )
    return window


def _pair_label(row: Row) -> str:
    seqs = f"A {row.a.seq if row.a else '—'} / B {row.b.seq if row.b else '—'}"
    return f"{seqs} · {step_label((row.a or row.b).type)} · {_mark(row)}" + (f" · {row.kind}" if row.kind else "")


def one_pair(result, window: range, a_id: str, b_id: str) -> None:
    """One pair of the rows listed, both steps in full, and what differs."""
    first = first_row(result)
    # only the rows listed: labelling every row of two 50,000-step runs was seconds a click
    picked = st.selectbox(
        "Look at a pair",
        list(window),
        index=window.index(first) if first in window else 0,
        format_func=lambda i: _pair_label(result.rows[i]),
        key=f"pair_{a_id}_{b_id}",
    )
    row = result.rows[picked]
    for col, name, step in zip(st.columns(2), "AB", (row.a, row.b), strict=True):
        with col:
            _step_in_full(name, step)
    if row.paired and not row.same:
        st.text("What differs:")
        st.text(row.diff)


def _step_in_full(name: str, step) -> None:
    if step is None:
        st.caption(f"{name} has no step here.")
        return
    st.text(f"{name}: step {step.seq} · {step_label(step.type)}" + (f" · {step.tool_name}" if step.tool_name else ""))
    # st.text, not st.code: the code box's highlighter costs a page load ~1.5 s of the browser's main thread here
    if step.tool_args is not None:
        st.text(json.dumps(step.tool_args, indent=2, ensure_ascii=False, default=str))
    if step.content:
        st.text(step.content)
    if step.error_class:
        st.text(f"{step.status}: {step.error_class}")

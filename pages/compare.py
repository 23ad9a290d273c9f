"""Compare: two runs side by side, aligned step by step, opened at the first step where they differ.

`?a=<id>&b=<id>` links here (the what-if page does, for each replay); a link with only
`?b=<replay>` compares the replay with the run it replays.
"""

from __future__ import annotations

import json

import streamlit as st

from replay_core.storage.store import SessionFilter
from replay_core.understand.compare import OPTIONAL, Row, describe
from ui.common import (PAGE_TIMELINE, fmt_cost, fmt_duration, fmt_when, get_store, load_comparison, md, short, status_label,
                       step_label, url_choice)

WINDOW = 40  # rows shown around the first divergence unless all are asked for

st.title("Compare runs")
st.caption("Two runs aligned step by step: original and replay, success and failure, or two models on the same task.")
store = get_store()

b_wanted = st.query_params.get("b")
if b_wanted and not st.query_params.get("a") and (b_row := store.get_session(b_wanted)) and b_row.get("replay_of"):
    st.query_params["a"] = b_row["replay_of"]  # arriving from a replay: compare it with its source

rows = store.list_sessions(SessionFilter(include_replays=True), limit=100)  # a replay is a run to compare
for key in ("a", "b"):
    wanted = st.query_params.get(key)
    if wanted and wanted not in {r["id"] for r in rows} and (row := store.get_session(wanted)) is not None:
        rows.insert(0, row)
if len(rows) < 1:
    st.info("There are no runs to compare yet. Load the demo runs with `agent-replay demo`, or import traces on the "
            "**Import** page.")
    st.stop()
names = {r["id"]: f"{r['name'] or r['id']} · {status_label(r['status'])} · {fmt_when(r['started_at'])}" for r in rows}
left, right = st.columns(2)
with left:
    a_id = url_choice("Run A", "a", list(names), format_func=names.get, placeholder="Pick a run…")
with right:
    b_id = url_choice("Run B", "b", list(names), format_func=names.get, placeholder="Pick a run…")
if a_id is None or b_id is None:
    st.caption("Pick two runs.")
    st.stop()

with st.expander("Options"):
    include = st.multiselect("Also compare", list(OPTIONAL), key="include",
                             help="Ids, times, tokens, costs and the model name are left out unless picked here.")
    whole = st.toggle("Whole source run", key="whole", help="A replay is compared with the replayed range of its source; "
                                                            "turn this on to compare it with the whole run.")
result = load_comparison(store, a_id, b_id, include=include, whole=whole)
if result.source_range:
    st.caption(f"The source run is cut to the replayed range: steps {result.source_range[0]}–{result.source_range[1]}.")

div = result.first_divergence
if div is None:
    st.success("No divergence: the two runs took the same steps and ended the same way.")
else:
    st.error(md(f"First divergence — {div.kind}: {div.summary}"))

# ---------------------------------------------------------------------------- totals


def totals_table() -> list[dict]:
    a, b = result.totals["a"], result.totals["b"]
    lines = [
        ("steps", a["steps"], b["steps"]), ("cycles", a["cycles"], b["cycles"]),
        ("tokens in", a["tokens_in"], b["tokens_in"]), ("tokens out", a["tokens_out"], b["tokens_out"]),
        ("cost", fmt_cost(a["cost_usd"]), fmt_cost(b["cost_usd"])),
        ("duration", fmt_duration(a["duration_s"]), fmt_duration(b["duration_s"])),
        ("outcome", status_label(a["status"]) + (f" ({a['error_class']})" if a["error_class"] else ""),
         status_label(b["status"]) + (f" ({b['error_class']})" if b["error_class"] else "")),
    ]
    return [{"": name, "A": str(va), "B": str(vb)} for name, va, vb in lines]


st.dataframe(totals_table(), hide_index=True)
links = st.columns(2)
links[0].page_link(PAGE_TIMELINE, label="Timeline of A", icon=":material/timeline:", query_params={"session": a_id})
links[1].page_link(PAGE_TIMELINE, label="Timeline of B", icon=":material/timeline:", query_params={"session": b_id})

# ---------------------------------------------------------------------------- side by side

MARKS = {True: "=", False: "≠"}


def side(step) -> str:
    return "" if step is None else f"{step.seq} · {step_label(step.type)} · {short(describe(step), 70)}"


def mark(row: Row) -> str:
    return MARKS[row.same] if row.paired else ("only A" if row.b is None else "only B")


st.subheader("Side by side")
first_row = div.row if div is not None and div.row is not None else 0
show_all = st.toggle(f"Show all {len(result.rows)} rows", key="all_rows") if len(result.rows) > WINDOW else True
top = 0 if show_all else max(0, first_row - 5)
window = range(top, len(result.rows) if show_all else min(len(result.rows), top + WINDOW))
if top:
    st.caption(f"Opened at the first divergence: rows {top + 1}–{window[-1] + 1} of {len(result.rows)}.")
st.dataframe(
    [{"": "▶ first divergence" if div is not None and i == div.row else "", "A": side(result.rows[i].a),
      "match": mark(result.rows[i]), "B": side(result.rows[i].b), "difference": result.rows[i].kind or ""} for i in window],
    hide_index=True,
)

# ---------------------------------------------------------------------------- one pair


def pair_label(i: int) -> str:
    row = result.rows[i]
    seqs = f"A {row.a.seq if row.a else '—'} / B {row.b.seq if row.b else '—'}"
    return f"{seqs} · {step_label((row.a or row.b).type)} · {mark(row)}" + (f" · {row.kind}" if row.kind else "")


# the rows listed above: labelling every row of two 50,000-step runs was seconds a click
picked = st.selectbox("Look at a pair", list(window), index=window.index(first_row) if first_row in window else 0,
                      format_func=pair_label, key=f"pair_{a_id}_{b_id}")
row = result.rows[picked]
cols = st.columns(2)
for col, name, step in ((cols[0], "A", row.a), (cols[1], "B", row.b)):
    with col:
        if step is None:
            st.caption(f"{name} has no step here.")
            continue
        st.text(f"{name}: step {step.seq} · {step_label(step.type)}" + (f" · {step.tool_name}" if step.tool_name else ""))
        if step.tool_args is not None:
            st.code(json.dumps(step.tool_args, indent=2, ensure_ascii=False, default=str), language="json")
        if step.content:
            st.code(step.content, language=None, wrap_lines=True)
        if step.error_class:
            st.text(f"{step.status}: {step.error_class}")
if row.paired and not row.same:
    st.text("What differs:")
    st.code(row.diff, language=None, wrap_lines=True)

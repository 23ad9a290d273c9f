"""Import: upload trace files of any supported format; each file gets its own result."""

from __future__ import annotations

import streamlit as st

from replay_core.ingest.formats import registry
from replay_core.storage.actor import IMPORT
from ui.common import PAGE_TIMELINE, current_actor, get_store, md
from ui.import_view import import_all

store = get_store()
st.title("Import runs")
actor = current_actor()
if not actor.may(IMPORT):
    st.info(
        f"Only editors can import runs; you are signed in as a {actor.role}. "
        "Ask the person who set up Agent Replay for the editor password."
    )
    st.stop()
formats = registry()
st.write(
    "Upload trace files; the format of each is recognised from its content. "
    "Known formats: " + ", ".join(md(f.label) for f in formats.values()) + "."  # labels hold ~ and *, not markup
)
files = st.file_uploader("Trace files", accept_multiple_files=True, key="uploads")
left, right = st.columns(2)
fmt = left.selectbox("Format", ["auto", *formats], format_func=lambda n: "Recognise it" if n == "auto" else formats[n].label)
skip_bad = right.checkbox(
    "Import the good records of a file that has bad ones",
    help="By default a file with any bad record is refused whole, so nothing half-imported is stored.",
)

if st.button("Import", type="primary", disabled=not files):
    bar = st.progress(0.0, text="Starting…")
    uploads = [(f.name, f.getvalue()) for f in files]
    results = import_all(
        store,
        uploads,
        fmt=fmt,
        skip_bad=skip_bad,
        actor=actor,
        progress=lambda i, name: bar.progress(i / len(uploads), text=f"Importing {name} ({i + 1} of {len(uploads)})"),
    )
    bar.progress(1.0, text=f"Done: {len(results)} file{'s' if len(results) != 1 else ''}.")
    st.session_state["import_results"] = results

results = st.session_state.get("import_results")
if results:
    st.dataframe([r.row() for r in results], hide_index=True)
    for r in results:
        for warning in r.warnings:
            st.warning(warning, icon="⚠️")
        if r.outcome.startswith("Not imported") and r.errors:
            st.error(r.errors[0], icon="🚫")
            continue
        examples = (r.account or {}).get("ignored_examples") or {}
        if examples:
            with st.expander(f"{r.file}: what the reader ignored"):
                st.dataframe(
                    [{"Kind": k, "Count": r.account["ignored"][k], "First at": ", ".join(w)} for k, w in examples.items()],
                    hide_index=True,
                )
        if r.errors:
            with st.expander(f"{md(r.file)}: {len(r.errors)} bad record{'s' if len(r.errors) != 1 else ''}", expanded=True):
                st.code(
                    "\n".join(r.errors[:100]) + (f"\n… and {len(r.errors) - 100} more" if len(r.errors) > 100 else ""),
                    language=None,
                    wrap_lines=True,
                )
    opened = [sid for r in results for sid in r.sessions][:10]
    for sid in opened:
        st.page_link(PAGE_TIMELINE, label=f"Open {md(sid)}", icon="🎞️", query_params={"session": sid})
elif not files:
    st.info("No file chosen yet. Drop files above, or click to browse.")

"""The review queue: runs by verdict with every note on them, and marking a run."""

from __future__ import annotations

import streamlit as st

from replay_core.ingest.annotate import AUTHOR_MAX, annotate
from replay_core.storage.actor import READ_AUDIT
from replay_core.storage.store import SessionFilter, Store
from replay_core.team import audit

from .common import (
    PAGE_TIMELINE,
    REVIEW_CHOICES,
    REVIEW_LABELS,
    current_actor,
    fmt_when,
    load_timeline,
    md,
    note_line,
    queue_verdict_line,
    queue_verdicts,
    run_label,
    status_label,
    url_choice,
)

PAGE_SIZE = 20
AUDIT_ROWS = 200
DEFAULT_STATE = "needs_attention"


def opening_state(store: Store) -> str:
    """What Review opens on: runs flagged for attention if there are any, else the runs nobody has judged yet."""
    return DEFAULT_STATE if store.count_sessions(SessionFilter(review=DEFAULT_STATE)) else "unreviewed"


def pick_state(store: Store) -> str:
    opening = opening_state(store)
    chosen = url_choice(
        "Show runs marked",
        "review",
        list(REVIEW_CHOICES),
        format_func=REVIEW_CHOICES.get,
        placeholder=REVIEW_CHOICES[opening],
    )
    return chosen or opening


MARK_KEYS = ("mark_sid", "mark_label", "mark_text")  # cleared after a save; the name ("mark_author") is kept


def mark_run_form(store: Store, author: str | None) -> None:
    """No verdict preselected (an accidental approval is worse than a click), and the name stays after a save."""
    rows = store.list_sessions(limit=100)
    names = {r["id"]: run_label(r) for r in rows}
    if st.session_state.pop("mark_saved", False):
        st.toast("Note saved.")
    with st.form("mark_run", border=False):
        sid = st.selectbox("Run", list(names), format_func=names.get, index=None, placeholder="Pick a run…", key="mark_sid")
        label = st.radio(
            "Verdict", list(REVIEW_LABELS), format_func=REVIEW_LABELS.get, horizontal=True, index=None, key="mark_label"
        )
        text = st.text_area("Note", placeholder="What should the team know about this run?", key="mark_text")
        name = st.text_input("Your name", value=(author or "")[:AUTHOR_MAX], key="mark_author", max_chars=AUTHOR_MAX)
        if st.form_submit_button("Save note", type="primary"):
            if sid is None:
                st.error("Pick the run the note is about.")
                return
            if label is None:
                st.error("Pick a verdict.")
                return
            st.session_state["reviewer"] = name.strip() or None
            annotate(store, sid, label, text.strip(), author=name.strip() or None, actor=current_actor())
            for key in MARK_KEYS:
                del st.session_state[key]
            st.session_state["mark_saved"] = True
            st.rerun()


def reviewed_runs(store: Store, state: str) -> None:
    flt = SessionFilter(review=state)
    total = store.count_sessions(flt)
    if total == 0:
        st.info(
            f"No run is marked “{REVIEW_CHOICES[state]}” right now." if state != "unreviewed" else "Every run has been reviewed."
        )
        return
    st.markdown(f"**{total} run{'s' if total != 1 else ''}** · {REVIEW_CHOICES[state]}")
    if state == "unreviewed":
        st.caption("Runs with no verdict yet (verdicts given in review queues are listed under each run).")
    pages = -(-total // PAGE_SIZE)
    page = st.pagination(pages, key="page", bind="query-params") if pages > 1 else 1
    rows = store.list_sessions(flt, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
    in_queues = queue_verdicts(store, [r["id"] for r in rows])
    for row in rows:
        notes = store.annotations(row["id"])
        with st.container(border=True):
            st.markdown(
                f"**{md(row['name'] or row['id'])}** · {status_label(row['status'])} · {row['steps']} steps · "
                f"started {fmt_when(row['started_at'])}"
            )
            if row.get("outcome"):
                st.caption(md(row["outcome"]))
            seq_of = {}
            if any(n["event_id"] for n in notes):
                timeline = load_timeline(store, row["id"])
                wanted = {n["event_id"] for n in notes}
                seq_of = {s.event_id: s.seq for s in timeline.steps if s.event_id in wanted}
            for note in notes:
                seq = seq_of.get(note["event_id"])
                st.markdown(note_line(note, f"on step {seq}" if seq is not None else ""))
            for given in in_queues.get(row["id"], []):
                st.markdown(queue_verdict_line(given))
            st.page_link(PAGE_TIMELINE, label="Open the timeline", icon="🎞️", query_params={"session": row["id"]})


def audit_section(store: Store, actor) -> None:
    """Editors only: the newest lines of the audit log (who did what, when, from where), as a table of text."""
    if not actor.may(READ_AUDIT):
        return
    with st.expander("Audit log (editors only)", icon="🗂️"):
        rows = [audit.as_row(e) for e in audit.entries(store, actor, limit=AUDIT_ROWS)]
        if not rows:
            st.caption("Nothing yet: imports, replays, deletes and sign-ins will be listed here.")
            return
        st.dataframe([{**r, "detail": "" if r["detail"] is None else str(r["detail"])} for r in rows], hide_index=True)
        st.caption(f"The newest {len(rows)} lines. All of them: `agent-replay audit --json`.")

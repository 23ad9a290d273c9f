"""The first screen: what this is, what needs attention now, and where to start.

Counts are the Store's, over original runs only (replays and experiments' runs are not the
agent's runs). Review queues appear through `queue_section` and the start points.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

import streamlit as st

from replay_core.ingest.formats import registry
from replay_core.storage.actor import WORK_QUEUE, Actor
from replay_core.storage.store import SessionFilter, Store
from replay_core.team import queues

from .common import PAGE_QUEUES, PAGE_RUNS, PAGE_TIMELINE, filter_params, fmt_when, md, reviewer_name, short
from .monitors_view import alert_banner

PRODUCT = "Agent Replay"
PITCH = (
    "Agent Replay records what your AI agents did, step by step, so you can see where a run went wrong, "
    "replay it with another model, and review it with your team."
)
LATEST_FAILURES = 5
QUEUES_SHOWN = 3  # unfinished queues listed under the count
SDK_SNIPPET = """from replay_core import Recorder
with Recorder().session("refund request", agent_id="support-bot") as run:
    run.think("Look the order up first.")"""


def snippet_markdown() -> str:
    return "  \n".join(f"`{line}`" for line in SDK_SNIPPET.splitlines())


def day_start(now: datetime | None = None) -> datetime:
    """Today, 00:00 UTC."""
    return datetime.combine((now or datetime.now(UTC)).date(), time(), UTC)


def attention(store: Store, now: datetime | None = None) -> dict[str, tuple[int, SessionFilter]]:
    """What needs looking at now, as counts with the filter that lists them (originals only)."""
    today = day_start(now)
    filters = {
        "Failed today": SessionFilter(status="failed", since=today),
        "Failed this week": SessionFilter(status="failed", since=today - timedelta(days=6)),
        "Still running": SessionFilter(status="running"),
    }
    return {label: (store.count_sessions(flt), flt) for label, flt in filters.items()}


def attention_section(store: Store, actor: Actor) -> None:
    st.subheader("Needs attention now")
    counts = attention(store)
    *columns, queues = st.columns(len(counts) + 1)
    for column, (label, (n, flt)) in zip(columns, counts.items(), strict=True):
        column.metric(label, n)
        if n:
            column.page_link(
                PAGE_RUNS,
                label=f"See {'it' if n == 1 else 'them'}",
                icon=":material/arrow_forward:",
                query_params=filter_params(flt),
            )
    with queues:
        queue_section(store, actor)
    st.caption("“This week” is the last 7 days, in UTC. Replays and experiments are not counted.")


def queue_section(store: Store, actor: Actor) -> None:
    """Runs waiting in your review queues (the queues open to you or assigned to you), each queue's progress."""
    if not actor.may(WORK_QUEUE):
        st.metric("Waiting in your review queues", "—", help="Reviewers and editors work review queues.")
        return
    mine = [q for q in queues.queue_progress(store, actor, reviewer_name()) if q["yours"]]
    st.metric(
        "Waiting in your review queues",
        sum(q["needed"] - q["reviews"] for q in mine),
        help="Reviews still to give in the unfinished queues open to you or assigned to you.",
    )
    for q in mine[:QUEUES_SHOWN]:
        st.page_link(
            PAGE_QUEUES,
            label=md(short(f"{q['name']} · {q['items_done']} of {q['items']} runs done ({q['percent']}%)", 80)),
            icon=":material/checklist:",
            query_params={"queue": str(q["id"])},
        )


def latest_failures(store: Store) -> list[dict]:
    return store.list_sessions(SessionFilter(status="failed"), limit=LATEST_FAILURES)


def start_section(store: Store, actor: Actor) -> None:
    st.subheader("Start here")
    left, right = st.columns(2)
    with left:
        st.markdown("**Latest failures**")
        failures = latest_failures(store)
        if not failures:
            st.caption("No failed run recorded. 🎉")
        for r in failures:
            why = f" · {r['error_class']}" if r.get("error_class") else ""
            st.page_link(
                PAGE_TIMELINE,
                label=md(short(f"{r['name'] or r['id']}{why} · {fmt_when(r['started_at'])}", 100)),
                icon=":material/timeline:",
                query_params={"session": r["id"]},
            )
        if failures:
            st.page_link(PAGE_RUNS, label="All failed runs", icon=":material/list:", query_params={"status": "failed"})
        st.page_link(PAGE_QUEUES, label="My review queues", icon=":material/checklist:")
    with right:
        st.markdown("**Import your logs**")
        st.caption(
            "Drop a log file on the Import page; its format is recognised from its content: "
            + " · ".join(md(f.label) for f in registry().values())
            + "."
        )
        st.page_link("pages/import_runs.py", label="Import logs", icon=":material/upload_file:")
        st.markdown("**Record with the SDK**")
        st.caption("From your agent's Python code, every step lands here as it happens:")
        # lines of inline code, not st.code: a code box's highlighter cost this page ~1.5 s of the browser's main thread
        st.markdown(snippet_markdown())


def home(store: Store, actor: Actor) -> None:
    st.title(PRODUCT)
    st.markdown(PITCH)
    alert_banner(store)
    attention_section(store, actor)
    start_section(store, actor)

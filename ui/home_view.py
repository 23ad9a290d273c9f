"""The first screen: what this is, what needs attention now, and where to start.

Counts are the Store's, over original runs only (replays and experiments' runs are not the
agent's runs). The review-queue section is drawn by `queue_section` alone, so the queues
work can be wired in there.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

import streamlit as st

from replay_core.ingest.formats import registry
from replay_core.storage.actor import Actor
from replay_core.storage.store import SessionFilter, Store

from .common import PAGE_RUNS, PAGE_TIMELINE, filter_params, fmt_when, md, short

PRODUCT = "Agent Replay"
PITCH = ("Agent Replay records what your AI agents did, step by step, so you can see where a run went wrong, "
         "replay it with another model, and review it with your team.")
LATEST_FAILURES = 5
QUEUES_URL = "queues"  # the review queues page's url path
SDK_SNIPPET = '''from replay_core import Recorder
with Recorder().session("refund request", agent_id="support-bot") as run:
    run.think("Look the order up first.")'''


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
            column.page_link(PAGE_RUNS, label=f"See {'it' if n == 1 else 'them'}", icon=":material/arrow_forward:",
                             query_params=filter_params(flt))
    with queues:
        queue_section(store, actor)
    st.caption("“This week” is the last 7 days, in UTC. Replays and experiments are not counted.")


def queue_section(store: Store, actor: Actor) -> None:
    """Runs waiting in your review queues: the one place the first screen speaks of queues.
    Wire the queues' `queue_progress(store, actor)` in here; until then it says none are set up."""
    st.metric("Waiting in your review queues", "—", help="Review queues are not set up on this server yet.")


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
            st.page_link(PAGE_TIMELINE, label=md(short(f"{r['name'] or r['id']}{why} · {fmt_when(r['started_at'])}", 100)),
                         icon=":material/timeline:", query_params={"session": r["id"]})
        if failures:
            st.page_link(PAGE_RUNS, label="All failed runs", icon=":material/list:", query_params={"status": "failed"})
        st.markdown(f"**My review queue** · [Open it]({QUEUES_URL})")
    with right:
        st.markdown("**Import your logs**")
        st.caption("Drop a log file on the Import page; its format is recognised from its content: "
                   + " · ".join(md(f.label) for f in registry().values()) + ".")
        st.page_link("pages/import_runs.py", label="Import logs", icon=":material/upload_file:")
        st.markdown("**Record with the SDK**")
        st.caption("From your agent's Python code, every step lands here as it happens:")
        st.code(SDK_SNIPPET, language="python")


def home(store: Store, actor: Actor) -> None:
    st.title(PRODUCT)
    st.markdown(PITCH)
    attention_section(store, actor)
    start_section(store, actor)

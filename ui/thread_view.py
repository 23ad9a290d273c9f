"""A conversation: its runs in order with their totals (understand.thread), or the latest conversations
to open one from. A run opens its timeline; the list links back to the same runs on the Runs page."""

from __future__ import annotations

import streamlit as st

from replay_core.storage.store import Store
from replay_core.understand.thread import Thread, open_thread, recent_threads

from . import components
from .common import (
    PAGE_RUNS,
    PAGE_THREADS,
    PAGE_TIMELINE,
    clicked_row,
    filter_from_params,
    fmt_cost,
    fmt_duration,
    fmt_when,
    md,
    status_label,
)

RECENT = 100


def thread_rows(thread: Thread) -> list[dict]:
    """One table row per run, oldest first (plain text cells)."""
    return [
        {
            "id": r["id"],
            "#": i,
            "Status": status_label(r["status"]),
            "Run": r["name"] or r["id"],
            "Started": r["started_at"].strftime("%Y-%m-%d %H:%M:%S") if r["started_at"] else "not recorded",
            "Duration": fmt_duration(r["duration_s"]),
            "Steps": r["steps"],
            "Tokens": r["tokens_in"] + r["tokens_out"],
            "Cost": fmt_cost(r["cost_usd"]),
            "User": r["user_id"] or "—",
            "Outcome": (r["outcome"] or r["error_class"] or "")[:200],
        }
        for i, r in enumerate(thread.runs, 1)
    ]


def totals_cards(thread: Thread) -> list[dict]:
    t = thread.totals()
    card = components.card
    cost = fmt_cost(t["cost_usd"], "unknown")
    cards = [
        card("Runs", f"{t['runs']:,}", help="The latest runs only: older ones exist" if thread.more else None),
        card("Failed", f"{t['failed']:,}"),
        card("Steps", f"{t['steps']:,}"),
        card("Tokens", f"{t['tokens_in'] + t['tokens_out']:,}", help=f"{t['tokens_in']:,} in, {t['tokens_out']:,} out"),
        card("Cost", cost, help=f"{t['runs_cost_unknown']} runs without a known cost" if t["runs_cost_unknown"] else None),
        card("Span", fmt_duration(t["span_s"]), help="From the first run's start to the last one's end"),
    ]
    return cards


def _picked_row(rows: list[dict], key: str) -> dict | None:
    columns = [k for k in rows[0] if k not in ("id", "thread")] if rows else None
    picked = clicked_row(rows, key, columns, {"Last started": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm")})
    return picked[0] if picked else None


def thread_section(store: Store, thread_id: str) -> None:
    """The conversation: who, its totals, its runs in order (a click opens a run's timeline)."""
    thread = open_thread(store, thread_id)
    st.title("Thread")
    st.text(thread_id)
    if thread is None:
        st.info(
            "No run has this thread. A run's thread comes from OTel `session.id`, Langfuse's `sessionId`, LangSmith's "
            "`thread_id` metadata, or `thread_id=` in the SDK."
        )
        st.page_link(PAGE_THREADS, label="All threads", icon=":material/forum:", query_params={})
        return
    users = thread.users
    who = f"User: {users[0]}" if len(users) == 1 else f"{len(users)} users: {', '.join(users)}" if users else "No user recorded"
    st.caption(md(who))
    components.metrics(totals_cards(thread), key="thread_totals", columns=6)
    st.caption("The conversation's runs, oldest first. Click a run to open its timeline.")
    chosen = _picked_row(thread_rows(thread), "thread_runs")
    st.page_link(PAGE_RUNS, label="These runs in the Runs list", icon=":material/list:", query_params={"thread_id": thread_id})
    if chosen:
        st.switch_page(PAGE_TIMELINE, query_params={"session": chosen["id"]})


def recent_section(store: Store) -> None:
    """The latest conversations (of the runs the link's filters pick); a click opens one."""
    st.title("Threads")
    flt = filter_from_params(st.query_params.to_dict())
    rows = [
        {
            "thread": r["thread_id"],
            "Thread": r["thread_id"],
            "Runs": r["runs"],
            "Failed": r["failed"],
            "User": r["user_id"] if r["users"] <= 1 else f"{r['users']} users",
            "Last started": r["last_started_at"],
            "Tokens": r["tokens_in"] + r["tokens_out"],
            "Cost": fmt_cost(r["cost_usd"]),
        }
        for r in recent_threads(store, flt, limit=RECENT)
    ]
    if not rows:
        st.info(
            "No run belongs to a thread yet. A run's thread comes from OTel `session.id` (or `gen_ai.conversation.id`), "
            "Langfuse's `sessionId`, LangSmith's `thread_id` metadata, or `recorder.session(..., thread_id=…)`."
        )
        return
    latest = fmt_when(rows[0]["Last started"])
    st.caption(md(f"The latest {len(rows)} conversations (last run {latest}). Click one to see its runs in order."))
    chosen = _picked_row(rows, "threads_table")
    if chosen:
        st.query_params["thread"] = chosen["thread"]
        st.rerun()


def threads_page(store: Store) -> None:
    thread_id = (st.query_params.get("thread") or "").strip()
    if thread_id:
        thread_section(store, thread_id)
    else:
        recent_section(store)

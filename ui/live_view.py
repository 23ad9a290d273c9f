"""The live tail: running sessions and the newest steps of one, redrawn on a timer by a fragment."""

from __future__ import annotations

from datetime import datetime

import streamlit as st

from replay_core.events import now_utc
from replay_core.storage.store import SessionFilter, Store

from .common import PAGE_TIMELINE, expire_idle, fmt_cost, get_store, md, short, status_label, step_label, url_choice

REFRESH_S = 2
TAIL = 15
MAX_RUNNING = 50


def ago(moment: datetime | None, now: datetime | None = None) -> str:
    if moment is None:
        return "no event yet"
    seconds = max(0, int(((now or now_utc()) - moment).total_seconds()))
    if seconds < 60:
        return f"{seconds} s ago"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min ago"


def render_live(store: Store) -> None:
    """Running runs, then the latest steps of the chosen one (newest at the bottom)."""
    running = store.list_sessions(
        SessionFilter(status="running", include_replays=True), limit=MAX_RUNNING
    )  # a replay under way too
    finished = just_finished(store, [r["id"] for r in running])
    for row in finished:
        box = st.error if row["status"] == "failed" else st.success if row["status"] == "succeeded" else st.info
        box(
            md(f"{row['name'] or row['id']} finished: {status_label(row['status'])} after {row['steps']:,} steps"),
            icon=":material/flag:",
        )
    if finished:
        st.page_link(
            PAGE_TIMELINE, label="Open the run that just finished", icon="🎞️", query_params={"session": finished[0]["id"]}
        )
    if not running:
        st.info(
            "No run is sending steps right now. Runs recorded with the Python recorder or posted to the HTTP API "
            "(`POST /api/v1/sessions/{id}/steps`) show up here the moment their first step arrives."
        )
        return
    by_id = {r["id"]: r for r in running}
    n = len(running)
    st.markdown(f"**{n} run{'s' if n != 1 else ''} running** · refreshed every {REFRESH_S} s")
    label = {sid: f"{r['name'] or sid} · {r['steps']} steps · last step {ago(r['last_event_at'])}" for sid, r in by_id.items()}
    chosen = url_choice("Watch", "live", list(by_id), format_func=label.get, placeholder="The most recent run")
    row = by_id[chosen or running[0]["id"]]
    tail(store, row)
    if n > 1:
        st.dataframe(
            [
                {
                    "Run": r["name"] or r["id"],
                    "Agent": r["agent_id"],
                    "Model": r["model"],
                    "Steps": r["steps"],
                    "Last step": ago(r["last_event_at"]),
                }
                for r in running
            ],
            hide_index=True,
        )


SEEN, FINISHED, KEEP_FINISHED = "live_seen", "live_finished", 5


def just_finished(store: Store, running: list[str]) -> list[dict]:
    """The runs this page saw running that have ended since (newest first, the last five): a run that ends
    is said to have finished, not silently dropped from the list."""
    seen = st.session_state.get(SEEN, set())
    finished = st.session_state.setdefault(FINISHED, [])
    for sid in sorted(seen - set(running)):
        if sid not in finished:
            finished.insert(0, sid)
    del finished[KEEP_FINISHED:]
    st.session_state[SEEN] = set(running)
    rows = [store.get_session(sid) for sid in finished]
    return [r for r in rows if r is not None and r["status"] != "running"]


def tail(store: Store, row: dict) -> None:
    sid = row["id"]
    facts = [f"{row['steps']:,} steps", f"last step {ago(row['last_event_at'])}"]
    if row["cost_usd"] is not None:
        facts.insert(1, fmt_cost(row["cost_usd"]))
    facts += [str(row[k]) for k in ("agent_id", "model") if row.get(k)]
    st.subheader(md(row["name"] or sid), anchor=False)
    st.caption(md(" · ".join(facts)))
    st.page_link(PAGE_TIMELINE, label="Open in the timeline", icon="🎞️", query_params={"session": sid})
    last = row["max_seq"]
    if last is None:
        st.caption("Waiting for the first step…")
        return
    lines = []
    for _, step in store.step_feed(sid, limit=TAIL, newest=True):  # the API stream's feed: the newest stored, in storing order
        when = f"`{step.timestamp.strftime('%H:%M:%S')}` " if step.timestamp else ""
        what = step_label(step.type) + (f" · {step.tool_name}" if step.tool_name else "")
        flag = " ❗" if step.type == "error" or step.status == "error" else ""
        text = short(step.content or step.error_class, 100)
        lines.append(f"{when}**{step.seq}** {md(what)}{flag}" + (f" — {md(text)}" if text else ""))
    st.markdown("  \n".join(lines))


@st.fragment(run_every=REFRESH_S)
def live_panel() -> None:
    """Redrawn every REFRESH_S seconds without reloading the page."""
    store = get_store()
    expire_idle(store)
    render_live(store)

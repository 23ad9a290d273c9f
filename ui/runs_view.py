"""The runs list: a filter bar bound to the URL, a one-line summary, one page of runs."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta

import streamlit as st

from replay_core.events import SessionStatus
from replay_core.storage.search import plain
from replay_core.storage.store import SessionFilter, Store

from .common import HAS_LABELS, REVIEW_CHOICES, REVIEW_LABELS, STATUS_LABELS, fmt_duration, status_label, url_choice

PAGE_SIZE = 25
DIMENSIONS = (
    ("model", "Model"),
    ("agent_id", "Agent"),
    ("workflow", "Workflow"),
    ("environment", "Environment"),
    ("agent_version", "Version"),
)


@st.cache_data(ttl=60, show_spinner=False)
def _choices(url: str, column: str) -> list[str]:
    from .common import get_store

    store = get_store()
    if column == "tags":
        return sorted({t for tags in store.distinct_values("tags") for t in (tags or [])})
    return store.distinct_values(column)


def _pick(label: str, key: str, options: list[str], format_func=str) -> str | None:
    return url_choice(label, key, options, format_func=format_func, placeholder="Any")


def _day(value: date | None, *, end: bool) -> datetime | None:
    if value is None:
        return None
    return datetime.combine(value + timedelta(days=1) if end else value, time(), UTC)


def filter_bar(store: Store) -> SessionFilter:
    """The sidebar filters; every one is in the URL, so a filtered list can be shared."""
    more = ("environment", "agent_version", "tag", "has", "failed_tool", "error_class", "source")
    with st.sidebar:
        st.header("Filter runs")
        q = st.text_input("Search step content", key="q", bind="query-params", placeholder="e.g. timeout, refund")
        status = _pick("Status", "status", [s.value for s in SessionStatus], lambda s: STATUS_LABELS.get(s, s))
        review = _pick("Review", "review", list(REVIEW_CHOICES), REVIEW_CHOICES.get)
        dims = {key: _pick(label, key, _choices(store.url, key)) for key, label in DIMENSIONS[:3]}
        since = st.date_input("Started on or after", value=None, key="since", bind="query-params")
        until = st.date_input("Started on or before", value=None, key="until", bind="query-params")
        with st.expander("More filters", expanded=any(st.query_params.get(k) for k in more)):
            dims |= {key: _pick(label, key, _choices(store.url, key)) for key, label in DIMENSIONS[3:]}
            tag = _pick("Tag", "tag", _choices(store.url, "tags"))
            has = _pick("Runs with", "has", list(HAS_LABELS), HAS_LABELS.get)
            failed_tool = st.text_input("A failed call to the tool", key="failed_tool", bind="query-params",
                                        placeholder="e.g. run_tests")
            error_class = st.text_input("Error class", key="error_class", bind="query-params", placeholder="e.g. TimeoutError")
            source = _pick("Source", "source", _choices(store.url, "source"))
    return SessionFilter(status=status, review=review, tag=tag, text=(q or "").strip() or None, has=has, source=source,
                         failed_tool=(failed_tool or "").strip() or None, error_class=(error_class or "").strip() or None,
                         since=_day(since, end=False), until=_day(until, end=True), **dims)


def runs_summary(store: Store, flt: SessionFilter, total: int) -> str:
    """'18 runs: ✅ 11 succeeded · ❌ 4 failed · …', counted in the database."""
    parts = []
    for status in SessionStatus:
        if flt.status and flt.status != status.value:
            continue
        n = total if flt.status else store.count_sessions(replace(flt, status=status.value))
        if n:
            parts.append(f"{status_label(status.value).split(' ')[0]} {n} {status.value}")
    noun = "run" if total == 1 else "runs"
    return f"**{total} {noun}**: " + " · ".join(parts)


def _review_of(store: Store, session_id: str) -> str:
    notes = [a for a in store.annotations(session_id) if a["event_id"] is None]
    return REVIEW_LABELS.get(notes[-1]["label"], "") if notes else ""


def search_matches(store: Store, flt: SessionFilter, rows: list[dict]) -> list[dict]:
    """With a search, a "Matched step" column: each run's first matching step and its snippet,
    plain text in a table cell (matches in «»; never markdown), or "(its name)"."""
    if not flt.text:
        return rows
    matches = store.search_matches([r["id"] for r in rows], flt.text)
    for row in rows:
        hit = matches.get(row["id"])
        row["Matched step"] = f"{hit['seq']}: {plain(hit['snippet'])}" if hit else "(its name)"
    return rows


def _rows(store: Store, flt: SessionFilter, page: int) -> list[dict]:
    rows = store.list_sessions(flt, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
    return search_matches(store, flt, [
        {
            "id": r["id"],
            "Status": status_label(r["status"]),
            "Run": r["name"] or r["id"],
            "Started": r["started_at"],
            "Duration": fmt_duration(r["duration_s"]),
            "Steps": r["steps"],
            "Tokens": r["tokens_in"] + r["tokens_out"],  # the Store's run totals (steps, else the source's)
            "Cost": r["cost_usd"],
            "Model": r["model"],
            "Agent": r["agent_id"],
            "Workflow": r["workflow"],
            "Environment": r["environment"],
            "Version": r["agent_version"],
            "Tags": ", ".join(r["tags"] or []),
            "Review": _review_of(store, r["id"]),
        }
        for r in rows
    ])


def runs_table(store: Store, flt: SessionFilter, total: int) -> str | None:
    """One page of runs; returns the id of the run the user selected, if any."""
    pages = max(1, -(-total // PAGE_SIZE))
    page = st.pagination(pages, key="page", bind="query-params") if pages > 1 else 1
    rows = _rows(store, flt, page)
    st.caption("Select a row to open its timeline.")
    event = st.dataframe(
        rows,
        hide_index=True,
        key="runs_table",
        on_select="rerun",
        selection_mode="single-row",
        column_order=[k for k in rows[0] if k != "id"] if rows else None,
        column_config={
            "Started": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm"),
            "Cost": st.column_config.NumberColumn(format="$%.4f"),
            "Steps": st.column_config.NumberColumn(format="%d"),
        },
    )
    selected = event.selection.rows if event else []
    return rows[selected[0]]["id"] if selected and selected[0] < len(rows) else None

"""The store, labels and the filter bar shared by every page."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import streamlit as st

from replay_core.store import SessionFilter, Store

# Query parameter names a page understands, so one page can deep-link to another.
FILTER_PARAMS = ("status", "model", "agent_id", "workflow", "environment", "agent_version", "tag", "since", "until", "q", "review")

STEP_LABELS = {
    "think": ("💭", "Thought"),
    "tool_call": ("🔧", "Tool call"),
    "tool_result": ("📦", "Tool result"),
    "observation": ("👀", "Observation"),
    "decision": ("✅", "Decision"),
    "error": ("❌", "Error"),
    "input": ("💬", "Input"),
    "span": ("🧩", "Group"),
}
STATUS_LABELS = {"succeeded": "✅ succeeded", "failed": "❌ failed", "running": "⏳ running", "incomplete": "⚠️ incomplete"}


@st.cache_resource
def get_store() -> Store:
    """One Store (engine and pool) per app process."""
    return Store()


def step_label(kind: str) -> str:
    icon, label = STEP_LABELS.get(kind, ("•", kind))
    return f"{icon} {label}"


def _parse_day(value: str | None) -> date | None:
    try:
        return date.fromisoformat(value) if value else None
    except ValueError:
        return None


def filter_from_params(params) -> SessionFilter:
    """A SessionFilter from URL query parameters (see FILTER_PARAMS)."""
    since, until = _parse_day(params.get("since")), _parse_day(params.get("until"))
    return SessionFilter(
        status=params.get("status") or None,
        model=params.get("model") or None,
        agent_id=params.get("agent_id") or None,
        workflow=params.get("workflow") or None,
        environment=params.get("environment") or None,
        agent_version=params.get("agent_version") or None,
        tag=params.get("tag") or None,
        text=params.get("q") or None,
        review=params.get("review") or None,
        since=datetime.combine(since, time(), UTC) if since else None,
        until=datetime.combine(until + timedelta(days=1), time(), UTC) if until else None,
    )


def filter_params(flt: SessionFilter) -> dict[str, str]:
    """The inverse of filter_from_params, for links to the runs list."""
    out = {k: getattr(flt, k) for k in ("status", "model", "agent_id", "workflow", "environment", "agent_version", "tag", "review")}
    out["q"] = flt.text
    if flt.since:
        out["since"] = flt.since.date().isoformat()
    if flt.until:
        out["until"] = (flt.until - timedelta(days=1)).date().isoformat()
    return {k: str(v) for k, v in out.items() if v}


def current_role() -> str:
    """'editor' or 'viewer'. The login gate in streamlit_app.py sets it; with no login configured everyone edits."""
    return st.session_state.get("role", "editor")

"""The runs list: a filter bar bound to the URL, a one-line summary, one page of runs."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import streamlit as st

from replay_core.events import SessionStatus
from replay_core.storage.search import plain
from replay_core.storage.store import SessionFilter, Store
from replay_core.understand.replay_outcome import replay_outcome

from . import components
from .common import (
    FILTER_PARAMS,
    HAS_LABELS,
    PAGE_THREADS,
    REVIEW_CHOICES,
    REVIEW_LABELS,
    STATUS_LABELS,
    clicked_row,
    filter_from_params,
    fmt_cost,
    fmt_duration,
    md,
    queue_verdicts,
    short,
    status_label,
)

PAGE_SIZE = 25
OUTCOME_CHARS = 110  # what three wrapped lines of the Outcome column hold
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


def clear_filters() -> None:
    """Every filter off: the parameters go, and the widgets follow the link on the next run."""
    for key in (*FILTER_PARAMS, "page"):
        st.query_params.pop(key, None)


MORE_FILTERS = ("environment", "agent_version", "user_id", "thread_id", "tag", "has", "failed_tool", "error_class", "source")


def _iso_day(raw: str) -> str | None:
    """`raw` as an ISO date, None when it is none."""
    try:
        return date.fromisoformat(raw).isoformat()
    except ValueError:
        return None


def set_filter(key: str, value) -> None:
    """One filter changed in the bar: into the link (a value "" or False lets it go; a date must be one), back to
    the first page. What the browser sends is checked: a key that is no filter changes nothing."""
    if key not in FILTER_PARAMS:
        return
    raw = ("1" if value is True else None) if key == "replays" else str(value or "").strip() or None
    if raw is not None and key in ("since", "until"):
        raw = _iso_day(raw)
    if raw is None:
        st.query_params.pop(key, None)
    else:
        st.query_params[key] = raw
    st.query_params.pop("page", None)


def filter_bar(store: Store) -> SessionFilter:
    """The sidebar filters. Each lives in the URL (so a filtered list can be shared), each can be
    set back to Any or emptied, and the filter is read back from the URL, so what the chips say,
    what the fields show and what is counted are one thing whichever way it was set. One form drawn
    by the browser (ui/components.filters)."""
    params = st.query_params

    def text(key: str, label: str, placeholder: str) -> dict:
        return {"key": key, "kind": "text", "label": label, "placeholder": placeholder, "value": params.get(key) or ""}

    def choice(key: str, label: str, options: list[str], format_func=str) -> dict:
        value = params.get(key)
        return {
            "key": key,
            "kind": "choice",
            "label": label,
            "value": value if value in options else "",
            "options": [["", "Any"], *([o, format_func(o)] for o in options)],
        }

    def day(key: str, label: str) -> dict:  # a bad date in the link is ignored
        return {"key": key, "kind": "date", "label": label, "value": _iso_day(params.get(key) or "") or ""}

    fields = [
        text("q", "Search step content", "e.g. timeout, refund"),
        choice("status", "Status", [s.value for s in SessionStatus], lambda s: STATUS_LABELS.get(s, s)),
        choice("review", "Review", list(REVIEW_CHOICES), REVIEW_CHOICES.get),
        *(choice(key, label, _choices(store.url, key)) for key, label in DIMENSIONS),
        day("since", "Started on or after"),
        day("until", "Started on or before"),
        choice("tag", "Tag", _choices(store.url, "tags")),
        choice("has", "Runs with", list(HAS_LABELS), HAS_LABELS.get),
        text("failed_tool", "A failed call to the tool", "e.g. run_tests"),
        text("error_class", "Error class", "e.g. TimeoutError"),
        choice("source", "Source", _choices(store.url, "source")),
        text("user_id", "User", "e.g. customer-22"),  # typed, not picked: a product may have thousands
        text("thread_id", "Thread (conversation)", "e.g. support-7734"),
        {
            "key": "replays",
            "kind": "toggle",
            "label": "Include replays and experiments",
            "value": params.get("replays") in ("1", "true", "yes"),
            "help": "Off: only the agent's own runs are listed and counted. On: what-if replays and experiments' runs too, "
            "each with its outcome against the run it replays.",
        },
    ]
    with st.sidebar:
        components.filters(
            fields,
            more=list(MORE_FILTERS),
            active=bool(active_filters(params)),
            key="filters",
            on_set=set_filter,
            on_clear=clear_filters,
        )
    return filter_from_params(params.to_dict())


CHIP_NAMES = {
    "q": "Search",
    "status": "Status",
    "review": "Review",
    "model": "Model",
    "agent_id": "Agent",
    "workflow": "Workflow",
    "environment": "Environment",
    "agent_version": "Version",
    "user_id": "User",
    "thread_id": "Thread",
    "tag": "Tag",
    "since": "From",
    "until": "Until",
    "has": "With",
    "failed_tool": "Failed tool",
    "error_class": "Error class",
    "source": "Source",
    "replays": "Including replays and experiments",
}
CHIP_VALUES = {"status": status_label, "review": REVIEW_CHOICES.get, "has": HAS_LABELS.get, "q": lambda v: f"“{v}”"}


def active_filters(params) -> list[tuple[str, str]]:
    """(parameter, chip text) for each filter the URL sets, valid or not, in the filter bar's order."""
    out = []
    for key in CHIP_NAMES:
        value = (params.get(key) or "").strip()
        if not value:
            continue
        if key == "replays":
            out.append((key, CHIP_NAMES[key]))
            continue
        shown = (CHIP_VALUES.get(key) or str)(value) or value
        out.append((key, f"{CHIP_NAMES[key]}: {shown}"))
    return out


def _drop(key: str) -> None:
    st.query_params.pop(key, None)
    st.query_params.pop("page", None)


def filter_chips() -> None:
    """The active filters above the results, each removable, however it was set (sidebar, link, chart)."""
    chips = active_filters(st.query_params)
    if not chips:
        return
    with st.container(horizontal=True, key="filter_chips"):
        for key, text in chips:
            st.button(md(text), key=f"chip_{key}", icon=":material/close:", on_click=_drop, args=(key,))
        if len(chips) > 1:
            st.button("Clear all", key="chips_clear_all", type="tertiary", on_click=clear_filters)


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


def _review_of(store: Store, session_id: str, in_queues: list[dict]) -> str:
    """The run's latest quick verdict, then what review queues said of it."""
    notes = [a for a in store.annotations(session_id) if a["event_id"] is None]
    parts = [REVIEW_LABELS.get(notes[-1]["label"], notes[-1]["label"])] if notes else []
    parts += [f"“{v['verdict']}” ({v['queue']})" for v in in_queues[-2:]]
    return " · ".join(parts) or "—"


def _dash(value) -> str:
    return "—" if value is None or value == "" else str(value)


def outcome_of(store: Store, row: dict) -> str:
    """Why a run ended as it did: its error class and outcome; for a replay, what the replay did
    against its original (reproduced, diverged at step 8, could not start: …)."""
    if row.get("replay_of"):
        return replay_outcome(store, row).text
    parts = [p for p in (row.get("error_class"), short(row.get("outcome"), OUTCOME_CHARS)) if p]
    return ": ".join(dict.fromkeys(parts)) or "—"


def matched_steps(store: Store, flt: SessionFilter, ids: list[str]) -> dict[str, str]:
    """For a text search, the "Matched step" column: each run's first matching step and its snippet,
    plain text in a table cell (matches in «»; never markdown), or "(its name)" when the name matched."""
    matches = store.search_matches(ids, flt.text)
    return {sid: f"{hit['seq']}: {plain(hit['snippet'])}" if (hit := matches.get(sid)) else "(its name)" for sid in ids}


def _rows(store: Store, flt: SessionFilter, page: int) -> list[dict]:
    rows = store.list_sessions(flt, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
    snippets = matched_steps(store, flt, [r["id"] for r in rows]) if flt.text else {}
    in_queues = queue_verdicts(store, [r["id"] for r in rows])
    return [
        {
            "id": r["id"],
            "Status": "🔁 replay" if r.get("replay_of") else status_label(r["status"]),
            "Run": r["name"] or r["id"],
            "Outcome": outcome_of(store, r),
            "Started": r["started_at"],
            **({"Matched step": snippets.get(r["id"], "—")} if snippets else {}),
            "Steps": r["steps"],
            "Tokens": r["tokens_in"] + r["tokens_out"],  # the Store's run totals (steps, else the source's)
            "Cost": fmt_cost(r["cost_usd"]),
            "Review": _review_of(store, r["id"], in_queues.get(r["id"], [])),
            "Duration": fmt_duration(r["duration_s"]),
            "Id": r["id"],  # two runs with one name, started the same minute, still differ here
            "Model": _dash(r["model"]),
            "Agent": _dash(r["agent_id"]),
            "Workflow": _dash(r["workflow"]),
            "Environment": _dash(r["environment"]),
            "Version": _dash(r["agent_version"]),
            "User": _dash(r["user_id"]),
            "Thread": _dash(r["thread_id"]),  # a click here opens the conversation
            "Tags": ", ".join(r["tags"] or []) or "—",
            "thread": r["thread_id"] or "",  # what a click on the Thread cell opens
        }
        for r in rows
    ]


# Widths that put the cost on screen at 1440 px (sidebar open) without scrolling the table sideways;
# the columns after it are there by scrolling.
WIDE_COLUMNS = {
    "Status": st.column_config.TextColumn(width=110),
    "Run": st.column_config.TextColumn(width=230),
    "Outcome": st.column_config.TextColumn(width=270),
    "Started": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm", width=122),
    "Steps": st.column_config.NumberColumn(format="%d", width=55),
    "Tokens": st.column_config.NumberColumn(format="localized", width=70),
    "Cost": st.column_config.TextColumn(width=70),
    "Id": st.column_config.TextColumn(width=130),
}
NARROW = ("Status", "Run", "Outcome", "Started")  # what a phone shows: the columns that tell runs apart and why they ended
# Two drawings of one page of runs: the full table, and on a phone (CSS below) the four columns above
# in widths that fit 390 px. A dataframe is drawn on a canvas, so its columns cannot reflow by themselves.
RESPONSIVE_CSS = """<style>
@media (max-width: 640px) { .st-key-runs_wide { display: none !important; } }
@media (min-width: 641px) { .st-key-runs_narrow { display: none !important; } }
</style>"""


ROW_PX = 66  # over 4rem: the grid wraps a long name or outcome onto a second and third line instead of cutting it
HEADER_PX = 38


def _table(rows: list[dict], key: str, columns: list[str], config: dict) -> tuple[dict, str | None] | None:
    """The rows, every one of the page shown (no scroll box inside the page); the row a click picked (common.clicked_row)."""
    return clicked_row(rows, key, columns, config, row_height=ROW_PX, height=HEADER_PX + ROW_PX * max(1, len(rows)) + 2)


def runs_table(store: Store, flt: SessionFilter, total: int) -> str | None:
    """One page of runs; returns the id of the run the user selected, if any (a click on its thread opens the thread)."""
    pages = max(1, -(-total // PAGE_SIZE))
    page = st.pagination(pages, key="page", bind="query-params") if pages > 1 else 1
    rows = _rows(store, flt, page)
    st.caption("Click a run to open its timeline, or its thread to see the conversation's runs in order.")
    if flt.thread_id:
        conversation = {"thread": flt.thread_id}
        st.page_link(PAGE_THREADS, label="This conversation, in order", icon=":material/forum:", query_params=conversation)
    st.html(RESPONSIVE_CSS)
    with st.container(key="runs_wide"):
        chosen = _table(
            rows,
            "runs_table",
            [k for k in rows[0] if k not in ("id", "thread")] if rows else None,
            WIDE_COLUMNS,
        )
    with st.container(key="runs_narrow"):
        chosen = (
            _table(
                rows,
                "runs_table_narrow",
                list(NARROW),
                {
                    "Status": st.column_config.TextColumn(width=58),
                    "Run": st.column_config.TextColumn(width=104),
                    "Outcome": st.column_config.TextColumn(width=82),
                    "Started": st.column_config.DatetimeColumn(format="MM-DD HH:mm", width=80),
                },
            )
            or chosen
        )
    if chosen is None:
        return None
    row, column = chosen
    if column == "Thread" and row["thread"]:
        st.switch_page(PAGE_THREADS, query_params={"thread": row["thread"]})
    return row["id"]


def dataset_form(store: Store, flt: SessionFilter, total: int) -> None:
    """Editors: the runs listed (this filter, every page) as an experiments dataset, each judged by its own outcome."""
    from replay_core.whatif import dataset as ds

    with st.expander(f"Make a dataset of {'this run' if total == 1 else f'these {total:,} runs'} (for experiments)"):
        name = st.text_input("Dataset name", key="runs_ds_name", placeholder="failed checkout runs this week")
        if st.button("Make the dataset", key="runs_ds_make", disabled=not (name or "").strip()):
            try:
                made = ds.dataset_from_filter(store, name, flt)
            except ds.DatasetError as exc:
                st.error(md(str(exc)))
            else:
                st.success(
                    md(f"Dataset “{made['name']}” version {made['version']}: {made['cases']} cases. Open Experiments to run it.")
                )

"""The store, labels, formats and the filter parameters shared by every page."""

from __future__ import annotations

import importlib
import logging
import math
import re
import threading
import time as _time
from collections.abc import Iterable
from datetime import datetime, timedelta
from functools import cache

import streamlit as st

from replay_core import config
from replay_core.storage.actor import Actor
from replay_core.storage.filter_params import session_filter
from replay_core.storage.store import SessionFilter, Store
from replay_core.understand.replay_outcome import replay_outcome
from replay_core.understand.structure import Structure, build_structure
from replay_core.understand.timeline import Timeline, open_timeline

# Query parameter names a page understands, so one page can deep-link to another.
FILTER_PARAMS = (
    "status",
    "model",
    "agent_id",
    "workflow",
    "environment",
    "agent_version",
    "user_id",
    "thread_id",
    "tag",
    "since",
    "until",
    "q",
    "review",
    "failed_tool",
    "error_class",
    "has",  # these three: analytics drill-downs (SessionFilter)
    "source",
    "replays",
)  # replays=1: count what-if replays and experiments' runs too

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
STATUS_LABELS = {
    "succeeded": "✅ succeeded",
    "failed": "❌ failed",
    "running": "⏳ running",
    "incomplete": "⚠️ incomplete",
    "unknown": "❔ outcome not recorded",
}
REVIEW_LABELS = {"good": "👍 Good", "bad": "👎 Bad", "needs_attention": "🚩 Needs attention"}
REVIEW_CHOICES = {**REVIEW_LABELS, "unreviewed": "Not reviewed yet"}
HAS_LABELS = {
    "error": "Errors",
    "retry": "Retries",
    "fallback": "A fallback to the agent",
    "intervention": "Human intervention",
    "loop": "A loop (the same call repeated)",
}
PAGE_TIMELINE = "pages/timeline.py"
PAGE_RUNS = "pages/runs.py"
PAGE_THREADS = "pages/threads.py"
PAGE_QUEUES = "pages/queues.py"
PAGE_COMPARE = "pages/compare.py"
PAGE_WHATIF = "pages/whatif.py"
PAGE_PLAYGROUND = "pages/playground.py"
EXPIRE_EVERY_S = 30.0

_last_expiry: dict[str, float] = {}


@st.cache_resource(show_spinner=False)
def _store_for(url: str) -> Store:
    return Store(url)


def get_store() -> Store:
    """One Store (engine and pool) per database URL and app process."""
    return _store_for(config.database_url())


WARM_UP = ("altair", "polars", "replay_core.understand.analytics", "replay_core.understand.explain")


@cache
def warm_up() -> threading.Thread:
    """What the analytics page imports that no other first page does (Altair, polars, the metrics and
    failure patterns: about half a CPU second here), imported in a thread once a first page is drawn:
    the first analytics view then does not wait for it, nor does the first page after a start; a page
    that needs one sooner waits on Python's import lock for this same import, never a second one."""
    thread = threading.Thread(target=_warm_up, name="warm-up", daemon=True)
    thread.start()
    return thread


def _warm_up() -> None:
    for name in WARM_UP:
        _import(name)
    # Altair's first spec compiles its shorthand patterns and loads narwhals' polars side: 60–70 ms of the first
    # analytics view's server time, spent here on one small chart of the page's kind instead
    import altair as alt
    import polars as pl

    frame = pl.DataFrame({"day": ["2026-01-01"], "status": ["succeeded"], "runs": [1]})
    try:
        alt.Chart(frame).mark_bar().encode(
            x=alt.X("day:T", timeUnit="utcyearmonthdate"),
            y=alt.Y("runs:Q", axis=alt.Axis(format="d")),
            color=alt.Color("status:N"),
            tooltip=[alt.Tooltip("day:T"), alt.Tooltip("runs")],
        ).add_params(alt.selection_point(name="pick", fields=["day"], on="click")).to_dict(validate=False)
    except Exception:  # only time is lost: Altair reads a pandas that another thread may be importing meanwhile
        logging.getLogger(__name__).debug("warming Altair up failed", exc_info=True)


def _import(name: str, tries: int = 3) -> None:
    """Import `name`, again after a moment where Python found an import deadlock: a page's own thread (or an
    early open) importing the same package in another order holds a lock this import waits on, and one of
    the two is told so (a RuntimeError); once the other is done, the import goes through."""
    for attempt in range(tries):
        try:
            importlib.import_module(name)
            return
        except RuntimeError:
            if attempt == tries - 1:
                raise
            logging.getLogger(__name__).debug("warming up %s met an import deadlock; again", name, exc_info=True)
            _time.sleep(0.1)


def clicked_row(rows: list[dict], key: str, columns: list[str] | None, config: dict, **layout) -> tuple[dict, str | None] | None:
    """A table whose rows open on a click: the row a click on any of its cells (its name, say) or on its checkbox
    picked, with the clicked cell's column (None for the checkbox); `layout`: st.dataframe's sizes."""
    event = st.dataframe(
        rows,
        hide_index=True,
        key=key,
        on_select="rerun",
        selection_mode=["single-row", "single-cell"],
        column_order=columns,
        column_config=config,
        **layout,
    )
    selection = event.selection if event else None
    cells = list(selection.cells) if selection else []
    picked = [*((row, None) for row in (selection.rows if selection else [])), *((cell[0], cell[1]) for cell in cells)]
    return (rows[picked[0][0]], picked[0][1]) if picked and picked[0][0] < len(rows) else None


def expire_idle(store: Store) -> None:
    """Mark silent runs incomplete, at most every EXPIRE_EVERY_S seconds per database."""
    now = _time.monotonic()
    if now - _last_expiry.get(store.url, -EXPIRE_EVERY_S) >= EXPIRE_EVERY_S:
        _last_expiry[store.url] = now
        store.expire_idle()


@st.cache_resource(max_entries=8, show_spinner="Opening the run…")
def _cached_run(url: str, session_id: str, stamp: tuple) -> tuple[Timeline, Structure]:
    timeline = open_timeline(_store_for(url), session_id)
    return timeline, build_structure(timeline.columns)


def run_stamp(row: dict) -> tuple:
    """What changes when a run does (new steps, a new status or outcome): what a view of it is cached under."""
    return row["steps"], row["max_seq"], row["last_event_at"], row["status"], row["ended_at"], row["outcome"]


def load_run(store: Store, session_id: str) -> tuple[Timeline, Structure] | None:
    """The opened session and its nesting, computed once per version of it
    (new steps or a new status reopen it); None when there is no such session."""
    row = store.get_session(session_id)
    if row is None:
        return None
    timeline, structure = _cached_run(store.url, session_id, run_stamp(row))
    timeline.session.update(row)
    return timeline, structure


# A comparison holds both runs' steps: two 50,000-step runs are ~225 MB (a 50-step pair, well under 1 MB).
@st.cache_resource(max_entries=4, show_spinner="Comparing the runs…")
def _cached_comparison(url: str, a_id: str, b_id: str, include: tuple[str, ...], whole: bool, stamps: tuple):
    from replay_core.understand.compare import compare  # rapidfuzz and the rest: not on every page's start

    return compare(_store_for(url), a_id, b_id, include=include, whole=whole)


def load_comparison(store: Store, a_id: str, b_id: str, *, include: Iterable[str] = (), whole: bool = False):
    """compare(), once per version of both runs and per options: every click on the compare page reran it
    (two seconds a click for two 50,000-step runs). KeyError for a run that is not there."""
    rows = {sid: store.get_session(sid) for sid in (a_id, b_id)}
    missing = [sid for sid, row in rows.items() if row is None]
    if missing:
        raise KeyError(missing[0])
    stamps = tuple(run_stamp(row) for row in rows.values())
    return _cached_comparison(store.url, a_id, b_id, tuple(include), whole, stamps)


def load_timeline(store: Store, session_id: str) -> Timeline | None:
    run = load_run(store, session_id)
    return run[0] if run else None


def step_label(kind: str) -> str:
    icon, label = STEP_LABELS.get(kind, ("•", kind))
    return f"{icon} {label}"


def ended_label(store: Store, row: dict) -> str:
    """How a run ended: its status, or for a replay what the replay did (its session status would read
    a model's "Stopping here" as ✅ succeeded)."""
    told = replay_outcome(store, row)
    return status_label(row.get("status")) if told is None else told.status


def status_label(status: str | None) -> str:
    return STATUS_LABELS.get(status or "running", status or "unknown")


def run_label(row: dict) -> str:
    """A run as a picker lists it: its name (else its id), status and start."""
    return f"{row['name'] or row['id']} · {status_label(row['status'])} · {fmt_when(row['started_at'])}"


def with_linked_runs(store: Store, rows: list[dict], *keys: str) -> list[dict]:
    """`rows`, with each run the link names (`?key=<id>`) put first when it is not among them."""
    for key in keys:
        wanted = st.query_params.get(key)
        if wanted and wanted not in {r["id"] for r in rows} and (row := store.get_session(wanted)) is not None:
            rows.insert(0, row)
    return rows


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$:=^])")
# Markdown's autolinking finds bare URLs, "www." and e-mail addresses in the text itself, after
# escapes are undone: an invisible word joiner (U+2060) inside each keeps them plain text.
_AUTOLINKED = re.compile(r"(?i)(https?|ftp|mailto|xmpp)(?=:)|(www)(?=\.)|(@)")
WORD_JOINER = "\u2060"


def md(text: object) -> str:
    """Text from a trace made safe for st.markdown (and every label, title and caption, which are
    markdown too): every markup character is escaped with a backslash, and URLs, "www." and
    e-mail addresses are kept from becoming links. What is shown is the text as it was stored."""
    text = _AUTOLINKED.sub(lambda m: m.group(0) + WORD_JOINER, str(text))
    return _MD_SPECIAL.sub(r"\\\1", text)


def short(text: str | None, limit: int = 90) -> str:
    """The first line of a text, cut at `limit` characters."""
    line = (text or "").strip().split("\n", 1)[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"


def fmt_cost(value: float | None, unknown: str = "—") -> str:
    if value is None:
        return unknown
    if 0 < value < 0.0001:  # one small model call: three significant digits, not a zero
        return f"${value:.{2 - math.floor(math.log10(value))}f}".rstrip("0")
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def fmt_when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value else "—"


def note_line(note: dict, where: str = "", *, markdown: bool = True) -> str:
    """'👎 Bad on step 18 — Ana: ignored the failing tests · 2026-05-01 09:00 UTC', as markdown (what was
    typed escaped) or, with `markdown=False`, as plain text for a component that sets it as text."""
    escape = md if markdown else str
    who = escape(note.get("author") or "someone")
    text = f": {escape(note['text'])}" if note.get("text") else ""
    place = f" {where}" if where else ""
    return f"{REVIEW_LABELS.get(note['label'], note['label'])}{place} — {who}{text} · {fmt_when(note['created_at'])}"


def queue_verdicts(store: Store, session_ids: Iterable[str]) -> dict[str, list[dict]]:
    """The verdicts review queues gave these runs, each {"verdict", "reviewer", "note", "queue", "created_at"},
    oldest first: what a reviewer said in a queue is shown wherever the run's review is (Runs, Review)."""
    from replay_core.team import queues

    wanted = set(session_ids)
    out: dict[str, list[dict]] = {}
    for q in queues.list_queues(store) if wanted else []:
        if not q.get("reviews"):
            continue
        runs = {it["id"]: it["session_id"] for it in store.queue_items(q["id"]) if it["session_id"] in wanted}
        for r in store.queue_reviews(q["id"]):
            sid = runs.get(r["item_id"])
            if sid is not None and r["verdict"] is not None:
                out.setdefault(sid, []).append(
                    {k: r[k] for k in ("verdict", "reviewer", "note", "created_at")} | {"queue": q["name"]}
                )
    for given in out.values():
        given.sort(key=lambda v: v["created_at"])
    return out


def queue_verdict_line(v: dict, *, markdown: bool = True) -> str:
    """'“Bad” in queue failed runs — Ana: ignored the tests · 2026-05-01 09:00 UTC'."""
    escape = md if markdown else str
    note = f": {escape(v['note'])}" if v.get("note") else ""
    return f"“{escape(v['verdict'])}” in queue {escape(v['queue'])} — {escape(v['reviewer'])}{note} · {fmt_when(v['created_at'])}"


def filter_from_params(params) -> SessionFilter:
    """A SessionFilter from URL query parameters (see FILTER_PARAMS); bad values are ignored."""
    return session_filter(params, strict=False)


def filter_params(flt: SessionFilter) -> dict[str, str]:
    """The inverse of filter_from_params, for links to the runs list."""
    out = {k: getattr(flt, k) for k in FILTER_PARAMS if k not in ("since", "until", "q", "replays")}
    out["q"] = flt.text
    if flt.since:
        out["since"] = flt.since.date().isoformat()
    if flt.until:
        out["until"] = (flt.until - timedelta(days=1)).date().isoformat()
    if flt.include_replays:
        out["replays"] = "1"
    return {k: str(v) for k, v in out.items() if v}


def current_role() -> str:
    """'editor', 'reviewer' or 'viewer'. The login gate in streamlit_app.py sets it; with no login configured everyone edits."""
    return st.session_state.get("role", "editor")


def client_origin() -> str:
    """The visitor's address, for the audit log (the proxy's, behind one)."""
    try:
        ip = st.context.ip_address
    except AttributeError:
        ip = None
    return ip if isinstance(ip, str) and ip else "browser"  # AppTest has no client


def current_actor() -> Actor:
    """Who is using this browser session, with their role: what the library's guarded functions check."""
    who = verified_name() or st.session_state.get("who") or reviewer_name() or f"{current_role()} (no sign-in)"
    return Actor(who, current_role(), client_origin())


SIGNED_NAME = "signed_name"  # the person a named token signed in as (ui/login.py)


def verified_name() -> str | None:
    """The person this browser session signed in as (single sign-on, or a named token), None for a shared
    password or no door: a name that comes from a credential, never from a box."""
    try:
        if st.user.is_logged_in:
            return st.user.get("name") or st.user.get("email")
    except (AttributeError, KeyError):
        pass
    return st.session_state.get(SIGNED_NAME) or None


def reviewer_name() -> str | None:
    """Who is writing a note: the signed-in person, else the name typed on this browser session."""
    return verified_name() or st.session_state.get("reviewer") or None


def _url_bound(make, key: str, current, to_param, on_change=None, **kwargs):
    """A widget whose value lives in `?key=` (the URL is the truth): a changed link resets the
    widget, and a widget set back to its empty value removes the parameter, so it stays cleared."""
    widget = f"_url_{key}"
    if widget in st.session_state and st.session_state[widget] != current:
        # the link changed under the widget: follow it, through the Session State API so that the browser's
        # widget is told too (dropping the state left it showing its old choice, the page the new one)
        st.session_state[widget] = current

    def sync() -> None:
        raw = to_param(st.session_state[widget])
        if raw is None or raw == "":
            st.query_params.pop(key, None)
        else:
            st.query_params[key] = raw
        if on_change:
            on_change()

    return make(key=widget, on_change=sync, **kwargs)


def url_choice(label: str, key: str, options: list, *, format_func=str, on_change=None, **kwargs):
    """A selectbox whose value lives in `?key=` as the raw option, so links stay readable
    (`bind="query-params"` would put the formatted label in the URL)."""
    wanted = st.query_params.get(key)
    current = wanted if wanted in options else None
    # the choice comes from the widget's state once it has one (a default beside it would be a conflict)
    index = None if current is None or f"_url_{key}" in st.session_state else options.index(current)
    return _url_bound(
        st.selectbox,
        key,
        current,
        lambda v: v,
        on_change,
        label=label,
        options=options,
        index=index,
        format_func=format_func,
        **kwargs,
    )

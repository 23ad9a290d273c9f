"""The analytics dashboard's parts: the period, the headline numbers, the charts (each point opens the
runs behind it, each chart's data downloads as CSV), the failure patterns and the what-if fan-outs."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, time, timedelta
from typing import NoReturn
from urllib.parse import quote

import altair as alt
import polars as pl
import streamlit as st

from replay_core.storage.store import SessionFilter, Store
from replay_core.understand import analytics
from replay_core.understand.explain import failure_patterns
from replay_core.understand.replay_outcome import replay_outcome

from . import components
from .common import PAGE_RUNS, PAGE_TIMELINE, filter_params, fmt_cost, fmt_duration, get_store, md, run_label, status_label

STATUS_COLORS = alt.Scale(
    domain=["succeeded", "failed", "incomplete", "unknown", "running"],
    range=["#2e9e5b", "#d64545", "#e8a33d", "#b0b0b0", "#7a8ca6"],
)
PERIODS = {"7 days": 7, "30 days": 30, "90 days": 90, "All time": None}
PICK = "pick"  # the point-selection parameter of every chart
NONE = "(none)"  # how a missing dimension value is drawn
DRILL = "_analytics_drill"  # the runs a selected point stands for, between two runs of the page


class Chart(alt.Chart):
    """An altair Chart whose spec is not checked against the Vega-Lite JSON schema when drawn:
    the specs are this page's own, the same on every run and drawn by its tests; checking them
    was a quarter of the page's server time."""

    def to_dict(self, validate: bool = False, **kwargs) -> dict:
        return super().to_dict(validate, **kwargs)


@st.cache_data(ttl=60, show_spinner="Crunching runs…")
def _load(url: str, flt_items: tuple, detail: bool, daily: bool = True) -> analytics.RunData:
    return analytics.load(
        get_store(), SessionFilter(**dict(flt_items)), detail=detail, daily=daily
    )  # charts group by day, model, agent; users and threads are read per run


def load(flt: SessionFilter, *, detail: bool = True) -> analytics.RunData:
    """A period's data, computed once a minute at most (keyed by database and filter)."""
    return _load(get_store().url, tuple(asdict(flt).items()), detail)


def load_per_run(flt: SessionFilter) -> analytics.RunData:
    """The period per run (the per-day rollups keep no user or thread), without step latencies."""
    return _load(get_store().url, tuple(asdict(flt).items()), False, False)


PER_RUN_COST_BY = ("user", "thread")
TOP_ACCOUNTS = 20


def previous(flt: SessionFilter) -> analytics.RunData | None:
    """The period of the same length just before `flt`'s, for the headline's changes; None without one."""
    before = analytics.previous_period(flt)
    return load(before, detail=False) if before else None


def period_filter(flt: SessionFilter) -> SessionFilter:
    """The sidebar's dates when set, else whole days back from today (UTC) as picked here."""
    if flt.since or flt.until:
        st.caption("Period: the dates in the sidebar filter.")
        return flt
    choice = st.segmented_control("Period", list(PERIODS), default="30 days", key="period", bind="query-params") or "30 days"
    days = PERIODS[choice]
    if days is None:
        return flt
    today = datetime.combine(datetime.now(UTC).date(), time(), UTC)
    return replace(flt, since=today - timedelta(days=days - 1))


def _count(v: float) -> str:
    return f"{v:,.0f}"


def _pct(v: float) -> str:
    return f"{v:.1%}"


def _time(ms: float) -> str:
    return fmt_duration(ms / 1000)


CARDS = [  # metric, label, value format, a rise is bad
    ("runs", "Runs", _count, False),
    ("success_rate", "Success rate", _pct, False),
    ("p50_ms", "Median run time", _time, True),
    ("p95_ms", "Run time, slowest 5%", _time, True),
    ("cost_usd", "Cost (known)", fmt_cost, True),
    ("tokens_in", "Tokens in", _count, True),
    ("retry_rate", "Runs retrying", _pct, True),
    ("tool_failure_rate", "Tool failures", _pct, True),
    ("fallback_rate", "Agent took over", _pct, True),
]


def _delta(metric: str, fmt, change: float | None) -> str | None:
    if change is None:
        return None
    sign = "-" if change < 0 else "+"
    return f"{change * 100:+.1f} pts" if metric.endswith("_rate") else sign + fmt(abs(change))


def headline(data: analytics.RunData, previous: analytics.RunData | None) -> None:
    """The headline numbers, with the change against the period just before."""
    now = analytics.headline(data)
    changes = {}
    before = analytics.headline(previous) if previous is not None else None
    if before is not None and not (before["runs"][0] if before.height else 0):
        st.caption("No runs in the period of the same length just before: no changes to show.")
        before = previous = None  # against nothing, every number would read as a rise of itself
    if before is not None:
        changes = dict(analytics.change(now, before).select("metric", "change").iter_rows())
    cards = []
    for metric, label, fmt, rise_is_bad in CARDS:
        value, change = now[metric][0], changes.get(metric)
        cards.append(
            components.card(
                label,
                "—" if value is None else fmt(value),
                delta=_delta(metric, fmt, change),
                good=None if not change else (change > 0) != rise_is_bad,
                help="Change against the period of the same length just before." if previous is not None else None,
            )
        )
    components.metrics(cards, key="headline", columns=5)


def drawn(frame: pl.DataFrame) -> pl.DataFrame:
    """Chart-ready: days as ISO dates, missing dimension values named."""
    return frame.with_columns(
        *(pl.col(c).dt.strftime("%Y-%m-%d") for c, t in frame.schema.items() if isinstance(t, pl.Datetime)),
        *(pl.col(c).fill_null(NONE) for c, t in frame.schema.items() if t == pl.String),
    )


def picked(name: str | None, raw):
    """A selected point's value back in the library's terms (a day's start, None for `(none)`)."""
    if name == "day":
        if isinstance(raw, int | float):  # Vega hands temporal values back as epoch milliseconds
            return datetime.fromtimestamp(raw / 1000, UTC)
        return datetime.fromisoformat(str(raw)[:10]).replace(tzinfo=UTC)
    return None if raw == NONE else raw


@dataclass
class Drill:
    """Which fields of a chart's point name the runs behind it: `by` is a dimension of
    analytics.drill_filter; `narrow` maps other point fields to filter fields; `fixed` adds filters."""

    flt: SessionFilter
    by: str | None = None
    narrow: dict[str, str] = field(default_factory=dict)
    fixed: dict[str, str] = field(default_factory=dict)

    @property
    def fields(self) -> list[str]:
        return [*([self.by] if self.by else []), *self.narrow]

    def target(self, point: dict) -> SessionFilter | None:
        narrow = {dest: picked(src, point.get(src)) for src, dest in self.narrow.items()}
        value = picked(self.by, point.get(self.by)) if self.by else None
        return analytics.drill_filter(self.flt, self.by, value, **narrow, **self.fixed)


def show(name: str, title: str, frame: pl.DataFrame, chart: alt.Chart, drill: Drill, *, empty: str, caption: str = "") -> None:
    """One chart with its CSV; selecting a point opens the runs list filtered to the runs behind it."""
    st.subheader(title)
    if frame.is_empty():
        st.caption(empty)
        return
    pick = alt.selection_point(name=PICK, fields=drill.fields, on="click")
    event = st.altair_chart(chart.add_params(pick), on_select="rerun", selection_mode=PICK, key=f"chart_{name}", width="stretch")
    if caption:
        st.caption(caption)
    csv_button(name, frame)
    points = event.selection.get(PICK) if event else None
    if points:
        target = drill.target(points[0])
        if target is None:
            st.info("Runs with no value here cannot be listed by a filter; use the runs list's search instead.")
        else:  # the filter bar is already drawn: set its widgets on the next run, before it is
            st.session_state[DRILL] = target
            st.rerun()


def csv_button(name: str, frame: pl.DataFrame) -> None:
    st.download_button(
        "Download CSV",
        frame.write_csv(),
        file_name=f"{name}.csv",
        mime="text/csv",
        key=f"csv_{name}",
        on_click="ignore",
        icon=":material/download:",
    )


def follow_drill() -> None:
    """A point selected on the last run: open the runs list filtered to the runs behind it."""
    if DRILL in st.session_state:
        open_runs(st.session_state.pop(DRILL))


def open_runs(target: SessionFilter) -> NoReturn:
    """The runs list filtered to `target`: every filter travels in the link (and shows as a chip there)."""
    st.switch_page(PAGE_RUNS, query_params=filter_params(target))


AXIS_TITLES = {
    "runs": "Runs",
    "success_rate": "Success rate",
    "cost_usd": "Cost (USD)",
    "ms": "Step latency (ms)",
    "failure_rate": "Failure rate",
    "errors": "Errors",
    "rate": "Share of runs",
    "runs_with_loops": "Runs with loops",
}
PERCENTILES = {"p50_ms": "Median latency (ms)", "p95_ms": "95th percentile (ms)", "p99_ms": "99th percentile (ms)"}


def over_time(frame: pl.DataFrame, y: str, color: str | None = None, *, rate: bool = False, scale=alt.Undefined) -> alt.Chart:
    """Bars of a count by day, or lines of a rate by day (points to click)."""
    base = Chart(frame)
    chart = base.mark_line(point=alt.OverlayMarkDef(size=90, filled=True)) if rate else base.mark_bar()
    axis = alt.Axis(format=".0%") if rate else alt.Axis(format="d", tickMinStep=1)
    enc = {
        "x": alt.X("day:T", title=None, timeUnit="utcyearmonthdate"),
        "y": alt.Y(f"{y}:Q", axis=axis, title=AXIS_TITLES.get(y, y)),
        "tooltip": [alt.Tooltip("day:T", timeUnit="utcyearmonthdate"), *[alt.Tooltip(c) for c in frame.columns if c != "day"]],
    }
    if color:
        enc["color"] = alt.Color(f"{color}:N", title=None, scale=scale)
    return chart.encode(**enc)


def bars(frame: pl.DataFrame, x: str, y: str, *, fmt: str = ",.0f", sort: str = "-x") -> alt.Chart:
    return (
        Chart(frame)
        .mark_bar()
        .encode(
            y=alt.Y(f"{x}:N", title=None, sort=sort),
            x=alt.X(f"{y}:Q", axis=alt.Axis(format=fmt), title=AXIS_TITLES.get(y, y)),
            tooltip=[alt.Tooltip(c) for c in frame.columns],
        )
    )


PATTERN = "_failure_pattern"  # the failure pattern whose runs are listed
MAX_PATTERNS = 15


@st.cache_data(ttl=60, show_spinner="Explaining failed runs…")
def _patterns(url: str, flt_items: tuple) -> tuple[list, int]:
    return failure_patterns(get_store(), SessionFilter(**dict(flt_items)))


def patterns_section(flt: SessionFilter) -> None:
    """Failed runs grouped by their turning point or the head of their causal chain; a button lists exactly those runs."""
    st.subheader("Failure patterns")
    patterns, skipped = _patterns(get_store().url, tuple(asdict(flt).items()))
    if not patterns:
        st.caption("No failed, incomplete or unknown-outcome runs in this period. 🎉")
        return
    st.caption(
        "Each failed run is explained from what it recorded (no model) and grouped by where it diverged from a "
        "successful run of the same task, else where its causal chain starts."
        + (f" {skipped} older failing runs were left out." if skipped else "")
    )
    for i, pattern in enumerate(patterns[:MAX_PATTERNS]):
        text, action = st.columns([5, 1], vertical_alignment="center")
        text.markdown(md(pattern.sentence))
        if action.button(f"Open {len(pattern.runs)} run{'s' if len(pattern.runs) != 1 else ''}", key=f"pattern_{i}"):
            st.session_state[PATTERN] = pattern.key, pattern.workflow
    if len(patterns) > MAX_PATTERNS:
        st.caption(f"{len(patterns) - MAX_PATTERNS} smaller patterns not shown.")
    chosen = st.session_state.get(PATTERN)
    pattern = next((p for p in patterns if chosen == (p.key, p.workflow)), None)
    if pattern is not None:
        st.markdown(f"**{md(pattern.sentence)}**:")
        for sid in pattern.runs:
            st.page_link(PAGE_TIMELINE, label=sid, icon=":material/timeline:", query_params={"session": sid})


def volume_row(data: analytics.RunData, flt: SessionFilter) -> None:
    """Runs by status and the success rate, by day."""
    left, right = st.columns(2)
    with left:
        volume = analytics.volume(data, "day")
        statuses = ["succeeded", "failed", "incomplete", "unknown", "running"]
        long = volume.select("day", *statuses).unpivot(statuses, index="day", variable_name="status", value_name="runs")
        show(
            "volume",
            "Runs by status",
            drawn(volume),
            over_time(drawn(long.filter(pl.col("runs") > 0)), "runs", "status", scale=STATUS_COLORS),
            Drill(flt, "day", {"status": "status"}),
            empty="No runs.",
        )
    with right:
        rate = drawn(volume.select("day", "runs", "success_rate").drop_nulls("success_rate"))
        show(
            "success_rate",
            "Success rate",
            rate,
            over_time(rate, "success_rate", rate=True),
            Drill(flt, "day"),
            empty="No finished runs yet.",
            caption="Succeeded over finished runs (running ones wait). A point opens that day's runs.",
        )


def cost_row(data: analytics.RunData, flt: SessionFilter) -> None:
    """Step latency by model; cost and tokens by model or agent."""
    left, right = st.columns(2)
    with left:
        latency = analytics.step_latency(data, "model")
        long = latency.unpivot(list(PERCENTILES), index="model", variable_name="percentile", value_name="ms").with_columns(
            pl.col("percentile").replace_strict(PERCENTILES)
        )
        chart = (
            Chart(drawn(long))
            .mark_bar()
            .encode(
                y=alt.Y("model:N", title=None),
                x=alt.X("ms:Q", title=AXIS_TITLES["ms"]),
                yOffset="percentile:N",
                color=alt.Color("percentile:N", title=None),
                tooltip=["model", "percentile", alt.Tooltip("ms", format=",.0f")],
            )
        )
        show("latency", "Step latency by model", drawn(latency), chart, Drill(flt, "model"), empty="No step durations recorded.")
    with right:
        # the widget's own state is dropped while its tab is closed: the choice is kept beside it
        kept = st.session_state.get("cost_by_kept", "model")
        by = st.segmented_control("Cost by", ["model", "agent", *PER_RUN_COST_BY], default=kept, key="cost_by") or "model"
        st.session_state["cost_by_kept"] = by
        if by in PER_RUN_COST_BY:  # who spends and who fails: the costliest first
            usage = analytics.accounts(load_per_run(flt), by)
            shown = min(usage.height, TOP_ACCOUNTS)
            top = f"The costliest {by}s first ({shown} of {usage.height}); runs and failed runs in the tooltip. "
            usage = usage.head(TOP_ACCOUNTS)
        else:
            usage, top = analytics.usage(data, by), ""
        show(
            "usage",
            "Cost and tokens",
            drawn(usage),
            bars(drawn(usage), by, "cost_usd", fmt="$,.4f"),
            Drill(flt, by),
            empty="No runs.",
            caption=f"{top}Known cost; {usage['runs_cost_unknown'].sum()} runs used a model without a price. "
            "Tokens are in the tooltip and the CSV.",
        )


def failures_row(data: analytics.RunData, flt: SessionFilter) -> None:
    """The tools that failed and the error classes."""
    left, right = st.columns(2)
    with left:
        tools = analytics.tools(data)
        failing = tools.filter(pl.col("failures") > 0).sort("failure_rate", "calls", descending=True).head(20)
        show(
            "tools",
            "Tool failure rate",
            drawn(failing),
            bars(drawn(failing), "tool_name", "failure_rate", fmt=".0%"),
            Drill(flt, narrow={"tool_name": "failed_tool"}),
            empty=f"No tool failed in {tools['calls'].sum():,} calls. 🎉",
            caption=f"Tools that failed at least once, of {tools.height} tools called. A bar opens the runs where it failed.",
        )
    with right:
        errors = analytics.error_classes(data)
        show(
            "errors",
            "Error classes",
            drawn(errors),
            bars(drawn(errors), "error_class", "errors"),
            Drill(flt, narrow={"error_class": "error_class"}),
            empty="No errors in these runs. 🎉",
        )


def rates_row(data: analytics.RunData, flt: SessionFilter) -> None:
    """Retries, fallbacks and interventions, and loops, by day."""
    left, right = st.columns(2)
    rates = (
        analytics.retries(data, "day")
        .select("day", retry="retry_rate")
        .join(analytics.fallbacks(data, "day").select("day", fallback="fallback_rate"), on="day")
        .join(analytics.interventions(data, "day").select("day", intervention="intervention_rate"), on="day")
    )
    with left:
        long = rates.unpivot(["retry", "fallback", "intervention"], index="day", variable_name="has", value_name="rate")
        show(
            "rates",
            "Retries, fallbacks, interventions",
            drawn(rates),
            over_time(drawn(long.drop_nulls("rate")), "rate", "has", rate=True),
            Drill(flt, "day", {"has": "has"}),
            empty="No runs.",
            caption="retry: runs with a retried step · fallback: fallback blocks the agent took over · "
            "intervention: runs with a blocked action or an approval.",
        )
    with right:
        loops = analytics.loops(data, "day")
        per_run = analytics.loops(data)["cycles_per_run"][0] or 0
        totals = (
            f"{loops['cycles'].sum():,} decision cycles ({per_run:.1f} a run), "
            f"{loops['redundant_calls'].sum():,} redundant calls (a result already seen)."
        )
        looping = loops if loops["runs_with_loops"].sum() else loops.clear()
        show(
            "loops",
            "Loops",
            drawn(looping),
            over_time(drawn(loops), "runs_with_loops"),
            Drill(flt, "day", fixed={"has": "loop"}),
            empty=f"No run repeated a tool call with the same arguments 3+ times. {totals}",
            caption=f"Runs repeating a tool call with the same arguments 3+ times. {totals}",
        )


CHART_TABS = {"Runs": volume_row, "Speed and cost": cost_row, "Tools and errors": failures_row, "Retries and loops": rates_row}


def chart_tabs(data: analytics.RunData, flt: SessionFilter) -> None:
    """The charts in tabs bound to `?charts=`. Only the open tab's charts are drawn: each chart is its own
    Vega view, compiled and drawn in the browser, and eight of them were most of the page's time."""
    tabs = st.tabs(list(CHART_TABS), key="charts", on_change="rerun", bind="query-params")
    for tab, row in zip(tabs, CHART_TABS.values(), strict=True):
        if tab.open:
            with tab:
                row(data, flt)


def fanout_section(store: Store) -> None:
    """Each replay against the run it replays, for the runs that have any."""
    sources = store.distinct_values("replay_of")
    if not sources:
        return
    st.subheader("What-if fan-outs")
    st.caption(
        "Each replay against the run it replays. Replays and experiments' runs are not counted above "
        "unless *Include replays and experiments* is on."
    )
    names = {r["id"]: run_label(r) for r in store.list_sessions(SessionFilter(ids=tuple(sources)), limit=len(sources))}
    source = st.selectbox("Replays of", sources, key="fanout_source", format_func=lambda sid: names.get(sid, sid))
    table = analytics.fanout(store, source)
    st.dataframe(
        [_fanout_row(store, source, r) for r in table.iter_rows(named=True)],
        hide_index=True,
        width="stretch",
        key="fanout_table",
        column_config={"compare": st.column_config.LinkColumn("compare", display_text="open")},
    )
    csv_button("fanout", table)


def _fanout_row(store: Store, source: str, r: dict) -> dict:
    """One run of a fan-out in words: what it did (a replay: against the original), where it left it, what it cost."""
    replayed = r["role"] == "replay"
    row = store.get_session(r["session_id"]) if replayed else None
    told = replay_outcome(store, row) if row is not None else None
    return {
        "run": "the original" if not replayed else "replay",
        "model": r["model"] or "—",
        "what happened": told.text if told is not None else status_label(r["status"]),
        "left the original at": "—" if r["divergence_seq"] is None else f"step {r['divergence_seq']}",
        "tokens": f"{(r['tokens_in'] or 0) + (r['tokens_out'] or 0):,}",
        "cost": fmt_cost(r["cost_usd"]),
        "time": fmt_duration(r["duration_ms"] / 1000) if r["duration_ms"] is not None else "—",
        "compare": f"/compare?a={quote(source)}&b={quote(r['session_id'])}" if replayed else None,
    }

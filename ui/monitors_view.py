"""Monitors on screen: each rule with its last verdict and its open alert (acknowledge, mute and
check now for editors), the alert history, a release against the one before it metric by metric,
and the banner the Start page shows while an alert is open."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qsl, urlsplit

import streamlit as st

from replay_core.monitors import check, patterns, releases
from replay_core.monitors.judge import Figure, formatter
from replay_core.monitors.rules import METRICS
from replay_core.storage.actor import MANAGE_MONITORS, Actor, PermissionDenied
from replay_core.storage.store import Store
from replay_core.vocabulary import now_utc

from .common import PAGE_RUNS, fmt_when, md

PAGE_MONITORS = "pages/monitors.py"
MUTE_HOURS = 4
VERDICT_LABELS = {"firing": "🔴 firing", "ok": "🟢 ok", "no evidence": "⚪ no evidence yet", None: "not judged yet"}
HISTORY = 50


def open_alerts(store: Store) -> list[dict]:
    return [a for a in store.alerts(limit=1000) if a["resolved_at"] is None]


def alert_banner(store: Store) -> None:
    """One line while an alert is open: how many, the newest, and the way to the Monitors page."""
    found = open_alerts(store)
    if not found:
        return
    newest = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    st.warning(f"**{md(newest['monitor'])}**: {md(newest['figure']['sentence'])}{more}", icon="🚨")
    st.page_link(PAGE_MONITORS, label="See the alerts", icon=":material/notifications:")


def _runs_params(link: str | None) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(link).query)) if link else {}


def _act(store: Store, actor: Actor, what: str, do) -> None:
    try:
        store.authorize(actor, MANAGE_MONITORS, what)
        do()
    except PermissionDenied as exc:
        st.session_state["monitors_said"] = str(exc)


def monitor_list(store: Store, actor: Actor) -> None:
    said = st.session_state.pop("monitors_said", None)
    if said:
        st.error(md(said))
    monitors = store.list_monitors()
    if not monitors:
        st.info("No monitor yet. Add one with `agent-replay monitor add` or `POST /api/v1/monitors` (docs/monitors.md).")
    editor = actor.may(MANAGE_MONITORS)
    for monitor in monitors:
        row = check.summary(store, monitor)
        last = monitor.get("last_result") or {}
        with st.container(border=True):
            muted = f" · muted until {fmt_when(row['muted_until'])}" if row["muted_until"] else ""
            st.markdown(f"**{md(row['name'])}** · {VERDICT_LABELS.get(row['last_verdict'], row['last_verdict'])}{muted}")
            st.caption(md(row["rule"]))
            if last:
                st.markdown(f"Last judged {fmt_when(row['checked_at'])}: {md(last['sentence'])}")
            alert = store.open_alert(monitor["id"])
            if alert:
                _alert(store, alert)
            if editor:
                _buttons(store, actor, monitor, alert)


def _alert(store: Store, alert: dict) -> None:
    """The open alert, then its failure patterns (named the first time it is shown: a moment)."""
    figure = alert["figure"]
    acked = f" · acknowledged by {md(alert['acked_by'])}" if alert["acked_by"] else ""
    st.error(f"Alert {alert['id']} open since {fmt_when(alert['opened_at'])}{acked}: {md(figure['sentence'])}", icon="🚨")
    for pattern in patterns.figure_named(store, alert["id"], figure).get("patterns") or []:
        st.markdown(f"- {md(pattern)}")
    params = _runs_params(figure.get("runs_link"))
    if params:
        st.page_link(PAGE_RUNS, label="The runs behind it", icon=":material/list:", query_params=params)


def _buttons(store: Store, actor: Actor, monitor: dict, alert: dict | None) -> None:
    mid = monitor["id"]
    columns = st.columns(3)
    if alert and not alert["acked_by"]:
        columns[0].button(
            "Acknowledge",
            key=f"mon_ack_{mid}",
            on_click=_act,
            args=(store, actor, f"alert {alert['id']}", lambda: store.ack_alert(alert["id"], actor=actor)),
        )
    muted = monitor.get("muted_until") is not None and monitor["muted_until"] > now_utc()
    until = None if muted else now_utc() + timedelta(hours=MUTE_HOURS)
    columns[1].button(
        "Unmute" if muted else f"Mute {MUTE_HOURS} h",
        key=f"mon_mute_{mid}",
        on_click=_act,
        args=(store, actor, f"monitor {mid}", lambda: store.mute_monitor(mid, until, actor=actor)),
    )
    judge_now = (store, actor, f"monitor {mid}", lambda: check.check(store, monitor))
    columns[2].button("Check now", key=f"mon_check_{mid}", on_click=_act, args=judge_now)


def alert_history(store: Store) -> None:
    rows = [
        {
            "alert": a["id"],
            "monitor": a["monitor"],
            "opened": fmt_when(a["opened_at"]),
            "resolved": fmt_when(a["resolved_at"]) if a["resolved_at"] else "",
            "acknowledged by": a["acked_by"] or "",
            "what": a["figure"]["sentence"],
        }
        for a in store.alerts(limit=HISTORY)
    ]
    if rows:
        st.dataframe(rows, hide_index=True, key="alert_history")
    else:
        st.caption("No alert yet.")


def release_comparison(store: Store) -> None:
    """A release against the one before it (or any two), per workflow, with a verdict per metric."""
    versions = [value for value, _ in reversed(store.first_seen("agent_version"))]  # newest first
    if len(versions) < 2:
        st.caption("Release comparison needs runs of two agent versions (`agent_version`).")
        return
    left, right, runs = st.columns([2, 2, 1])
    b = left.selectbox("Version", versions, index=0, key="release_b")
    a = right.selectbox("Against", versions, index=min(1, len(versions) - 1), key="release_a")
    min_runs = runs.number_input("Runs a side", min_value=1, max_value=100_000, value=20, key="release_min_runs")
    if a == b:
        st.info("Pick two different versions.")
        return
    result = releases.compare(store, a, b, min_runs=int(min_runs))
    st.caption(
        f"{md(b)} against {md(a)}: a metric is better or worse only when the 95 % intervals do not overlap "
        f"and each side has at least {int(min_runs)} runs measured."
    )
    for scope, metrics in result.scopes.items():
        st.markdown(f"**{md(scope)}**")
        rows = []
        for m in metrics:
            shown = [_figure(m.metric, x) for x in (m.a, m.b)]
            rows.append({"metric": m.metric, a: shown[0], b: shown[1], "verdict": m.verdict, "why": m.why})
        st.dataframe(rows, hide_index=True, key=f"release_{scope}")


def _figure(metric: str, x: Figure) -> str:
    fmt = formatter(METRICS[metric][2])
    return f"{fmt(x.value)} ({fmt(x.low)}–{fmt(x.high)}, {x.runs} runs)" if x.value is not None else "—"

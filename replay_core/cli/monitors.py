"""Monitors: rules judged on the runs with evidence, and the alerts they open (monitor …)."""

from datetime import timedelta
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.table import Table

from .options import DbOption, JsonOption, cli_actor, fail, open_store, out
from .output import fmt, print_json, when

if TYPE_CHECKING:
    from ..storage.store import Store

commands = typer.Typer()
monitor_app = typer.Typer(help="Monitors: alert when a metric of the runs is worse, with evidence.", no_args_is_help=True)
commands.add_typer(monitor_app, name="monitor")


def _monitor(store: "Store", key: str) -> dict:
    from ..monitors.check import find

    found = find(store, int(key) if key.isdigit() else key)
    if found is None:
        fail(f"no monitor {key!r} (agent-replay monitor list)")
    return found


@monitor_app.command("add")
def add_cmd(
    name: Annotated[str, typer.Argument(help="A name for the monitor.")],
    metric: Annotated[str, typer.Option("--metric", help="success_rate, failure_rate, tool_failure_rate, p95_duration_s, …")],
    threshold: Annotated[float | None, typer.Option("--threshold", help="Fire past this value (with evidence).")] = None,
    change: Annotated[bool, typer.Option("--change", help="Fire when worse than the window before.")] = False,
    window_hours: Annotated[float, typer.Option("--window-hours")] = 24.0,
    min_runs: Annotated[int, typer.Option("--min-runs", help="Fewer runs in a window: no evidence, no alert.")] = 20,
    error_class: Annotated[str | None, typer.Option("--error-class", help="For error_class_runs.")] = None,
    workflow: Annotated[str | None, typer.Option("--workflow")] = None,
    agent: Annotated[str | None, typer.Option("--agent")] = None,
    model: Annotated[str | None, typer.Option("--model")] = None,
    version: Annotated[str | None, typer.Option("--version", help="agent_version")] = None,
    environment: Annotated[str | None, typer.Option("--environment")] = None,
    user: Annotated[str | None, typer.Option("--user", help="user_id: one user's (or tenant's) runs")] = None,
    webhook: Annotated[str | None, typer.Option("--webhook", help="Where alerts are POSTed (JSON, or Slack's form).")] = None,
    webhook_secret_env: Annotated[
        str | None, typer.Option("--webhook-secret-env", help="NAME of the variable holding the signing secret.")
    ] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Add a monitor; its rule is checked before it is stored."""
    from ..monitors import check
    from ..monitors.rules import RuleError, parse_rule

    filters = {
        "workflow": workflow,
        "agent_id": agent,
        "model": model,
        "agent_version": version,
        "environment": environment,
        "user_id": user,
    }
    rule = {
        "metric": metric,
        "threshold": threshold,
        "change": change,
        "window_hours": window_hours,
        "min_runs": min_runs,
        "error_class": error_class,
        "filters": {k: v for k, v in filters.items() if v},
    }
    store = open_store(db)
    try:
        made = check.add(store, name, rule, webhook_url=webhook, webhook_secret_env=webhook_secret_env, actor=cli_actor())
    except RuleError as exc:
        fail(str(exc))
    if json:
        print_json(made)
        return
    out.print(f"monitor {made['id']} {made['name']}: {parse_rule(made['rule']).sentence()}")


@monitor_app.command("list")
def list_cmd(db: DbOption = None, json: JsonOption = False) -> None:
    """Every monitor, its last verdict and whether an alert is open."""
    from ..monitors.check import summary

    store = open_store(db)
    rows = [summary(store, m) for m in store.list_monitors()]
    if json:
        print_json(rows)
        return
    table = Table("id", "name", "last verdict", "alert", "rule")
    for r in rows:
        table.add_row(str(r["id"]), r["name"], fmt(r["last_verdict"]), "open" if r["alert_open"] else "", r["rule"])
    out.print(table)


@monitor_app.command("show")
def show_cmd(monitor: Annotated[str, typer.Argument(help="Id or name.")], db: DbOption = None, json: JsonOption = False) -> None:
    """A monitor: its rule, its last judgement, its open alert."""
    from ..monitors.check import details

    store = open_store(db)
    found = _monitor(store, monitor)
    body = details(store, found)
    if json:
        print_json(body)
        return
    out.print(f"monitor {found['id']} {found['name']}: {body['rule_sentence']}")
    last = found.get("last_result")
    out.print(
        f"last checked {when(found.get('last_checked_at'))}: " + (f"{last['verdict']} — {last['sentence']}" if last else "never")
    )
    if body["open_alert"]:
        alert = body["open_alert"]
        out.print(f"alert {alert['id']} open since {when(alert['opened_at'])}; runs: {alert['figure'].get('runs_link')}")
        for pattern in alert["figure"].get("patterns") or []:
            out.print(f"  pattern: {pattern}")


@monitor_app.command("check")
def check_cmd(
    monitor: Annotated[str | None, typer.Argument(help="Id or name (default: every monitor).")] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Judge now (as the server does on its schedule), open or resolve alerts and send them."""
    from ..monitors import check
    from ..monitors.releases import ensure_monitor

    store = open_store(db)
    cli_actor()
    if not monitor:
        ensure_monitor(store)  # as the schedule does
    chosen = [_monitor(store, monitor)] if monitor else store.list_monitors()
    results = [{"monitor": m["name"]} | check.check(store, m) for m in chosen]
    if json:
        print_json(results)
        return
    for r in results:
        event = f" [alert {r['event']}]" if r.get("event") else ""
        out.print(f"{r['monitor']}: {r['verdict']}{event} — {r['sentence']}")


@monitor_app.command("history")
def history_cmd(
    monitor: Annotated[str | None, typer.Argument(help="Id or name (default: every monitor).")] = None,
    limit: Annotated[int, typer.Option("--limit")] = 50,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Alerts, newest first: when each opened and resolved, who acknowledged it, what it said."""
    from ..monitors import check

    store = open_store(db)
    found = _monitor(store, monitor) if monitor else None
    monitor_id = found["id"] if found else None
    if json:  # the alerts whole, with their failure patterns
        print_json(check.alerts(store, monitor_id, limit=limit))
        return
    alerts = store.alerts(monitor_id, limit=limit)
    table = Table("alert", "monitor", "opened", "resolved", "acked by", "what")
    for a in alerts:
        table.add_row(
            str(a["id"]), a["monitor"], when(a["opened_at"]), when(a["resolved_at"]), fmt(a["acked_by"]), a["figure"]["sentence"]
        )
    out.print(table)


@monitor_app.command("mute")
def mute_cmd(
    monitor: Annotated[str, typer.Argument(help="Id or name.")],
    hours: Annotated[float, typer.Option("--hours", help="For how long (0 unmutes).")] = 24.0,
    db: DbOption = None,
) -> None:
    """Judge on, but send nothing for a while."""
    from ..storage.actor import MANAGE_MONITORS
    from ..vocabulary import now_utc

    if not 0 <= hours <= 24 * 365:
        fail(f"--hours: between 0 and a year, got {hours:g}")
    store = open_store(db)
    found = _monitor(store, monitor)
    actor = store.authorize(cli_actor(), MANAGE_MONITORS, f"monitor {found['id']}")
    until = now_utc() + timedelta(hours=hours) if hours else None
    store.mute_monitor(found["id"], until, actor=actor)
    out.print(f"{found['name']}: " + (f"muted until {when(until)}" if until else "unmuted"))


@monitor_app.command("ack")
def ack_cmd(alert: Annotated[int, typer.Argument(help="Alert id (monitor history).")], db: DbOption = None) -> None:
    """Acknowledge an alert: someone is on it."""
    from ..storage.actor import MANAGE_MONITORS

    store = open_store(db)
    actor = store.authorize(cli_actor(), MANAGE_MONITORS, f"alert {alert}")
    if not store.ack_alert(alert, actor=actor):
        fail(f"no alert {alert}")
    out.print(f"alert {alert} acknowledged by {actor.who}")


@monitor_app.command("webhook")
def webhook_cmd(
    monitor: Annotated[str, typer.Argument(help="Id or name, e.g. 'release agent_version' (the built-in release monitor).")],
    url: Annotated[
        str | None, typer.Argument(help="Where its alerts are POSTed (JSON, or Slack's form); none: clear it.")
    ] = None,
    secret_env: Annotated[
        str | None, typer.Option("--webhook-secret-env", help="NAME of the variable holding the signing secret.")
    ] = None,
    db: DbOption = None,
) -> None:
    """Set (or clear) where a monitor's alerts are sent."""
    from ..monitors.check import set_webhook
    from ..monitors.rules import RuleError

    store = open_store(db)
    try:
        found = set_webhook(store, _monitor(store, monitor), url, secret_env, actor=cli_actor())
    except RuleError as exc:
        fail(str(exc))
    out.print(f"{found['name']}: " + (f"alerts go to {found['webhook_url']}" if found["webhook_url"] else "no webhook"))


release_app = typer.Typer(help="Releases: one version (or model) against another, metric by metric.", no_args_is_help=True)
commands.add_typer(release_app, name="release")


@release_app.command("compare")
def release_compare_cmd(
    a: Annotated[str, typer.Argument(help="The earlier value, e.g. 1.5.0.")],
    b: Annotated[str, typer.Argument(help="The later value, e.g. 1.6.0.")],
    workflow: Annotated[str | None, typer.Option("--workflow", help="One workflow only.")] = None,
    min_runs: Annotated[int, typer.Option("--min-runs", help="Fewer runs on a side: no evidence yet.")] = 20,
    dimension: Annotated[
        str, typer.Option("--dimension", help="agent_version, model or prompt_version (from the runs' metadata).")
    ] = "agent_version",
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """B against A on every metric with an interval, overall and per workflow: better, worse or no evidence yet."""
    from ..monitors.judge import formatter
    from ..monitors.releases import compare
    from ..monitors.rules import METRICS, RuleError

    if min_runs < 1:
        fail(f"--min-runs: at least 1, got {min_runs}")
    store = open_store(db)
    try:
        result = compare(store, a, b, dimension=dimension, workflow=workflow, min_runs=min_runs)
    except RuleError as exc:
        fail(str(exc))
    if json:
        print_json(result.to_dict())
        return
    out.print(f"{dimension} {b} against {a}, 95 % intervals, at least {min_runs} runs a side")
    for scope, metrics in result.scopes.items():
        runs = f"{max(m.a.runs for m in metrics)} / {max(m.b.runs for m in metrics)} runs"
        table = Table("metric", a, b, "verdict", title=f"{scope}: {runs}", title_justify="left", box=box.SIMPLE)
        for m in metrics:
            f = formatter(METRICS[m.metric][2])
            table.add_row(
                m.metric, *(f"{f(x.value)} {f(x.low)}–{f(x.high)}" if x.value is not None else "—" for x in (m.a, m.b)), m.verdict
            )
        out.print(table)

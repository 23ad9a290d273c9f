"""Monitors judged and their alerts kept: a firing rule opens one alert (not one per check), which
names the rule, the figure with its interval and baseline, the runs behind it (a runs-page link) and
their failure patterns (from `explain`, named when the alert is first shown or delivered:
monitors.patterns); when the rule stops firing the alert resolves, once. Each transition is sent to
the monitor's webhook. With several replicas on one database, each monitor is judged by one of them
per period (`Store.claim_job`). Ingest pokes `INGESTED`: a burst of writes gets the monitors judged
once, a quiet interval after its last write, outside any write's transaction. The server's passes run
in a worker process of their own at a lower CPU priority (`PASSES`): on busy cores a pass takes what
ingest leaves.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from datetime import datetime, timedelta
from urllib.parse import urlencode

from .. import config
from ..storage.actor import MANAGE_MONITORS, Actor
from ..storage.monitors import CheckWrite
from ..storage.store import Store
from ..storage.worker import StoreWorker, WorkerLost, shared_url
from ..vocabulary import now_utc
from . import patterns, releases
from .debounce import INGESTED, Debounce
from .deliver import announce, deliver, is_muted
from .judge import Judgement, failing_filter, judge, judge_all
from .rules import RELEASE_DIMENSIONS, ExperimentRule, ReleaseRule, Rule, RuleError, parse_monitor_rule, parse_rule

log = logging.getLogger(__name__)
EVERY_S = 300.0  # how often the server judges each monitor
BEHIND = 10  # how much nicer than the server its passes' worker is (at 19, a pass starved mid-read held the WAL twice as long)


def add(
    store: Store,
    name: str,
    rule: dict,
    *,
    webhook_url: str | None = None,
    webhook_secret_env: str | None = None,
    actor: Actor | None = None,
) -> dict:
    """A new monitor (editors), its rule checked first."""
    actor = store.authorize(actor, MANAGE_MONITORS, f"monitor {name!r}"[:200])
    name = (name or "").strip()
    if not name or len(name) > 200:
        raise RuleError("name: give the monitor a name (at most 200 characters)")
    parsed = parse_rule(rule)
    check_webhook(webhook_url)
    if store.get_monitor(name) is not None:
        raise RuleError(f"name: a monitor named {name!r} exists")
    monitor_id = store.create_monitor(
        name, parsed.to_dict(), webhook_url=webhook_url, webhook_secret_env=webhook_secret_env, actor=actor
    )
    return store.get_monitor(monitor_id) or {}


def check_webhook(url: str | None) -> None:
    if url is not None and not url.startswith(("http://", "https://")):
        raise RuleError(f"webhook: expected an http(s) address, got {url[:100]!r}")


def find(store: Store, key: int | str) -> dict | None:
    """A monitor by id or name; a built-in release monitor (`release agent_version`) is added when first asked for."""
    if isinstance(key, str):
        for dimension in RELEASE_DIMENSIONS:
            if key == releases.monitor_name(dimension):
                return releases.ensure_monitor(store, dimension)
    return store.get_monitor(key)


def set_webhook(
    store: Store, monitor: dict, url: str | None, secret_env: str | None = None, *, actor: Actor | None = None
) -> dict:
    """Where a monitor's alerts go (None: nowhere), e.g. the built-in release monitor's (editors)."""
    actor = store.authorize(actor, MANAGE_MONITORS, f"monitor {monitor['id']}")
    check_webhook(url)
    store.set_monitor_webhook(monitor["id"], url, secret_env if url else None, actor=actor)
    return store.get_monitor(monitor["id"]) or {}


def summary(store: Store, monitor: dict) -> dict:
    """A monitor in a list: its rule in a sentence, its last verdict, whether an alert is open."""
    last = monitor.get("last_result") or {}
    return {
        "id": monitor["id"],
        "name": monitor["name"],
        "rule": parse_monitor_rule(monitor["rule"]).sentence(),
        "last_verdict": last.get("verdict"),
        "checked_at": monitor.get("last_checked_at"),
        "alert_open": store.open_alert(monitor["id"]) is not None,
        "muted_until": monitor.get("muted_until"),
    }


def details(store: Store, monitor: dict) -> dict:
    """A monitor shown alone: every stored field, its rule in a sentence, its open alert."""
    sentence = parse_monitor_rule(monitor["rule"]).sentence()
    alert = store.open_alert(monitor["id"])
    return monitor | {"rule_sentence": sentence, "open_alert": alert and patterns.named(store, alert)}


def alerts(store: Store, monitor_id: int | None = None, *, limit: int = 100) -> list[dict]:
    """Alerts to show, newest first, each with its failure patterns."""
    return patterns.shown(store, store.alerts(monitor_id, limit=limit))


def runs_link(rule: Rule, judgement: Judgement) -> str:
    """The runs page filtered to the runs behind the figure."""
    flt = failing_filter(rule, judgement)
    params: dict[str, str | None] = {k: v for k, v in rule.filters.items()}
    params |= {"since": judgement.current.since, "until": judgement.current.until}
    for key in ("status", "error_class", "has"):
        if getattr(flt, key):
            params[key] = getattr(flt, key)
    return f"{config.public_url()}/runs?{urlencode(params)}"


def check(
    store: Store,
    monitor: dict,
    now: datetime | None = None,
    *,
    deliver_to: Callable = deliver,
    judgement: Judgement | None = None,
) -> dict:
    """Judge one monitor now (or take `judgement`, made by `judge_all` for many); open or resolve its alert;
    send what changed. Returns what it found."""
    now = now or now_utc()
    rule = parse_monitor_rule(monitor["rule"])
    if isinstance(rule, ReleaseRule):
        return releases.check_monitor(store, monitor, rule, now, deliver_to=deliver_to)
    if isinstance(rule, ExperimentRule):
        from .loop import check_monitor

        return check_monitor(store, monitor, rule, now, deliver_to=deliver_to)
    judgement = judgement or judge(store, rule, now)
    (written,) = store.record_checks([assess(monitor, rule, judgement, now, store.open_alert(monitor["id"]))])
    return tell(store, monitor, written, deliver_to)


def assess(monitor: dict, rule: Rule, judgement: Judgement, now: datetime, current: dict | None) -> CheckWrite:
    """What a check stores: its result, and the alert it opens or resolves (`current`: the monitor's open
    alert). No read, no write: the caller stores it; the alert's patterns are named later (monitors.patterns)."""
    result = judgement.to_dict() | {"rule": rule.sentence(), "checked_at": now.isoformat()}
    if judgement.verdict == "firing" and current is None:
        figure = result | {"runs_link": runs_link(rule, judgement)} | patterns.pending(failing_filter(rule, judgement))
        return CheckWrite(monitor["id"], result, now, open_figure=figure)
    if judgement.verdict == "ok" and current is not None:
        return CheckWrite(monitor["id"], result, now, resolve=current)
    return CheckWrite(monitor["id"], result, now)


def tell(store: Store, monitor: dict, written: CheckWrite, deliver_to: Callable = deliver) -> dict:
    """Send the alert a stored check opened or resolved (after its transaction); what it found."""
    event, result, now = None, written.result, written.at
    if written.open_figure is not None:
        event, alert = "opened", {"id": written.alert_id, **written.open_figure}
    elif written.resolve is not None:
        event, alert = "resolved", {"id": written.resolve["id"], **written.resolve["figure"], "resolved_by": result}
    if event:
        announce(store, monitor, event, alert, (result if event == "resolved" else alert)["sentence"], now, deliver_to)
    return result | {"event": event, "muted": is_muted(monitor, now)}


def _rule_or_none(monitor: dict) -> Rule | ReleaseRule | ExperimentRule | None:
    try:
        return parse_monitor_rule(monitor["rule"])
    except RuleError:  # said when the monitor itself is checked
        return None


def check_due(store: Store, now: datetime | None = None, every_s: float = EVERY_S, *, job: str = "monitor") -> list[str]:
    """Judge every monitor this process wins the period of (one replica per monitor and period; `job`: the
    claims' name, apart for the judging after a burst of ingests so the periodic pass does not hold it off).
    The claims take one write transaction; the metric rules are judged outside any, and all their results
    and alert changes are stored in one more at the end, so a pass holds SQLite's write lock twice, briefly."""
    now = now or now_utc()
    releases.ensure_monitor(store)
    claims = {f"{job} {m['id']}"[:50]: m for m in store.list_monitors()}
    claimed = store.claim_jobs(list(claims), timedelta(seconds=every_s), now=now)
    won = [monitor for name, monitor in claims.items() if name in claimed]
    metric_rules = {m["id"]: rule for m in won if isinstance(rule := _rule_or_none(m), Rule)}
    judged = dict(zip(metric_rules, judge_all(store, list(metric_rules.values()), now), strict=True))
    current = store.open_alerts() if metric_rules else {}
    checked, assessed = set(), []
    for monitor in won:
        try:
            if monitor["id"] in metric_rules:
                rule = metric_rules[monitor["id"]]
                assessed.append(assess(monitor, rule, judged[monitor["id"]], now, current.get(monitor["id"])))
            else:
                check(store, monitor, now)
                checked.add(monitor["id"])
        except Exception:  # one broken monitor must not stop the others
            log.exception("monitor %s could not be checked", monitor["name"])
    by_id = {m["id"]: m for m in won}
    for written in store.record_checks(assessed):
        try:
            tell(store, by_id[written.monitor_id], written)
            checked.add(written.monitor_id)
        except Exception:
            log.exception("monitor %s: its alert could not be sent", by_id[written.monitor_id]["name"])
    return [m["name"] for m in won if m["id"] in checked]


def behind_ingest() -> None:
    """The passes' worker's warm-up: it runs at a lower CPU priority than the server and its write worker,
    so that on busy cores the judging yields to ingest. A thread of the server could not: a pass holding
    the GIL while its priority keeps it off the cores would hold up the server's requests."""
    if hasattr(os, "nice"):
        os.nice(BEHIND)


PASSES = StoreWorker(warm=f"{__name__}:behind_ingest")


def judge_now(store: Store, every_s: float, job: str) -> list[str]:
    """`check_due` now, as the passes' worker runs it."""
    return check_due(store, None, every_s, job=job)


def judge_behind_ingest(store: Store, every_s: float, job: str = "monitor") -> list[str]:
    """A pass in the passes' worker (`PASSES`) when another process can open the database; in this thread
    when none can (an in-memory database) or the worker was lost."""
    url = shared_url(store)
    if url is not None:
        try:
            return PASSES.run(url, f"{__name__}:judge_now", every_s, job)
        except WorkerLost:
            log.warning("the monitors' worker was lost: this pass runs in the server", exc_info=True)
    return judge_now(store, every_s, job)


async def _every(what: str, every_s: float, work: Callable[[], object]) -> None:
    while True:
        try:
            await asyncio.to_thread(work)
        except Exception:
            log.exception("%s failed", what)
        await asyncio.sleep(every_s)


async def run_periodically(store_factory: Callable[[], Store], every_s: float = EVERY_S, debounce: Debounce = INGESTED) -> None:
    """In the app's server, off the event loop's thread: judge the monitors every `every_s` seconds and a quiet
    interval after a burst of ingests, behind ingest (`judge_behind_ingest`); run the experiment schedules
    that are due (monitors.loop), apart, as an experiment may take long."""

    def after_burst() -> None:
        if debounce.due():
            judge_behind_ingest(store_factory(), debounce.quiet_s, "monitor after ingest")

    await asyncio.gather(
        _every("monitors pass", every_s, lambda: judge_behind_ingest(store_factory(), every_s)),
        _every("monitors after ingest", min(5.0, debounce.quiet_s), after_burst),
        _every("experiment schedules", every_s, lambda: schedules_pass(store_factory(), every_s)),
    )


def schedules_pass(store: Store, every_s: float) -> None:
    """`loop.run_due` once a queue feeds a dataset or a schedule exists: the loop's module (whatif's datasets,
    experiments and scorers) was a seventh of the server's start, for apps most of which have neither."""
    if store.queue_feeds() or store.list_schedules():
        from . import loop

        loop.run_due(store, every_s=every_s)

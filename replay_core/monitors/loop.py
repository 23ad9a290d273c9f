"""The evaluation loop: reviewed failures become tomorrow's regression test.

A review queue's verdicts and "what it should have done" become a dataset version on demand
(`dataset_from_queue`) or continuously (`set_feed`: every new bad verdict adds its run to the
dataset's next version, at the schedule's next pass). An experiment schedule runs a dataset again —
daily, on a new dataset version, or on a new model name in the configuration — and compares each
run with the schedule's previous one (whatif.experiment_compare): cases that passed and fail now
are listed, and the schedule's built-in monitor (`experiment <name>`) opens an alert, through the
monitors' delivery, when a pass rate dropped with evidence (the 95 % Wilson intervals apart).
One replica runs each schedule per period (`Store.claim_job`). A run renews its lease while it goes
on; one left `running` whose lease lapsed was cut by a stop of its server: the next pass marks it
`interrupted`, says why, and runs the schedule again (resuming its experiment, whose finished cases
are not paid for twice).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.exc import IntegrityError

from .. import config
from ..storage.actor import EDITOR, INGEST, REPLAY, Actor
from ..storage.store import Store
from ..team import queues
from ..team.audit import dataset_written
from ..vocabulary import now_utc
from ..whatif import dataset as ds
from ..whatif import experiment as ex
from ..whatif.experiment_compare import CompareError, compare_experiments
from ..whatif.models import offered_models
from ..whatif.replay_config import RECORDED, ConfigError, ReplayConfig
from ..whatif.scorers import get_scorer
from .deliver import announce, deliver
from .rules import ExperimentRule, RuleError

log = logging.getLogger(__name__)
TRIGGERS = {
    "daily": "once a day",
    "dataset_version": "when its dataset gets a new version",
    "new_model": "when a new model name appears in the configuration (that model replaces the variant's)",
}
BAD_VERDICTS = ("Bad",)
DAY = timedelta(hours=24)
WORSE, BETTER, NO_EVIDENCE = "worse", "better", "no evidence yet"
REGRESSIONS_NAMED = 20  # cases an alert names
BEAT = timedelta(seconds=30)  # how often a running scheduled run renews its lease
LEASE = timedelta(minutes=5)  # a run still `running` whose lease is older than this was cut
INTERRUPTED = "interrupted"
AGAIN = "again after an interrupted run: "


class LoopError(ValueError):
    """A dataset, feed or schedule that cannot be made as asked; the message names the field."""


# ---------------------------------------------------------------- reviewed runs as a dataset


def bad_runs(result: dict, verdicts: tuple[str, ...] | list[str] = BAD_VERDICTS) -> list[str]:
    """The queue's runs (still stored) that some reviewer gave one of `verdicts` (case aside)."""
    wanted = {v.casefold() for v in verdicts}
    return [
        it["session_id"]
        for it in result["items"]
        if it["stored"] and any((r["verdict"] or "").casefold() in wanted for r in it["reviews"])
    ]


def _queue_result(store: Store, queue_id: int) -> dict:
    try:
        return queues.results(store, queue_id)
    except queues.QueueError as exc:
        raise LoopError(str(exc)) from None


def queue_name(store: Store, queue_id: int) -> str:
    try:
        return queues.get(store, queue_id)["name"]
    except queues.QueueError as exc:
        raise LoopError(str(exc)) from None


def _check_verdicts(queue: dict, verdicts: list[str]) -> list[str]:
    labels = {v.casefold(): v for v in queue["rubric"]["verdicts"]}
    if not verdicts or any(not isinstance(v, str) or v.casefold() not in labels for v in verdicts):
        raise LoopError(f"verdicts: expected some of this queue's verdicts ({', '.join(labels.values())}), got {verdicts!r}")
    return [labels[v.casefold()] for v in verdicts]


def dataset_from_queue(
    store: Store,
    queue_id: int,
    name: str | None = None,
    *,
    bad_only: bool = False,
    verdicts: list[str] | None = None,
    actor: Actor | None = None,
) -> dict:
    """The queue's runs (or only those given a bad verdict) as a dataset's new version, each judged by what its
    reviewers said it should have done (else its own outcome). `name` defaults to the queue's."""
    actor = store.authorize(actor, INGEST, f"queue {queue_id}")
    result = _queue_result(store, queue_id)
    ids, expected = queues.dataset_cases(result)
    if bad_only:
        chosen = set(bad_runs(result, _check_verdicts(result["queue"], verdicts or list(BAD_VERDICTS))))
        ids = [i for i in ids if i in chosen]
    if not ids:
        said = "no run of it was given a bad verdict" if bad_only else "none of its runs is still stored"
        raise LoopError(f"queue {queue_id}: {said}")
    name = (name or result["queue"]["name"]).strip()
    made_from = {"queue": queue_id, "bad_only": bad_only}
    try:
        made = ds.dataset_from_sessions(store, name, ids, expected=expected, made_from=made_from)
    except ds.DatasetError as exc:
        raise LoopError(str(exc)) from None
    dataset_written(store, actor, made, "add" if "added" in made else "create")
    return made


def set_feed(
    store: Store, queue_id: int, dataset: str | None, verdicts: list[str] | None = None, *, actor: Actor | None = None
) -> dict:
    """Feed the queue's bad verdicts to `dataset` from now on (None stops it); the runs judged bad so far go in now."""
    actor = store.authorize(actor, INGEST, f"queue {queue_id}")
    result = _queue_result(store, queue_id)
    if dataset is None:
        store.set_queue_feed(queue_id, None, [], actor=actor)
        return {"queue": queue_id, "dataset": None}
    dataset = dataset.strip()
    if not dataset or len(dataset) > 200:
        raise LoopError("dataset: give the dataset's name (at most 200 characters)")
    chosen = _check_verdicts(result["queue"], verdicts or list(BAD_VERDICTS))
    store.set_queue_feed(queue_id, dataset, chosen, actor=actor)
    feed = store.queue_feeds(queue_id)[0]
    return {"queue": queue_id, "dataset": dataset, "verdicts": chosen, "synced": sync_feed(store, feed)}


def sync_feed(store: Store, feed: dict) -> dict | None:
    """The feed's bad runs its dataset does not hold yet, added as its next version (or its first); None: nothing new."""
    result = _queue_result(store, feed["queue_id"])
    bad = bad_runs(result, feed["verdicts"])
    held = store.get_dataset(feed["dataset"])
    if held is not None:
        have = {c["session_id"] for c in store.dataset_cases(held["id"])}
        bad = [i for i in bad if i not in have]
    if not bad:
        return None
    _, expected = queues.dataset_cases(result)
    made_from = {"queue": feed["queue_id"], "feed": feed["verdicts"]}
    made = ds.dataset_from_sessions(store, feed["dataset"], bad, expected=expected, made_from=made_from)
    dataset_written(store, Actor(f"queue {feed['queue_id']} feed", EDITOR, "server"), made, "add" if held else "create")
    return {k: made.get(k) for k in ("name", "version", "cases", "added")}


def sync_feeds(store: Store) -> list[dict]:
    synced = []
    for feed in store.queue_feeds():
        try:
            done = sync_feed(store, feed)
        except (LoopError, ds.DatasetError):  # the queue or its runs are gone: nothing to add
            log.warning("queue %s could not feed dataset %s", feed["queue_id"], feed["dataset"], exc_info=True)
            continue
        if done:
            synced.append(done | {"queue": feed["queue_id"]})
    return synced


# ---------------------------------------------------------------- schedules


def monitor_name(schedule: str) -> str:
    return f"experiment {schedule}"


def configured_models() -> list[str]:
    return [o.model for o in offered_models() if o.model != RECORDED]


def add_schedule(
    store: Store,
    name: str,
    dataset: str,
    variants: list[dict],
    *,
    trigger: str = "daily",
    scorers: list[str] | None = None,
    start: str | int | None = None,
    concurrency: int = 4,
    budget_usd: float | None = None,
    budget_tokens: int | None = None,
    webhook_url: str | None = None,
    webhook_secret_env: str | None = None,
    actor: Actor | None = None,
) -> dict:
    """A new schedule (editors: it spends money) and its monitor; every field checked before anything is stored."""
    actor = store.authorize(actor, REPLAY, f"schedule {name!r}"[:200])
    name = (name or "").strip()
    if not name or len(name) > 150:
        raise LoopError("name: give the schedule a name (at most 150 characters)")
    if store.get_schedule(name) is not None:
        raise LoopError(f"name: a schedule named {name!r} exists")
    if trigger not in TRIGGERS:
        raise LoopError(f"trigger: expected one of {', '.join(TRIGGERS)}, got {trigger!r}")
    if store.get_dataset(dataset) is None:
        raise LoopError(f"dataset: no dataset named {dataset!r}")
    if not variants or not all(isinstance(v, dict) for v in variants):
        raise LoopError("variants: give at least one model (replay settings)")
    if trigger == "new_model" and len(variants) != 1:
        raise LoopError("variants: a new_model schedule has one variant, whose model each new model replaces")
    try:
        configs = [ReplayConfig.from_json(v) for v in variants]
        for scorer in scorers or []:
            get_scorer(scorer)
        ex.parse_start(start)
        ex.check_budget_values(budget_usd, budget_tokens)
    except (ConfigError, ValueError, TypeError) as exc:
        raise LoopError(str(exc)) from None
    if not isinstance(concurrency, int) or concurrency < 1:
        raise LoopError("concurrency: at least 1")
    if webhook_url is not None and not webhook_url.startswith(("http://", "https://")):
        raise LoopError(f"webhook: expected an http(s) address, got {webhook_url[:100]!r}")
    settings = {
        "variants": [c.to_json() for c in configs],
        "scorers": scorers,
        "start": start,
        "concurrency": concurrency,
        "budget_usd": budget_usd,
        "budget_tokens": budget_tokens,
    }
    schedule_id = store.create_schedule(name, dataset, trigger, settings, configured_models(), actor=actor)
    try:
        rule = ExperimentRule(name).to_dict()
        store.create_monitor(
            monitor_name(name), rule, webhook_url=webhook_url, webhook_secret_env=webhook_secret_env, actor=actor
        )
    except IntegrityError:
        raise LoopError(f"name: a monitor named {monitor_name(name)!r} exists; pick another schedule name") from None
    return store.get_schedule(schedule_id) or {}


def _last_run(store: Store, schedule: dict) -> dict | None:
    runs = store.schedule_runs(schedule["id"], limit=1)
    return runs[0] if runs else None


def _completed(run: dict) -> bool:
    """A run that ran its experiment to an end (not one cut by a stop of its server)."""
    return bool(run["finished_at"] and run["experiment_id"] and (run["result"] or {}).get("status") != INTERRUPTED)


def due(store: Store, schedule: dict, now: datetime) -> tuple[str, str | None] | None:
    """Why the schedule should run now (and the new model it runs with), or None."""
    last = _last_run(store, schedule)
    if last is None:
        return "first run", None
    result = last["result"] or {}
    if result.get("status") == INTERRUPTED:
        return (last["reason"] if last["reason"].startswith(AGAIN) else AGAIN + last["reason"]), result.get("model")
    trigger = schedule["trigger"]
    if trigger == "daily" and now - last["started_at"] >= DAY:
        return "a day since the last run", None
    if trigger == "dataset_version":
        found = store.get_dataset(schedule["dataset"])
        if found is not None and found["version"] > (last["dataset_version"] or 0):
            return f"dataset {found['name']} version {found['version']}", None
    if trigger == "new_model":
        new = [m for m in configured_models() if m not in (schedule["models_seen"] or [])]
        if new:
            return f"new model {new[0]}", new[0]
    return None


def _configs(schedule: dict, model: str | None) -> list[ReplayConfig]:
    variants = schedule["settings"]["variants"]
    if model is None:
        return [ReplayConfig.from_json(v) for v in variants]
    option = next(o for o in offered_models() if o.model == model)
    extra = {k: v for k, v in option.settings().items() if v is not None}
    return [ReplayConfig.from_json(variants[0] | extra | {"model": model})]


def runner(schedule: dict) -> Actor:
    """Who a scheduled run's replays are audited as: the schedule, on behalf of whoever made it (whole: where
    it is kept, a name too long is cut with a visible mark, storage/widths.holder)."""
    return Actor(f"schedule {schedule['name']} (by {schedule['created_by']})", EDITOR, "server")


class Lease:
    """A scheduled run's lease, a `job_runs` row named after its schedule, renewed every BEAT while the run
    goes on (from a thread: an experiment's cases keep the caller busy). Times follow `now`, the pass's clock."""

    def __init__(self, store: Store, schedule: dict, now: datetime):
        self.store, self.name, self.now, self.began = store, lease_name(schedule), now, time.monotonic()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, name=f"lease {self.name}", daemon=True)

    def renew(self) -> None:
        self.store.claim_job(self.name, BEAT, now=self.now + timedelta(seconds=time.monotonic() - self.began))

    def _beat(self) -> None:
        while not self.stop.wait(BEAT.total_seconds()):
            try:
                self.renew()
            except Exception:  # a busy database: the next beat tries again, well within LEASE
                log.warning("schedule lease %s not renewed", self.name, exc_info=True)

    def __enter__(self) -> Lease:
        self.renew()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def lease_name(schedule: dict) -> str:
    return f"schedule run {schedule['id']}"[:50]


def interrupt(store: Store, schedule: dict, now: datetime) -> bool:
    """Mark the schedule's last run interrupted if its process left it `running` and its lease lapsed (so that
    the schedule runs again); False if it is running, or has ended."""
    last = _last_run(store, schedule)
    if last is None or last["finished_at"] is not None or not store.claim_job(lease_name(schedule), LEASE, now=now):
        return False
    said = f"its server stopped while it ran (its lease not renewed for {LEASE.total_seconds() / 60:.0f} min); it runs again"
    result = (last["result"] or {}) | {"status": INTERRUPTED, "error": said, "reason": last["reason"]}
    return store.interrupt_schedule_run(last["id"], result, now)


def run_schedule(
    store: Store,
    schedule: dict,
    reason: str,
    now: datetime | None = None,
    *,
    model: str | None = None,
    deliver_to: Callable = deliver,
) -> dict:
    """Run the schedule's experiment to its end, compare it with the previous run, judge its monitor. After an
    interrupted run, its experiment is resumed (its finished cases are kept)."""
    now = now or now_utc()
    runs = store.schedule_runs(schedule["id"])
    previous = next((r for r in runs if _completed(r)), None)
    cut = runs[0] if runs and (runs[0]["result"] or {}).get("status") == INTERRUPTED else None
    experiment_id = cut["experiment_id"] if cut else None
    found = store.get_dataset(schedule["dataset"])
    version = cut["dataset_version"] if cut else (found["version"] if found else None)
    with Lease(store, schedule, now):
        run_id = store.start_schedule_run(schedule["id"], reason, version, now, model=model, experiment_id=experiment_id)
        if schedule["trigger"] == "new_model":
            store.set_models_seen(schedule["id"], sorted({*(schedule["models_seen"] or []), *configured_models()}))
        experiment_id, result = _run(store, schedule, run_id, model, experiment_id, previous)
        result |= {"reason": reason}
        store.finish_schedule_run(run_id, experiment_id=experiment_id, result=result)
    monitor = store.get_monitor(monitor_name(schedule["name"]))
    if monitor is not None:
        rule = ExperimentRule(schedule["name"])
        result["monitor"] = check_monitor(store, monitor, rule, now_utc(), deliver_to=deliver_to)
    return {"run": run_id, "schedule": schedule["name"], "experiment": experiment_id, **result}


def _run(
    store: Store, schedule: dict, run_id: int, model: str | None, experiment_id: str | None, previous: dict | None
) -> tuple[str | None, dict]:
    """The run's experiment (a new one, or `experiment_id` resumed) to its end, against the previous run's."""
    s = schedule["settings"]
    try:
        if experiment_id is None:
            experiment_id, _ = ex.start(
                store,
                schedule["dataset"],
                _configs(schedule, model),
                start=s.get("start"),
                scorers=s.get("scorers"),
                concurrency=s.get("concurrency") or 4,
                budget_usd=s.get("budget_usd"),
                budget_tokens=s.get("budget_tokens"),
            )
            store.set_schedule_run_experiment(run_id, experiment_id)
        status = ex.run(store, experiment_id, actor=runner(schedule))
        result = outcome(
            store, experiment_id, previous["experiment_id"] if previous else None, schedule["trigger"] == "new_model"
        )
        result["status"] = status
    except (ex.ExperimentError, ConfigError, ds.DatasetError) as exc:
        result = {"status": "not started" if experiment_id is None else "failed", "error": str(exc)[:1000]}
    except Exception as exc:  # a broken store or provider: ex.run stored its scrubbed text on the experiment
        result = {"status": "failed", "error": f"{type(exc).__name__} (see the experiment's message)"}
    return experiment_id, result


def outcome(store: Store, experiment_id: str, previous: str | None, by_position: bool) -> dict:
    """Per variant: its pass rate with its interval and, against the previous run, the regressions and a verdict."""
    from ..whatif.results import summarise

    mine = summarise(store, experiment_id)
    variants = [{"variant": v["name"], "cases": v["cases"], "pass_rate": v["pass_rate"], "ci": v["ci"]} for v in mine["variants"]]
    out: dict[str, Any] = {"experiment": experiment_id, "previous": previous, "variants": variants}
    if previous is None:
        return out
    try:
        cmp = compare_experiments(store, previous, experiment_id, by_position=by_position)
    except CompareError as exc:
        return out | {"compare": str(exc)}
    out["notes"] = cmp["notes"]
    out["variants"] = [
        {
            "variant": v["b_variant"],
            "previous_variant": v["variant"],
            "cases": v["cases"],
            "pass_rate": v["b"]["pass_rate"],
            "ci": v["b"]["ci"],
            "previous_pass_rate": v["a"]["pass_rate"],
            "previous_ci": v["a"]["ci"],
            "verdict": judged(v["a"]["ci"], v["b"]["ci"], v["cases"]),
            "regressed": [r["case"] for r in v["regressed"]],
            "improved": [r["case"] for r in v["improved"]],
        }
        for v in cmp["variants"]
    ]
    return out


def judged(before: list[float], after: list[float], cases: int) -> str:
    """The later pass rate against the earlier: worse or better only when their 95 % intervals are apart."""
    if not cases:
        return NO_EVIDENCE
    if after[1] < before[0]:
        return WORSE
    if after[0] > before[1]:
        return BETTER
    return NO_EVIDENCE


def run_due(store: Store, now: datetime | None = None, *, every_s: float = 300.0, deliver_to: Callable = deliver) -> list[dict]:
    """Feed the queues' new bad verdicts to their datasets, then run every schedule that is due and this
    process wins the period of (one replica per schedule and period)."""
    now = now or now_utc()
    sync_feeds(store)
    ran = []
    for schedule in store.list_schedules():
        if not store.claim_job(f"schedule {schedule['id']}"[:50], timedelta(seconds=every_s), now=now):
            continue
        if interrupt(store, schedule, now):
            log.warning("schedule %s: its last run was cut by a stop of its server; it runs again", schedule["name"])
        why = due(store, schedule, now)
        if why is None:
            continue
        try:
            ran.append(run_schedule(store, schedule, why[0], now, model=why[1], deliver_to=deliver_to))
        except Exception:  # one broken schedule must not stop the others
            log.exception("schedule %s could not run", schedule["name"])
    return ran


def summary(store: Store, schedule: dict) -> dict:
    """A schedule in a list: what it runs, when, and how its last run went."""
    last = _last_run(store, schedule)
    result = (last or {}).get("result") or {}
    return {
        "id": schedule["id"],
        "name": schedule["name"],
        "dataset": schedule["dataset"],
        "trigger": schedule["trigger"],
        "variants": [v.get("model") for v in schedule["settings"]["variants"]],
        "last_run": last["started_at"] if last else None,
        "last_experiment": last["experiment_id"] if last else None,
        "last_status": result.get("status") if last and last["finished_at"] else ("running" if last else None),
        "regressions": sum(len(v.get("regressed") or []) for v in result.get("variants") or []),
    }


# ---------------------------------------------------------------- the schedule's monitor


def check_monitor(store: Store, monitor: dict, rule: ExperimentRule, now: datetime, *, deliver_to: Callable = deliver) -> dict:
    """The schedule's last finished run judged: an alert opens when a pass rate dropped with evidence, and
    resolves when a later run is no longer worse."""
    schedule = store.get_schedule(rule.experiment)
    if schedule is None:
        raise RuleError(f"experiment: no schedule named {rule.experiment!r}")
    last = next((r for r in store.schedule_runs(schedule["id"]) if _completed(r)), None)
    result = (last or {}).get("result") or {}
    worse = [v for v in result.get("variants") or [] if v.get("verdict") == WORSE]
    verdict = "firing" if worse else ("ok" if result.get("previous") else "no evidence")
    sentence = _sentence(rule.experiment, result, worse)
    judged_now: dict[str, Any] = {
        "verdict": verdict,
        "sentence": sentence,
        "rule": rule.sentence(),
        "checked_at": now.isoformat(),
    }
    judged_now |= {"experiment": result.get("experiment"), "previous": result.get("previous")}
    store.record_check(monitor["id"], judged_now, now)
    current, event = store.open_alert(monitor["id"]), None
    if verdict == "firing" and current is None:
        v = worse[0]
        figure = judged_now | {
            "current": {"value": v["pass_rate"], "low": v["ci"][0], "high": v["ci"][1], "runs": v["cases"]},
            "baseline": {"value": v["previous_pass_rate"], "low": v["previous_ci"][0], "high": v["previous_ci"][1]},
            "runs_link": f"{config.public_url()}/experiments?experiment={result['experiment']}",
            "patterns": [f"regressed: {case}" for case in v["regressed"][:REGRESSIONS_NAMED]],
            "regressions": {w["variant"]: w["regressed"] for w in worse},
        }
        alert = {"id": store.add_alert(monitor["id"], figure, now), **figure}
        event = "opened"
    elif verdict == "ok" and current is not None and store.resolve_alert(current["id"], now):
        event, alert = "resolved", {"id": current["id"], **current["figure"], "resolved_by": judged_now}
    if event:
        announce(store, monitor, event, alert, sentence, now, deliver_to)
    return judged_now | {"event": event}


def _sentence(name: str, result: dict, worse: list[dict]) -> str:
    if not result.get("previous"):
        return f"{name}: no earlier scheduled run to compare with yet"
    if not worse:
        return f"{name}: no pass rate lower with evidence than in {result['previous']}"
    said = "; ".join(
        f"{v['variant']} {v['previous_pass_rate']:.0%} → {v['pass_rate']:.0%} (95 % intervals "
        f"{v['previous_ci'][0]:.0%}–{v['previous_ci'][1]:.0%} and {v['ci'][0]:.0%}–{v['ci'][1]:.0%}), "
        f"{len(v['regressed'])} cases passed before and fail now"
        for v in worse
    )
    return f"{name} ({result['experiment']} against {result['previous']}): pass rate lower on {said}"

"""Experiments: every case of a dataset replayed with every variant, scored, resumable.

A variant is a ReplayConfig (model, temperature, prompt change, any litellm parameter).
Each case × variant is one what-if replay (whatif.replay) from the same point of the case
— its first model turn by default, or a given seq — with the recorded tool answers; a
call the recording lacks ends that replay as diverged (or goes to the fallback model of a
`recorded` variant). The replay session is marked with source `experiment` and the tag
`experiment:<id>`, which keeps it out of ordinary lists and analytics (SessionFilter).

Money: the estimate (whatif.replay.estimate_for over every case) is checked against the
budget before anything runs; during the run a case is launched only while spend plus what
the runs in flight may still spend stays under the budget, and each replay gets the rest
as its own cost budget (checked before each model call, so N runs in flight can pass it by
at most N calls). A budget that cannot be checked — a model with no known price — is
refused rather than trusted.

Resumable: a case × variant is claimed in the database before it starts and marked done
with its scores when it ends, so a restarted experiment runs only what is not done and
never pays for a finished replay twice. A claim is a lease (`claim_lease_s`), renewed while
the replay runs: a second process running the same experiment (`run` and `resume` at once)
skips what the first holds and waits for it to end, so no case is paid for twice. The one
exception, stated: a replay in flight when its process died is run again once its lease
lapsed (`attempts` counts it).

Stoppable from anywhere: `request_stop` marks the experiment `stopping` in the database and
the process running it (this one, another replica, a CLI) reads that before each case it
launches; the runs in flight finish and `resume` runs the rest.
"""

from __future__ import annotations

import importlib
import math
import os
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any

from ..storage.actor import REPLAY, Actor
from ..storage.store import EXPERIMENT_SOURCE, Store
from ..understand.timeline import open_timeline
from . import dataset as datasets
from . import start_point
from .provider import load_litellm
from .reach import launch_problems, provider_score
from .recording import Recording
from .replay import Estimate, LiveTools, ReplayError, ReplayResult, estimate_for, recording_in, replay
from .replay_config import RECORDED, ConfigError, ReplayConfig
from .scorers import DEFAULT_SCORERS, ScoreInput, get_scorer, run_scorers, run_verdict
from .start_point import REFUSED, StartPoint

STATES = ("running", "stopping", "done", "stopped", "budget", "failed")


class ExperimentError(ValueError):
    """An experiment that cannot start or resume (unknown dataset, bad variant, over budget); nothing ran."""


def variant_name(config: ReplayConfig) -> str:
    """The model, with what else the variant changes."""
    parts = [config.label]
    if config.temperature is not None:
        parts.append(f"temperature {config.temperature:g}")
    if config.system_prompt is not None:
        parts.append(f"system prompt {'appended' if config.system_mode == 'append' else 'replaced'}")
    parts += [f"{k}={v}" for k, v in sorted(config.params.items())]
    return " · ".join(parts)


def parse_start(value: str | int | None) -> StartPoint:
    try:
        return start_point.parse(value)
    except start_point.StartError as exc:
        raise ExperimentError(f"--from: {exc}") from None


def open_case(store: Store, session_id: str, start: StartPoint) -> Recording:
    """The case's run opened once, from its start point; ReplayError says why it cannot be replayed."""
    try:
        timeline = open_timeline(store, session_id)
    except KeyError:
        raise ReplayError(f"the case's run {session_id} is no longer in the database") from None
    try:
        seq = start.resolve(timeline.steps)
    except start_point.NoSuchStep as exc:
        raise ReplayError(str(exc)) from None
    return recording_in(timeline, store, seq, None)


def load_tools(specs: list[str]) -> LiveTools:
    """Live tool functions named on the command line: NAME=module:function, or module:TOOLS (a dict name -> function)."""
    tools: LiveTools = {}
    for spec in specs:
        name, sep, target = spec.partition("=") if "=" in spec else ("", "", spec)
        module, colon, attr = target.partition(":")
        if not colon or not module or not attr:
            raise ExperimentError(f"--tool: expected NAME=module:function or module:TOOLS, got {spec!r}")
        try:
            found = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ExperimentError(f"--tool {spec!r}: cannot load it ({exc})") from None
        if isinstance(found, dict) and not sep:
            bad = [k for k, fn in found.items() if not callable(fn)]
            if bad:
                raise ExperimentError(f"--tool {spec!r}: {bad[0]} is not a function")
            tools.update(found)
        elif callable(found):
            tools[name or attr] = found
        else:
            raise ExperimentError(f"--tool {spec!r}: not a function (or a dict of them)")
    return tools


@dataclass
class Plan:
    """An experiment checked and estimated, before anything is spent."""

    dataset: dict
    cases: list[dict]
    configs: list[ReplayConfig]
    start: StartPoint
    scorers: list[str]
    scorer_options: dict[str, dict]
    concurrency: int
    budget_usd: float | None
    budget_tokens: int | None
    estimates: list[Estimate]  # one per variant, over every case
    unplayable: dict[str, str] = field(default_factory=dict)  # case -> why it cannot be replayed (refused when run)
    tools: list[str] = field(default_factory=list)  # live tool functions the experiment calls (given again to resume)

    def settings(self) -> dict:
        return {
            "variants": [c.to_json() for c in self.configs],
            "names": [variant_name(c) for c in self.configs],
            "start": self.start.spec,
            "tools": self.tools,
            "scorers": self.scorers,
            "scorer_options": self.scorer_options,
            "concurrency": self.concurrency,
            "budget_usd": self.budget_usd,
            "budget_tokens": self.budget_tokens,
            "estimates": [e.to_dict() for e in self.estimates],
        }


def plan(
    store: Store,
    dataset_name: str,
    configs: list[ReplayConfig],
    *,
    start: str | int | None = None,
    scorers: list[str] | None = None,
    scorer_options: dict[str, dict] | None = None,
    concurrency: int = 4,
    budget_usd: float | None = None,
    budget_tokens: int | None = None,
    tools: LiveTools | None = None,
) -> Plan:
    """Check everything an experiment needs and estimate it; ExperimentError when it cannot run as asked."""
    try:
        ds = datasets.get(store, dataset_name)
    except datasets.DatasetError as exc:
        raise ExperimentError(str(exc)) from None
    if not configs:
        raise ExperimentError("name at least one model (--model)")
    if concurrency < 1:
        raise ExperimentError("--concurrency: at least 1")
    check_budget_values(budget_usd, budget_tokens)
    names = list(scorers or DEFAULT_SCORERS)
    for name in names:
        try:
            get_scorer(name)
        except ValueError as exc:
            raise ExperimentError(str(exc)) from None
    unreachable = launch_problems(configs)
    if unreachable:
        raise ExperimentError("; ".join(unreachable))
    start_point = parse_start(start)
    if any(c.tool_mode == "live" for c in configs) and not tools:
        raise ExperimentError("a variant asks for live tools (tool_mode live) but no tool functions were given (tools=…, --tool)")
    cases = store.dataset_cases(ds["id"], version=ds["version"])
    totals = [Estimate(variant_name(c), 0, 0, 0, 0.0) for c in configs]
    unplayable: dict[str, str] = {}
    for case in cases:
        try:
            rec = open_case(store, case["session_id"], start_point)
        except ReplayError as exc:
            unplayable[case["session_id"]] = str(exc)
            continue
        for total, est in zip(totals, estimate_for(rec, configs), strict=True):
            total.turns += est.turns
            total.tokens_in += est.tokens_in
            total.tokens_out += est.tokens_out
            total.cost_usd = None if total.cost_usd is None or est.cost_usd is None else round(total.cost_usd + est.cost_usd, 6)
            total.notes = list(dict.fromkeys([*total.notes, *est.notes]))
    out = Plan(
        ds,
        cases,
        configs,
        start_point,
        names,
        scorer_options or {},
        concurrency,
        budget_usd,
        budget_tokens,
        totals,
        unplayable,
        sorted(tools or {}),
    )
    check_budget(out, spent_usd=0.0, spent_tokens=0)
    return out


def check_budget_values(budget_usd: float | None, budget_tokens: int | None) -> None:
    """A budget is a finite amount above zero: NaN, infinity, zero or less would mean no budget at all."""
    if budget_usd is not None and not (isinstance(budget_usd, int | float) and math.isfinite(budget_usd) and budget_usd > 0):
        raise ExperimentError(f"--budget-usd: expected a finite amount above 0, got {budget_usd!r}")
    if budget_tokens is not None and not (isinstance(budget_tokens, int) and budget_tokens > 0):
        raise ExperimentError(f"--budget-tokens: expected a whole number above 0, got {budget_tokens!r}")


def check_budget(p: Plan, *, spent_usd: float, spent_tokens: int, share: float = 1.0) -> None:
    """Refuse an estimate over the budget, or a dollar budget that cannot be checked (unknown prices)."""
    if p.budget_usd is not None:
        unknown = [e.model for e in p.estimates if e.cost_usd is None]
        if unknown:
            raise ExperimentError(
                f"--budget-usd cannot be checked: no price for {', '.join(unknown)} (give its prices, "
                f"input_cost_per_token / output_cost_per_token, or drop the dollar budget)"
            )
        cost = sum(e.cost_usd or 0.0 for e in p.estimates) * share
        if spent_usd + cost > p.budget_usd:
            raise ExperimentError(
                f"the estimate, ${cost:.4f}"
                + (f" on top of ${spent_usd:.4f} spent" if spent_usd else "")
                + f", is over the budget of ${p.budget_usd:.4f}"
            )
    if p.budget_tokens is not None:
        tokens = int(sum(e.tokens_in + e.tokens_out for e in p.estimates) * share)
        if spent_tokens + tokens > p.budget_tokens:
            raise ExperimentError(
                f"the estimate, {tokens} tokens"
                + (f" on top of {spent_tokens} spent" if spent_tokens else "")
                + f", is over the budget of {p.budget_tokens} tokens"
            )


def create(store: Store, p: Plan) -> str:
    experiment_id = f"exp-{uuid.uuid4().hex[:12]}"
    store.create_experiment(experiment_id, p.dataset["id"], p.dataset["version"], p.settings())
    return experiment_id


def plan_of(store: Store, experiment_id: str, *, budget_usd: float | None = None, budget_tokens: int | None = None) -> Plan:
    """The stored experiment as a plan again (for resume), with a new budget if one is given."""
    row = _experiment(store, experiment_id)
    s = row["settings"]
    ds = store.get_dataset(row["dataset_id"])
    if ds is None:
        raise ExperimentError(f"experiment {experiment_id!r}: its dataset {row['dataset_id']!r} is gone")
    return Plan(
        dataset={**ds, "version": row["dataset_version"]},
        cases=store.dataset_cases(row["dataset_id"], version=row["dataset_version"]),
        configs=[ReplayConfig.from_json(v) for v in s["variants"]],
        start=parse_start(s["start"]),
        scorers=s["scorers"],
        scorer_options=s.get("scorer_options") or {},
        concurrency=s.get("concurrency") or 4,
        budget_usd=budget_usd if budget_usd is not None else s.get("budget_usd"),
        budget_tokens=budget_tokens if budget_tokens is not None else s.get("budget_tokens"),
        estimates=[Estimate(**e) for e in s.get("estimates") or []],
        tools=s.get("tools") or [],
    )


# ---------------------------------------------------------------------------- running


def claim_lease_s() -> float:
    """How long a claimed case × variant stays its runner's without a renewal: AGENT_REPLAY_EXPERIMENT_LEASE_S
    (default 30 s; renewed every third of it). A runner that died holds its cases this long at most."""
    return float(os.environ.get("AGENT_REPLAY_EXPERIMENT_LEASE_S", "30"))


@dataclass
class Progress:
    experiment: str
    done: list[int]  # per variant
    total: int  # cases per variant
    spent_usd: float
    message: str = ""


class _Spend:
    """Known dollars and tokens spent, and what the runs in flight may still spend."""

    def __init__(self, usd: float, tokens: int):
        self.usd, self.tokens = usd, tokens
        self.reserved_usd = 0.0
        self.reserved_tokens = 0
        self.lock = threading.Lock()


class _Runner:
    def __init__(
        self,
        store: Store,
        experiment_id: str,
        p: Plan,
        stop: threading.Event | None,
        on_progress: Callable[[Progress], None] | None,
        tools: LiveTools | None = None,
        actor: Actor | None = None,
    ):
        self.store, self.id, self.plan, self.actor = store, experiment_id, p, actor
        self.stop = stop or threading.Event()
        self.on_progress = on_progress
        self.tools = tools or {}
        self.cases = {c["session_id"]: c for c in p.cases}
        # Each case's run is opened once for all its variants (case-major order keeps them close) and
        # let go when its last variant ends: one timeline read per case, not one per replay.
        self.recordings: dict[str, Recording | str] = {}  # case -> its recording, or why it cannot be replayed
        self.left: Counter = Counter()  # case -> variants still to run
        self.open_lock = threading.Lock()
        n = max(1, len(p.cases))
        # What one case × variant is expected to cost: the variant's estimate spread over its cases.
        self.unit_usd = [(e.cost_usd or 0.0) / n for e in p.estimates] or [0.0] * len(p.configs)
        self.unit_tokens = [(e.tokens_in + e.tokens_out) // n for e in p.estimates] or [0] * len(p.configs)
        self.progress_lock = threading.Lock()

    def _recording(self, sid: str) -> Recording | str:
        with self.open_lock:
            if sid not in self.recordings:
                try:
                    self.recordings[sid] = open_case(self.store, sid, self.plan.start)
                except ReplayError as exc:
                    self.recordings[sid] = str(exc)
            return self.recordings[sid]

    def _release(self, sid: str) -> None:
        with self.open_lock:
            self.left[sid] -= 1
            if self.left[sid] <= 0:
                self.recordings.pop(sid, None)

    def run(self) -> str:
        runs = self.store.experiment_runs(self.id)
        done = {(r["case_session"], r["variant"]) for r in runs if r["state"] == "done"}
        spend = _Spend(
            sum((r["cost_usd"] or 0.0) + _scoring_cost(r) for r in runs if r["state"] == "done"),
            sum((r["tokens_in"] or 0) + (r["tokens_out"] or 0) for r in runs if r["state"] == "done"),
        )
        self.done = [sum(1 for r in runs if r["state"] == "done" and r["variant"] == v) for v in range(len(self.plan.configs))]
        # case-major order: every variant of a case close together, so a stopped experiment still compares like with like
        todo = deque(
            (c["session_id"], v)
            for c in self.plan.cases
            for v in range(len(self.plan.configs))
            if (c["session_id"], v) not in done
        )
        self.left = Counter(sid for sid, _ in todo)
        if todo and any(c.model != RECORDED or c.fallback_model for c in self.plan.configs):
            load_litellm()
        self.store.set_experiment_status(self.id, "running", None, finished=False)
        self._report(spend, "started")
        stopped_by: str | None = None
        in_flight: dict[Future, tuple[str, int, float, int]] = {}
        held: deque[tuple[str, int]] = deque()  # claimed by another runner: done by it, or taken once its lease lapses
        lease = claim_lease_s()
        with ThreadPoolExecutor(max_workers=self.plan.concurrency, thread_name_prefix="experiment") as pool:
            while todo or in_flight or (held and stopped_by is None):
                if not todo and not in_flight:  # only others' claims left: look again in a while
                    self.stop.wait(min(1.0, lease / 3))
                    todo, held = held, deque()
                while todo and len(in_flight) < self.plan.concurrency and stopped_by is None:
                    if self.stop.is_set() or self.store.experiment_status(self.id) == "stopping":
                        stopped_by = "stopped"
                        break
                    sid, v = todo[0]
                    allowance = self._allowance(spend, v)
                    if allowance is None:
                        if in_flight:
                            break  # wait: runs in flight may come in under what they hold
                        stopped_by = "budget"
                        break
                    todo.popleft()
                    claim = self.store.claim_experiment_run(self.id, sid, v, lease_s=lease)
                    if claim == "held":
                        held.append((sid, v))
                        continue
                    if claim == "done":  # done meanwhile, by another process
                        self._release(sid)
                        self.done[v] += 1
                        continue
                    with spend.lock:
                        spend.reserved_usd += self.unit_usd[v]
                        spend.reserved_tokens += self.unit_tokens[v]
                    in_flight[pool.submit(self._run_one, sid, v, allowance)] = (sid, v, self.unit_usd[v], self.unit_tokens[v])
                if not in_flight:
                    if held and stopped_by is None:
                        continue
                    break
                finished, _ = wait(list(in_flight), timeout=lease / 3, return_when=FIRST_COMPLETED)
                self.store.renew_experiment_runs(self.id, [(sid, v) for sid, v, _, _ in in_flight.values()], lease_s=lease)
                for fut in finished:
                    sid, v, held_usd, held_tokens = in_flight.pop(fut)
                    cost, tokens = fut.result()  # _run_one never raises: it stores its own failure
                    with spend.lock:
                        spend.reserved_usd -= held_usd
                        spend.reserved_tokens -= held_tokens
                        spend.usd += cost
                        spend.tokens += tokens
                    self.done[v] += 1
                    self._report(spend, f"{sid} × {variant_name(self.plan.configs[v])}")
        left = len(todo) + len(held)
        if stopped_by == "budget":
            budget = (
                f"${spend.usd:.4f} of ${self.plan.budget_usd:.4f}"
                if self.plan.budget_usd is not None
                else f"{spend.tokens} of {self.plan.budget_tokens} tokens"
            )
            message = f"budget spent ({budget}): {left} case × variant runs not started; resume with a higher budget"
        elif stopped_by == "stopped":
            message = f"stopped: {left} case × variant runs not started; resume to run them"
        else:
            message = None
        status = stopped_by or "done"
        self.store.set_experiment_status(self.id, status, message)
        self._report(spend, message or "done")
        return status

    def _allowance(self, spend: _Spend, v: int) -> float | None:
        """The dollars the next run of variant v may spend (inf without a dollar budget); None: over budget."""
        p = self.plan
        with spend.lock:
            if p.budget_tokens is not None and spend.tokens + spend.reserved_tokens + self.unit_tokens[v] > p.budget_tokens:
                return None
            if p.budget_usd is None:
                return float("inf")
            left = p.budget_usd - spend.usd - spend.reserved_usd
            return left if left > 0 and left >= self.unit_usd[v] * 0.5 else None

    def _report(self, spend: _Spend, message: str) -> None:
        if self.on_progress is not None:
            with self.progress_lock:
                self.on_progress(Progress(self.id, list(self.done), len(self.plan.cases), round(spend.usd, 6), message))

    def _run_one(self, sid: str, v: int, allowance: float) -> tuple[float, int]:
        """Replay one case with one variant, score it, store it; returns (dollars, tokens) spent."""
        started = time.perf_counter()
        config = self.plan.configs[v]
        if allowance != float("inf"):
            cap = allowance if config.budget.max_cost_usd is None else min(allowance, config.budget.max_cost_usd)
            config = replace(config, budget=replace(config.budget, max_cost_usd=cap))
        try:
            rec = self._recording(sid)
            if isinstance(rec, str):  # no such start point, no model output after it, run deleted: refused, counted
                self.store.finish_experiment_run(
                    self.id,
                    sid,
                    v,
                    outcome=REFUSED,
                    error_class="ReplayError",
                    passed=None,
                    scores=[{"name": "start", "passed": False, "reason": rec}],
                )
                return 0.0, 0
            try:
                result = replay(
                    self.store,
                    sid,
                    rec.from_step,
                    None,
                    config,
                    source=EXPERIMENT_SOURCE,
                    tags=(f"experiment:{self.id}",),
                    live_tools=self.tools,
                    recording=rec,
                    actor=self.actor,
                )
            except (ReplayError, ConfigError) as exc:
                unscored = isinstance(exc, ConfigError)  # its settings reach no provider: nothing was judged
                self.store.finish_experiment_run(
                    self.id,
                    sid,
                    v,
                    outcome="error",
                    error_class=type(exc).__name__,
                    passed=None if unscored else 0,
                    scores=[{"name": "replay", "passed": None if unscored else False, "reason": str(exc)}],
                )
                return 0.0, 0
            return self._score(sid, v, rec, result, started)
        finally:
            self._release(sid)

    def _score(self, sid, v, rec: Recording, result: ReplayResult, started: float) -> tuple[float, int]:
        case = self.cases[sid]
        inp = ScoreInput(
            sid,
            case["expected"],
            self.plan.dataset["match"],
            rec.session,
            rec.timeline.steps,
            result,
            self.store.load_steps(result.session),
            rec.from_step,
            original_verdict=run_verdict(self.store.annotations(sid)),
        )
        if result.outcome == "provider_error":  # no answer from the provider says nothing about the model
            scores, stored, passed = [], [provider_score(result.error_class, result.message, result.model)], None
        else:
            scores = run_scorers(self.plan.scorers, inp, self.plan.scorer_options)
            stored, passed = [s.to_dict() for s in scores], int(all(s.passed for s in scores))
        scoring_cost = sum(s.cost_usd or 0.0 for s in scores)
        scoring_ms = sum(float(s.details.get("latency_ms") or 0.0) for s in scores)
        div = result.first_divergence
        overhead = (time.perf_counter() - started) * 1000 - result.latency_ms - scoring_ms
        self.store.finish_experiment_run(
            self.id,
            sid,
            v,
            replay_session=result.session,
            outcome=result.outcome,
            error_class=result.error_class,
            passed=passed,
            scores=stored,
            cost_usd=result.cost_usd,
            tokens_in=result.tokens_in,
            tokens_out=result.tokens_out,
            latency_ms=result.latency_ms,
            overhead_ms=round(overhead, 2),
            departed_seq=div.get("a_seq") if div else None,
        )
        return (result.cost_usd or 0.0) + scoring_cost, result.tokens_in + result.tokens_out


def _experiment(store: Store, experiment_id: str) -> dict:
    row = store.get_experiment(experiment_id)
    if row is None:
        raise ExperimentError(f"no experiment {experiment_id!r}")
    return row


def _scoring_cost(run: dict) -> float:
    return sum(s.get("cost_usd") or 0.0 for s in run.get("scores") or [])


def run(
    store: Store,
    experiment_id: str,
    *,
    stop: threading.Event | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    budget_usd: float | None = None,
    budget_tokens: int | None = None,
    tools: LiveTools | None = None,
    actor: Actor | None = None,
) -> str:
    """Run (or resume) an experiment to its end, a stop or its budget; returns its status.

    Resuming checks the estimate for what is left against what the budget has left.
    `tools`: live tool functions by name (the SDK's @tool functions or any callables); an
    experiment planned with them must be given them again to resume. `actor`: who launched it
    (default the local user): each case's replay is authorized and audited as theirs.
    """
    check_budget_values(budget_usd, budget_tokens)
    p = plan_of(store, experiment_id, budget_usd=budget_usd, budget_tokens=budget_tokens)
    _check_tools(p, tools)
    runs = store.experiment_runs(experiment_id)
    done = [r for r in runs if r["state"] == "done"]
    total = len(p.cases) * len(p.configs)
    if total and done:
        check_budget(
            p,
            spent_usd=sum((r["cost_usd"] or 0.0) + _scoring_cost(r) for r in done),
            spent_tokens=sum((r["tokens_in"] or 0) + (r["tokens_out"] or 0) for r in done),
            share=(total - len(done)) / total,
        )
    if budget_usd is not None or budget_tokens is not None:
        row = _experiment(store, experiment_id)
        settings = {**row["settings"], "budget_usd": p.budget_usd, "budget_tokens": p.budget_tokens}
        store.update_experiment_settings(experiment_id, settings)
    try:
        live = {k: tools[k] for k in p.tools} if tools else {}
        return _Runner(store, experiment_id, p, stop, on_progress, live, actor).run()
    except Exception as exc:  # a broken store or a bug: the experiment says so and can be resumed
        from ..ingest.redact import default_redactor

        said, _ = default_redactor().scrub(f"{type(exc).__name__}: {str(exc)[:500]}")  # it may quote a provider's answer
        store.set_experiment_status(experiment_id, "failed", said)
        raise


def _check_tools(p: Plan, tools: LiveTools | None) -> None:
    missing = [t for t in p.tools if t not in (tools or {})]
    if missing:
        raise ExperimentError(f"this experiment calls live tools it was not given: {', '.join(missing)} (pass tools=… or --tool)")


def start(store: Store, dataset_name: str, configs: list[ReplayConfig], **options: Any) -> tuple[str, Plan]:
    """Plan (checks, estimate, budget) and store a new experiment; run it with `run` or `launch`."""
    p = plan(store, dataset_name, configs, **options)
    return create(store, p), p


# ---------------------------------------------------------------------------- in the background (page, HTTP)

_BACKGROUND: dict[str, tuple[threading.Thread, threading.Event]] = {}
_BACKGROUND_LOCK = threading.Lock()


def launch(store: Store, experiment_id: str, **options: Any) -> threading.Thread:
    """Run an experiment on a background thread; its progress is read from the database. What would make it
    refuse to start (no such experiment, live tools it is not given) is raised here, not lost on the thread."""
    _check_tools(plan_of(store, experiment_id), options.get("tools"))
    with _BACKGROUND_LOCK:
        running = _BACKGROUND.get(experiment_id)
        if running is not None and running[0].is_alive():
            raise ExperimentError(f"experiment {experiment_id} is running already")
        stop = threading.Event()

        def work() -> None:
            try:
                run(store, experiment_id, stop=stop, **options)
            except Exception:  # stored as the experiment's status by run()
                pass

        thread = threading.Thread(target=work, name=f"experiment-{experiment_id}", daemon=True)
        _BACKGROUND[experiment_id] = (thread, stop)
        thread.start()
        return thread


def request_stop(store: Store, experiment_id: str, *, actor: Actor | None = None) -> str:
    """Stop a running experiment launching cases, wherever it runs; the replays in flight finish, and
    `resume` runs the rest. Editors only (`actor`, default the local user), in the audit log.
    Returns the status it is left in (`stopping`, then `stopped` once its runner has seen it)."""
    actor = store.authorize(actor, REPLAY, f"experiment {experiment_id}")
    status = store.experiment_status(experiment_id)
    if status is None:
        raise ExperimentError(f"no experiment {experiment_id!r}")
    if not store.ask_experiment_stop(experiment_id, "stop asked: the replays in flight finish; resume to run the rest"):
        raise ExperimentError(f"experiment {experiment_id} is {status}, not running: nothing to stop")
    with _BACKGROUND_LOCK:
        running = _BACKGROUND.get(experiment_id)
    if running is not None and running[0].is_alive():
        running[1].set()  # this process runs it: no need to wait for its next look at the database
    store.record_audit(actor, REPLAY, target=f"experiment {experiment_id}", detail={"op": "stop"})
    return "stopping"

"""What the MCP tools that act answer: a replay from a step, an experiment, a review queue's next run and
its verdict, a share link. Each checks before it spends: a model's credentials (or its API base), the
estimate against a budget the caller must give; refusals are sentences the calling agent can act on."""

from __future__ import annotations

import math

from ..storage.actor import Actor
from ..storage.store import Store
from .answers import Answer, AnswerError, budget, open_run, run_line

EXPERIMENT_WAIT_S = 30.0  # how long run_experiment waits for the result before answering with the id to poll


def _ready(model: str, api_base: str | None) -> None:
    """Refuse a model that cannot run here, naming the fix (What-if's own check)."""
    from ..whatif.models import ModelOption, readiness
    from ..whatif.replay_config import RECORDED

    if model == RECORDED:
        return
    found = readiness(ModelOption(model, model, api_base=api_base))
    if not found.ok:
        raise AnswerError(f"{found.reason} Fix: {found.fix}" if found.fix else str(found.reason))


def _budget_usd(value: float) -> float:
    if not (math.isfinite(value) and value > 0):
        raise AnswerError(f"budget_usd: expected a positive number of dollars, got {value}")
    return value


def replay_from_step(
    store: Store,
    actor: Actor,
    run_id: str,
    *,
    from_step: int | None,
    to_step: int | None,
    model: str,
    api_base: str | None,
    system_prompt: str | None,
    budget_usd: float,
    max_chars: int | None,
) -> Answer:
    """Estimate first, refuse past the budget, then replay the range and say how it went."""
    from ..whatif.replay import ReplayError, estimate, replay
    from ..whatif.replay_config import Budget, ConfigError, ReplayConfig

    open_run(store, run_id)
    limit = _budget_usd(budget_usd)
    _ready(model, api_base)
    try:
        config = ReplayConfig(model=model, api_base=api_base, system_prompt=system_prompt, budget=Budget(max_cost_usd=limit))
        [est] = estimate(store, run_id, from_step, to_step, [config])
    except (ReplayError, ConfigError) as exc:
        raise AnswerError(str(exc)) from None
    if est.cost_usd is not None and est.cost_usd > limit:
        raise AnswerError(
            f"the estimate is ${est.cost_usd:.4f} ({est.tokens_in:,} tokens in, {est.tokens_out:,} out), "
            f"over budget_usd={limit}: raise the budget or replay a shorter range"
        )
    try:
        result = replay(store, run_id, from_step, to_step, config, actor=actor)
    except (ReplayError, ConfigError) as exc:
        raise AnswerError(str(exc)) from None
    answer = Answer(budget(max_chars))
    spent = f"${result.cost_usd:.4f}" if result.cost_usd is not None else "an unknown cost"
    answer.add(f"Replay {result.session} of {run_id} with {result.model}: {result.status} ({result.outcome}) — {result.message}")
    answer.add(
        f"{result.steps} steps, {result.model_calls} model calls, {result.tokens_in + result.tokens_out:,} tokens, {spent}."
    )
    estimate_line = f"${est.cost_usd:.4f}" if est.cost_usd is not None else "unknown (no price for this model)"
    answer.add(f"Estimated beforehand: {estimate_line}.")
    if result.first_divergence:
        answer.add(f"First divergence from the original: {result.first_divergence.get('summary')}")
    answer.note(f"Read it with get_run run_id={result.session!r}, or compare_runs run_a={run_id!r} run_b={result.session!r}.")
    answer.data = {"replay": result.to_dict(), "estimate": est.to_dict()}
    return answer


def run_experiment(
    store: Store,
    actor: Actor,
    dataset: str,
    models: list[str],
    *,
    api_base: str | None,
    budget_usd: float,
    wait_seconds: float,
    max_chars: int | None,
) -> Answer:
    """Plan (estimate within the budget, every model ready), launch in the background, wait a while for the result."""
    from ..whatif import experiment
    from ..whatif.replay_config import ConfigError, ReplayConfig

    store.authorize(actor, "replay", f"dataset {dataset}")
    limit = _budget_usd(budget_usd)
    if not models:
        raise AnswerError("models: name at least one model")
    for model in models:
        _ready(model, api_base)
    try:
        configs = [ReplayConfig(model=m, api_base=api_base) for m in models]
        experiment_id, plan = experiment.start(store, dataset, configs, budget_usd=limit)
        thread = experiment.launch(store, experiment_id, actor=actor)
    except (experiment.ExperimentError, ConfigError) as exc:
        raise AnswerError(str(exc)) from None
    store.record_audit(actor, "replay", target=f"experiment {experiment_id}", detail={"dataset": dataset, "models": models})
    thread.join(timeout=max(0.0, min(wait_seconds, 300.0)))
    return experiment_status(store, experiment_id, max_chars=max_chars)


def experiment_status(store: Store, experiment_id: str, *, max_chars: int | None) -> Answer:
    """An experiment's status and, per model, its pass rate and cost so far."""
    from ..whatif.results import summarise

    try:
        summary = summarise(store, experiment_id)
    except KeyError:
        raise AnswerError(f"no experiment {experiment_id!r}") from None
    answer = Answer(budget(max_chars))
    status = summary["status"]
    progress = summary["progress"]
    answer.add(
        f"Experiment {experiment_id} on dataset {summary['dataset']}: {status}, "
        f"{progress['done']} of {progress['total']} replays done."
    )
    for v in summary.get("variants", []):
        rate = v.get("pass_rate")
        rate_text = f"{rate:.0%}" if isinstance(rate, int | float) else "no score yet"
        answer.add(f"- {v['name']}: {v.get('cases', 0)} cases scored, pass rate {rate_text}, cost ${v.get('cost_usd') or 0:.4f}")
    if status in ("running", "pending", "stopping"):
        answer.note(f"Still running: call get_experiment with experiment_id={experiment_id!r} later.")
    answer.data = {"experiment_id": experiment_id, "status": status, "variants": summary.get("variants", [])}
    return answer


def review_next(store: Store, actor: Actor, queue_id: int, *, max_chars: int | None) -> Answer:
    """Hold the queue's next run for the caller (the reviewer is who the credentials say, never a typed name)."""
    from ..team import queues

    try:
        item = queues.next_item(store, queue_id, actor.who, actor=actor)
    except queues.QueueError as exc:
        raise AnswerError(str(exc)) from None
    answer = Answer(budget(max_chars))
    if item is None:
        answer.add(f"Nothing is left in queue {queue_id} for {actor.who}.")
        answer.data = {"queue_id": queue_id, "item": None}
        return answer
    row = store.get_session(item["session_id"]) or {"id": item["session_id"]}
    rubric = queues.get(store, queue_id)["rubric"]
    answer.add(f"Held for you: item {item['id']} of queue {queue_id}, run " + run_line(row))
    answer.add(f"Verdicts: {', '.join(rubric['verdicts'])}.")
    for criterion in rubric["criteria"]:
        answer.add(f"Criterion {criterion['name']!r} (pass or fail): {criterion['description'] or ''}".rstrip(": "))
    answer.note(f"Read it with get_run, then submit_verdict queue_id={queue_id} item_id={item['id']} with one of the verdicts.")
    answer.data = {"queue_id": queue_id, "item": item, "rubric": rubric}
    return answer


def submit_verdict(
    store: Store,
    actor: Actor,
    queue_id: int,
    item_id: int,
    verdict: str,
    *,
    criteria: dict[str, str] | None,
    note: str | None,
    should_have: str | None,
) -> Answer:
    from ..team import queues

    try:
        queues.save_review(
            store, queue_id, item_id, actor.who, verdict, criteria=criteria, note=note, should_have=should_have, actor=actor
        )
    except queues.QueueError as exc:
        raise AnswerError(str(exc)) from None
    answer = Answer()
    answer.add(f"Saved: {verdict} on item {item_id} of queue {queue_id}, by {actor.who}.")
    answer.data = {"queue_id": queue_id, "item_id": item_id, "verdict": verdict}
    return answer


def share_link(store: Store, actor: Actor, run_id: str, other: str | None, expires: str | None, base_url: str | None) -> Answer:
    """A read-only, expiring link to one run (or a comparison of two); the token is in this answer only."""
    from ..team import shares

    open_run(store, run_id)
    try:
        link = shares.make(
            store,
            "compare" if other else "run",
            session=run_id,
            other=other,
            expires=shares.parse_expiry(expires),
            actor=actor,
            base_url=base_url,
        )
    except shares.ShareError as exc:
        raise AnswerError(str(exc)) from None
    answer = Answer()
    answer.add(f"Link to {'the comparison of ' + run_id + ' and ' + other if other else run_id}: {link['url']}")
    answer.add(
        f"Read-only, expires {link['expires_at']}; "
        f"revoke it on the Review queues page or with `agent-replay share revoke {link['id']}`."
    )
    answer.data = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in link.items()}
    return answer

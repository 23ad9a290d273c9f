"""Whether a replay's models can reach their providers: checked before launch, read after.

Before: every live model a set of replay settings calls (the model, or the fallback of the
run's own answers) is checked as What-if checks it (models.readiness: the key its provider
needs, or that its API base answers); a model that cannot run refuses the launch, naming the
missing variable and the line that fixes it.

After: a replay that could not get an answer from its provider (no credentials, a refused
key, a timeout, a rate limit, a server error) says nothing about the model. Such a case is
"not scored (provider error: …)": counted apart and kept out of pass rates, never a fail.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..understand.replay_outcome import plain_error, provider_of
from .models import ModelOption, readiness
from .replay_config import RECORDED, ReplayConfig

NOT_SCORED = "not scored"


def live_models(config: ReplayConfig) -> list[str]:
    """The live models a replay with `config` may call."""
    if config.model == RECORDED:
        return [config.fallback_model] if config.fallback_model else []
    return [config.model]


def launch_problems(configs: list[ReplayConfig], environ: Mapping[str, str] | None = None) -> list[str]:
    """One sentence per live model that cannot run now: why, and the fix (each model checked once)."""
    problems: list[str] = []
    seen: set[tuple] = set()
    for config in configs:
        for model in live_models(config):
            key = (model, config.api_base, config.api_key_env)
            if key in seen:
                continue
            seen.add(key)
            option = ModelOption(model, model, provider_of(model) if "/" in model else None, config.api_base, config.api_key_env)
            ready = readiness(option, environ)
            if not ready.ok:
                problems.append(f"{model} cannot run: {ready.reason} Fix: {ready.fix}")
    return problems


def not_scored_reason(run: Mapping) -> str | None:
    """Why a finished case × variant was not scored (its provider gave no answer); None when it was judged.

    Read from what the run stored (outcome, error class, the first score's reason), so rows kept
    before this rule existed are read the same way."""
    outcome = run.get("outcome")
    if outcome == "provider_error":
        reason = next((s.get("reason") for s in run.get("scores") or [] if s.get("name") == "provider"), None)
        return reason or f"{NOT_SCORED} (provider error: {plain_error(run.get('error_class'), None, run.get('model'))})"
    if outcome == "error" and run.get("error_class") == "ConfigError":
        message = next((s.get("reason") for s in run.get("scores") or []), None) or "its settings could not reach a provider"
        return f"{NOT_SCORED} (provider error: {message})"
    return None


def provider_score(error_class: str | None, message: str | None, model: str | None) -> dict:
    """The stored score of a case whose provider gave no answer: a reason, no verdict."""
    words = plain_error(error_class, message, model)
    return {"name": "provider", "passed": None, "reason": f"{NOT_SCORED} (provider error: {words})", "message": message}

"""What a what-if replay runs with: model, sampling, prompt change, tools, budget.

A config is stored with the replay session (`replay_config`), so it never holds a
secret: the API key is named by the environment variable that holds it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

RECORDED = "recorded"  # the model that answers from the original run
SYSTEM_MODES = ("replace", "append")
TOOL_MODES = ("recorded", "live", "none")
# litellm arguments a config may not set through `params`: the replay owns them.
RESERVED_PARAMS = frozenset({"model", "messages", "tools", "api_key", "api_base", "stream", "timeout", "max_retries", "n"})
# Environment variables that mean a hosted provider is set up.
PROVIDER_KEYS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "TOGETHERAI_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
    "AZURE_API_KEY",
    "COHERE_API_KEY",
    "XAI_API_KEY",
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ConfigError(ValueError):
    """A replay setting that cannot work; the message names the setting."""


@dataclass
class Budget:
    """When a replay gives up: steps made, dollars spent (known costs), seconds."""

    max_steps: int | None = None  # None: twice the replayed range plus 20
    max_cost_usd: float | None = None
    timeout_s: float | None = 600.0


@dataclass
class ReplayConfig:
    model: str
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    system_prompt: str | None = None  # None: keep the original system prompt
    system_mode: str = "replace"  # or "append" to the original
    params: dict[str, Any] = field(default_factory=dict)  # other litellm parameters
    api_base: str | None = None  # a local OpenAI-compatible server (vLLM, Ollama, LM Studio)
    api_key_env: str | None = None  # NAME of the environment variable holding the key
    tool_mode: str = "recorded"  # recorded answers first | live functions first | no tools offered
    fallback_model: str | None = None  # with model "recorded": asked where the recording has no answer
    budget: Budget = field(default_factory=Budget)
    retries: int = 3  # on rate limits, with exponential backoff
    backoff_s: float = 1.0
    request_timeout_s: float = 60.0  # per model call; the budget's timeout_s bounds the whole replay
    input_cost_per_token: float | None = None  # prices for models litellm does not know
    output_cost_per_token: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.budget, dict):
            self.budget = Budget(**self.budget)
        self.validate()

    @property
    def label(self) -> str:
        return f"{self.model} → {self.fallback_model}" if self.fallback_model else self.model

    def validate(self) -> None:
        if not self.model or not self.model.strip():
            raise ConfigError("model: give a litellm model string (e.g. openai/gpt-4o-mini) or 'recorded'")
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            raise ConfigError(f"temperature: must be between 0 and 2, got {self.temperature}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ConfigError(f"top_p: must be in (0, 1], got {self.top_p}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ConfigError(f"max_tokens: must be at least 1, got {self.max_tokens}")
        if self.system_mode not in SYSTEM_MODES:
            raise ConfigError(f"system_mode: expected one of {', '.join(SYSTEM_MODES)}, got {self.system_mode!r}")
        if self.tool_mode not in TOOL_MODES:
            raise ConfigError(f"tool_mode: expected one of {', '.join(TOOL_MODES)}, got {self.tool_mode!r}")
        if self.api_key_env is not None and not _ENV_NAME.match(self.api_key_env):
            raise ConfigError("api_key_env: give the NAME of an environment variable (e.g. OPENAI_API_KEY), never the key itself")
        reserved = sorted(RESERVED_PARAMS & set(self.params))
        if reserved:
            raise ConfigError(f"params: {reserved[0]!r} is set by the replay itself; use the matching setting")
        if self.fallback_model is not None and self.model != RECORDED:
            raise ConfigError("fallback_model: only meaningful with model 'recorded'")
        if self.fallback_model == RECORDED:
            raise ConfigError("fallback_model: must be a live model")
        if self.retries < 0 or self.backoff_s < 0 or self.request_timeout_s <= 0:
            raise ConfigError("retries, backoff_s and request_timeout_s: must not be negative")
        b = self.budget
        if (
            (b.max_steps is not None and b.max_steps < 1)
            or (b.max_cost_usd is not None and b.max_cost_usd < 0)
            or (b.timeout_s is not None and b.timeout_s <= 0)
        ):
            raise ConfigError("budget: max_steps must be at least 1, max_cost_usd and timeout_s positive")

    def to_json(self) -> dict[str, Any]:
        """The stored form: every setting, no secret."""
        out = asdict(self)
        return {k: v for k, v in out.items() if v not in (None, {}) or k == "system_prompt"}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReplayConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"{unknown[0]}: not a replay setting")
        return cls(**data)

    def api_key(self) -> str | None:
        """The key, read from the named variable when the call is made."""
        if self.api_key_env:
            value = os.environ.get(self.api_key_env)
            if not value:
                raise ConfigError(f"api_key_env: environment variable {self.api_key_env} is not set")
            return value
        # Local OpenAI-compatible servers take any key, but the client insists on one.
        return "no-key" if self.api_base else None


def configured_models() -> list[str]:
    """Models offered in the UI: AGENT_REPLAY_MODELS (comma separated), then 'recorded'."""
    listed = [m.strip() for m in os.environ.get("AGENT_REPLAY_MODELS", "").split(",") if m.strip()]
    return [*dict.fromkeys(listed), RECORDED] if RECORDED not in listed else listed


def default_api_base() -> str | None:
    return os.environ.get("AGENT_REPLAY_API_BASE") or None


def default_api_key_env() -> str | None:
    return os.environ.get("AGENT_REPLAY_API_KEY_ENV") or None


def configs_for(models: list[str], *, fallback_model: str | None = None, **settings: Any) -> list[ReplayConfig]:
    """One config per model for a fan-out, every other setting shared (the fallback goes with 'recorded')."""
    names = [m.strip() for m in models if m and m.strip()]
    if not names:
        raise ConfigError("model: name at least one model")
    return [
        ReplayConfig(model=m, fallback_model=fallback_model if m == RECORDED else None, **settings) for m in dict.fromkeys(names)
    ]


def parse_params(items: list[str]) -> dict[str, Any]:
    """`NAME=VALUE` pairs (VALUE as JSON when it parses, else text) for `ReplayConfig.params`."""
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"params: expected NAME=VALUE, got {item!r}")
        try:
            out[name.strip()] = json.loads(value)
        except ValueError:
            out[name.strip()] = value
    return out

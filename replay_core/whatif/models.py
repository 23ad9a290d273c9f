"""The models a what-if replay may use, from configuration, and whether each can run now.

People pick from a list (name, provider, price) that whoever runs the server set up, not
from model strings: `AGENT_REPLAY_MODELS` (comma-separated model strings) and/or a models
file named by `AGENT_REPLAY_MODELS_FILE` (JSON list or TOML `[[model]]` tables, fields in
`FIELDS`). Before launch each is checked: the credentials its provider needs (litellm's own
`validate_environment`) and, for a model served at an address, that the address answers.
A model that cannot run says why in plain words, with the one line that fixes it.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .replay_config import RECORDED, ConfigError

FIELDS = ("model", "name", "provider", "api_base", "api_key_env", "price_in", "price_out")  # prices: USD per million tokens
REACH_TIMEOUT_S = 1.5


@dataclass(frozen=True)
class ModelOption:
    model: str  # what the replay calls (a litellm model string, or "recorded")
    name: str  # what people read
    provider: str | None = None
    api_base: str | None = None  # a model server's address
    api_key_env: str | None = None  # the NAME of the variable holding the key
    price_in: float | None = None  # USD per million input tokens, for models without a known price
    price_out: float | None = None

    @property
    def label(self) -> str:
        price = f" · ${self.price_in:g} / ${self.price_out:g} per million tokens" if self.price_in is not None else ""
        return f"{self.name}" + (f" ({self.provider})" if self.provider and self.provider != self.name else "") + price

    def settings(self) -> dict:
        """The ReplayConfig settings this option brings (prices per token)."""
        out: dict = {"api_base": self.api_base, "api_key_env": self.api_key_env}
        if self.price_in is not None and self.price_out is not None:
            out |= {"input_cost_per_token": self.price_in / 1e6, "output_cost_per_token": self.price_out / 1e6}
        return out


RECORDED_OPTION = ModelOption(RECORDED, "The run's own answers")


@dataclass(frozen=True)
class Readiness:
    ok: bool
    reason: str | None = None  # plain words: why it cannot run
    fix: str | None = None  # the one line that fixes it, for whoever runs the server


def _provider(model: str) -> str | None:
    return model.split("/", 1)[0] if "/" in model else None


def _option(entry: Mapping, where: str, environ: Mapping[str, str]) -> ModelOption:
    unknown = sorted(set(entry) - set(FIELDS))
    if unknown:
        raise ConfigError(f"{where}: {unknown[0]!r} is not a model setting (known: {', '.join(FIELDS)})")
    model = entry.get("model")
    if not isinstance(model, str) or not model.strip():
        raise ConfigError(f"{where}: model: give the model to call, e.g. openai/gpt-4o-mini")
    prices = {}
    for key in ("price_in", "price_out"):
        value = entry.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value < 0):
            raise ConfigError(f"{where}: {key}: give USD per million tokens as a number, got {value!r}")
        prices[key] = None if value is None else float(value)
    if (prices["price_in"] is None) != (prices["price_out"] is None):
        raise ConfigError(f"{where}: give both price_in and price_out, or neither")
    model = model.strip()
    return ModelOption(
        model=model,
        name=str(entry.get("name") or model),
        provider=entry.get("provider") or _provider(model),
        api_base=entry.get("api_base") or environ.get("AGENT_REPLAY_API_BASE") or None,
        api_key_env=entry.get("api_key_env") or environ.get("AGENT_REPLAY_API_KEY_ENV") or None,
        **prices,
    )


def read_models_file(path: Path, environ: Mapping[str, str]) -> list[ModelOption]:
    """A models file: a JSON list of objects, or TOML with `[[model]]` tables."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the models file ({exc.strerror or exc})") from None
    try:
        entries = tomllib.loads(text).get("model", []) if path.suffix == ".toml" else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not valid {'TOML' if path.suffix == '.toml' else 'JSON'} ({exc})") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ConfigError(f"{path}: expected a list of models, each with at least a model")
    return [_option(e, f"{path}: model {i + 1}", environ) for i, e in enumerate(entries)]


def offered_models(environ: Mapping[str, str] | None = None) -> list[ModelOption]:
    """The configured models (the file's, then AGENT_REPLAY_MODELS'), each once, then the run's own answers."""
    environ = os.environ if environ is None else environ
    found: list[ModelOption] = []
    if environ.get("AGENT_REPLAY_MODELS_FILE"):
        found += read_models_file(Path(environ["AGENT_REPLAY_MODELS_FILE"]), environ)
    for i, model in enumerate(m.strip() for m in environ.get("AGENT_REPLAY_MODELS", "").split(",")):
        if model and model != RECORDED:
            found.append(_option({"model": model}, f"AGENT_REPLAY_MODELS item {i + 1}", environ))
    unique = list({o.model: o for o in reversed(found)}.values())[::-1]  # the first entry of a model wins
    return [*unique, RECORDED_OPTION]


def readiness(option: ModelOption, environ: Mapping[str, str] | None = None, *, timeout_s: float = REACH_TIMEOUT_S) -> Readiness:
    """Whether `option` can run now: its key is set, its provider's credentials are there, its address answers."""
    environ = os.environ if environ is None else environ
    if option.model == RECORDED:
        return Readiness(True)
    who = option.provider or option.name
    if option.api_key_env and not environ.get(option.api_key_env):
        return Readiness(False, f"No key for {who} is set up on this server.", f"export {option.api_key_env}=<your {who} key>")
    if option.api_base:
        return _reachable(option, option.api_base, timeout_s)
    from .provider import load_litellm

    found = load_litellm().validate_environment(model=option.model, api_key=environ.get(option.api_key_env or "") or None)
    if found.get("keys_in_environment"):
        return Readiness(True)
    missing = found.get("missing_keys") or []
    if not missing:
        return Readiness(
            False,
            f"Agent Replay does not know how to reach {option.name}.",
            f"give the model with its provider, e.g. openai/{option.model.split('/')[-1]}, in AGENT_REPLAY_MODELS",
        )
    return Readiness(
        False, f"No credentials for {who} are set up on this server.", " ".join(f"export {name}=<…>" for name in missing)
    )


def _reachable(option: ModelOption, api_base: str, timeout_s: float) -> Readiness:
    """Any HTTP answer from the model server counts (even 401 or 404): it is up."""
    import httpx  # here: the what-if and experiments pages import this module, and most list no served model

    base = api_base.rstrip("/")
    try:
        httpx.get(f"{base}/models", timeout=timeout_s)
    except (httpx.HTTPError, httpx.InvalidURL):
        return Readiness(
            False,
            f"The model server for {option.name} does not answer (it may be stopped).",
            f"start the model server at {base}, or point api_base for {option.model} at where it runs",
        )
    return Readiness(True)

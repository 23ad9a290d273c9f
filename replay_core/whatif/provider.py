"""Calling a model through litellm for a replay: one request, its retries, its cost.

litellm is imported inside `ask` only (it costs seconds), with its bundled price list
(no download). Provider failures become a `ProviderError` naming what happened —
timeout, connection, bad_response, rate_limit, server_error, auth, bad_request, other —
read from the whole exception chain, because litellm reports a hang-up, an HTML page and
a 500 alike as InternalServerError;
rate limits are retried here with exponential backoff (the HTTP client's own retries
are switched off so the count is ours). A cost litellm cannot work out is None
(unknown), never 0.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..ingest.pricing import list_price
from .replay_config import ReplayConfig


class ProviderError(Exception):
    """A model call that failed: timeout, rate limit, auth, server error, malformed response…"""

    def __init__(self, error_class: str, message: str, latency_ms: float = 0.0):
        super().__init__(f"{error_class}: {message}")
        self.error_class = error_class
        self.message = message
        self.latency_ms = latency_ms  # time spent on the failed call, retries included


@dataclass
class ToolCallOut:
    id: str
    name: str
    arguments: Any  # parsed JSON, or the raw string when it did not parse
    raw_arguments: str


@dataclass
class ModelAnswer:
    content: str | None
    tool_calls: list[ToolCallOut] = field(default_factory=list)
    model: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    latency_ms: float = 0.0
    retries: int = 0


_UNPRICED: set[str | None] = set()  # models completion_cost has no price for


def load_litellm():
    """litellm, imported on first use with its bundled price list and without its banners."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


ERROR_CLASSES = ("timeout", "connection", "bad_response", "rate_limit", "server_error", "auth", "bad_request", "other")
_TIMEOUTS = {"Timeout", "APITimeoutError", "ReadTimeout", "ConnectTimeout", "WriteTimeout", "PoolTimeout", "TimeoutException"}
_CONNECTION = {
    "APIConnectionError",
    "RemoteProtocolError",
    "ConnectError",
    "ReadError",
    "WriteError",
    "NetworkError",
    "ServiceUnavailableError",
}
_BAD_RESPONSE_WORDS = ("invalid response", "empty response", "expecting value", "unexpected content-type", "<html")


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in out:
        out.append(seen)
        seen = seen.__cause__ or seen.__context__
    return out


def _error_class(exc: BaseException) -> str:
    """What happened, from the exception and everything it was raised from (one of ERROR_CLASSES)."""
    chain = _chain(exc)
    names = {type(e).__name__ for e in chain}
    if names & _TIMEOUTS or any(isinstance(e, TimeoutError) for e in chain):
        return "timeout"
    if "RateLimitError" in names:
        return "rate_limit"
    if names & {"AuthenticationError", "PermissionDeniedError"}:
        return "auth"
    if "JSONDecodeError" in names or any(w in str(e).lower() for e in chain for w in _BAD_RESPONSE_WORDS):
        return "bad_response"
    if names & _CONNECTION or any(isinstance(e, ConnectionError) for e in chain):
        return "connection"
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status >= 500:
        return "server_error"
    if isinstance(status, int) and 400 <= status < 500:
        return "bad_request"
    return "other"


def _message(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    for noise in ("litellm.", "OpenAIException - ", f"{type(exc).__name__}: "):
        text = text.replace(noise, "")
    return text[:500]


def ask(config: ReplayConfig, model: str, messages: list[dict], tools: list[dict], timeout_s: float) -> ModelAnswer:
    """One chat completion, retried on rate limits; raises ProviderError."""
    litellm = load_litellm()
    kwargs: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "timeout": timeout_s,
        "max_retries": 0,
        **config.params,
    }
    if tools:
        kwargs["tools"] = tools
    for name in ("temperature", "top_p", "max_tokens", "api_base", "input_cost_per_token", "output_cost_per_token"):
        value = getattr(config, name)
        if value is not None:
            kwargs[name] = value
    key = config.api_key()
    if key is not None:
        kwargs["api_key"] = key
    retries = 0
    started = time.perf_counter()
    while True:
        try:
            response = litellm.completion(**kwargs)
            break
        except litellm.RateLimitError as exc:
            if retries >= config.retries:
                raise ProviderError("rate_limit", _message(exc), _since(started)) from None
            time.sleep(config.backoff_s * (2**retries))
            retries += 1
        except Exception as exc:  # every provider failure ends the replay, named
            raise ProviderError(_error_class(exc), _message(exc), _since(started)) from None
    return _answer(litellm, response, retries, _since(started))


def _since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def _answer(litellm, response, retries: int, latency_ms: float) -> ModelAnswer:
    choices = getattr(response, "choices", None) or []
    message = getattr(choices[0], "message", None) if choices else None
    if message is None:
        raise ProviderError("bad_response", "the response holds no message")
    calls = []
    for call in getattr(message, "tool_calls", None) or []:
        fn = getattr(call, "function", None)
        if fn is None or not getattr(fn, "name", None):
            raise ProviderError("bad_response", "a tool call without a function name")
        raw = fn.arguments or "{}"
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            parsed = raw
        calls.append(ToolCallOut(getattr(call, "id", None) or f"call_{uuid.uuid4().hex[:12]}", fn.name, parsed, raw))
    usage = getattr(response, "usage", None)
    cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
    model = getattr(response, "model", None)
    if cost is None and model not in _UNPRICED:
        try:
            cost = litellm.completion_cost(completion_response=response)
        except Exception:  # a model litellm has no price for: unknown, not free (and not asked again)
            _UNPRICED.add(model)
    return ModelAnswer(
        content=message.content or None,
        tool_calls=calls,
        model=model,
        tokens_in=getattr(usage, "prompt_tokens", None),
        tokens_out=getattr(usage, "completion_tokens", None),
        cost_usd=float(cost) if cost is not None else None,
        latency_ms=latency_ms,
        retries=retries,
    )


# ---------------------------------------------------------------------------- prices


def prices(model: str, config: ReplayConfig | None = None) -> tuple[float, float] | None:
    """USD per input and output token, or None when unknown."""
    if config is not None and config.input_cost_per_token is not None and config.output_cost_per_token is not None:
        return config.input_cost_per_token, config.output_cost_per_token
    return list_price(model)

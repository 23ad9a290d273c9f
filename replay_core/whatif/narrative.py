"""An optional paragraph of why a run failed, written by a model from the rule-based answer.

Off unless a model is configured (`AGENT_REPLAY_EXPLAIN_MODEL`, a litellm model string), and
`AGENT_REPLAY_EXPLAIN_LLM=off` turns it off whatever else is set (config.explain_model). The
model is given only the deterministic explanation (understand/explain.py: cause line, causal
chain, turning point, contradictions) and asked to cite a step for every claim as `[step N]`;
it never sees the run itself, so the paragraph can only rephrase what the rules found, and
steps it cites that the chain does not name are listed as such. The rule-based answer is
always shown first and never waits for this.

One call through whatif/provider.py (litellm imported there, on first use), its cost from
the answer (unknown stays unknown). Answers are kept per hash of (model, endpoint, prompt):
re-rendering the same explanation does not pay again in this process.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from .. import config
from ..understand.explain import Explanation
from .provider import ProviderError, ask, prices
from .replay_config import ConfigError, ReplayConfig

MAX_CACHED = 256
TIMEOUT_S = 60.0
MAX_TOKENS = 400  # the paragraph's cap, and what the estimate counts as its length
CITE = re.compile(r"\[steps? (\d+)(?:\s*[–-]\s*(\d+))?\]", re.I)
SYSTEM = (
    "You explain to a non-engineer why an AI agent's run failed, in one paragraph of at most 120 words. "
    "Use only the facts given; add nothing. Cite the step behind every claim as [step N]. "
    "If the facts do not say why, say that."
)
PLAIN_ERRORS = {
    "timeout": "The model did not answer in time.",
    "connection": "The model's server could not be reached (is it running, and is its address right?).",
    "auth": "The model's server refused the credentials it was given.",
    "rate_limit": "The model's provider is limiting requests right now; try again in a minute.",
    "server_error": "The model's server failed while answering.",
    "bad_response": "The model's server sent back something that is not an answer.",
    "bad_request": "The model's server refused the request (an unknown model name, or a setting it does not take).",
    "config": "The model is not set up: its key or settings are missing.",
    "other": "The model call failed.",
}

_cache: dict[str, Narrative] = {}


@dataclass(frozen=True)
class Narrative:
    text: str
    model: str
    cost_usd: float | None  # None: the price of this model is not known
    tokens_in: int | None
    tokens_out: int | None
    cited: tuple[int, ...]  # steps the paragraph cites, in order
    not_in_chain: tuple[int, ...]  # of those, steps the rule-based chain does not name

    def cost_line(self) -> str:
        cost = f"${self.cost_usd:.4f}" if self.cost_usd is not None else "cost unknown (no price for this model)"
        tokens = f" · {self.tokens_in or 0:,} tokens in / {self.tokens_out or 0:,} out" if self.tokens_in is not None else ""
        return f"{cost}{tokens}"


class NarrativeError(Exception):
    """The model could not write the paragraph: `plain` says why in plain words, `raw` is the provider's text."""

    def __init__(self, error_class: str, raw: str):
        self.error_class, self.raw = error_class, raw
        self.plain = PLAIN_ERRORS.get(error_class, PLAIN_ERRORS["other"])
        super().__init__(f"{self.plain} ({error_class}: {raw})")


def facts(explanation: Explanation) -> str:
    """What the model is told: the deterministic answer, step by step."""
    lines = [
        f"Run {explanation.session} ended {explanation.status}" + (f": {explanation.outcome}" if explanation.outcome else "."),
        f"Rule-based cause line: {explanation.cause_line()}",
        "Causal chain, in run order:",
    ]
    lines += [f"- [step {link.seq}] ({link.kind}) {link.summary}" for link in explanation.chain]
    tp = explanation.turning_point
    if tp is not None:
        lines.append(
            f"Turning point: [step {tp.seq}] here against step {tp.compared_seq} of the successful run "
            f"{tp.compared_with} ({tp.kind}): {tp.summary}"
        )
    lines += [
        f"Contradiction: [step {c.seq}] disagrees with [step {c.earlier_seq}]: {c.summary}" for c in explanation.contradictions
    ]
    return "\n".join(lines)


def messages(explanation: Explanation) -> list[dict]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": facts(explanation)}]


def cited_steps(text: str) -> tuple[int, ...]:
    out: list[int] = []
    for m in CITE.finditer(text):
        first = int(m.group(1))
        last = int(m.group(2)) if m.group(2) else first
        out += [n for n in range(first, min(last, first + 50) + 1) if n not in out]
    return tuple(out)


def _key(model: str, api_base: str | None, msgs: list[dict]) -> str:
    body = "\x00".join([model, api_base or "", *(m["content"] for m in msgs)])
    return hashlib.sha256(body.encode()).hexdigest()


def estimate(explanation: Explanation, model: str) -> tuple[int, float | None]:
    """Before the call: (tokens in, at most this many dollars). The prompt at about 4 characters a
    token in, the paragraph's cap out, at the model's list price; None when the price is not known."""
    tokens_in = sum(len(m["content"]) for m in messages(explanation)) // 4 + 1
    price = prices(model)
    return tokens_in, None if price is None else tokens_in * price[0] + MAX_TOKENS * price[1]


def cached(explanation: Explanation, model: str, api_base: str | None = None) -> Narrative | None:
    """The paragraph already written for this explanation by this model, if any (no call)."""
    return _cache.get(_key(model, api_base, messages(explanation)))


def narrate(
    explanation: Explanation,
    model: str | None = None,
    *,
    api_base: str | None = None,
    api_key_env: str | None = None,
    timeout_s: float = TIMEOUT_S,
) -> Narrative:
    """One paragraph from `model` (default: the configured one); raises NarrativeError in plain words."""
    if model is None:
        model, api_base, api_key_env = config.explain_model(), config.explain_api_base(), config.explain_api_key_env()
        if model is None:
            raise NarrativeError(
                "other", "no model configured: set AGENT_REPLAY_EXPLAIN_MODEL (and leave AGENT_REPLAY_EXPLAIN_LLM on)"
            )
    msgs = messages(explanation)
    key = _key(model, api_base, msgs)
    if key in _cache:
        return _cache[key]
    cfg = ReplayConfig(model=model, api_base=api_base, api_key_env=api_key_env, temperature=0, max_tokens=MAX_TOKENS, retries=1)
    try:
        answer = ask(cfg, model, msgs, [], timeout_s)
    except ProviderError as exc:
        raise NarrativeError(exc.error_class, exc.message) from None
    except ConfigError as exc:
        raise NarrativeError("config", str(exc)) from None
    text = (answer.content or "").strip()
    if not text:
        raise NarrativeError("bad_response", "the answer holds no text")
    cited = cited_steps(text)
    named = (
        {link.seq for link in explanation.chain}
        | {c.seq for c in explanation.contradictions}
        | {c.earlier_seq for c in explanation.contradictions}
    )
    if explanation.turning_point is not None and explanation.turning_point.seq is not None:
        named.add(explanation.turning_point.seq)
    result = Narrative(
        text, model, answer.cost_usd, answer.tokens_in, answer.tokens_out, cited, tuple(n for n in cited if n not in named)
    )
    if len(_cache) >= MAX_CACHED:
        _cache.pop(next(iter(_cache)))
    _cache[key] = result
    return result

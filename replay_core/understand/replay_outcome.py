"""What a replay did, said against its original: "reproduced", "answered, diverged from the
original at step 8", "diverged at step 8", "could not start: no credentials for openai".

A replay's session status alone misleads (a faithful replay of a failed run is "failed"), so
the runs list and the what-if page show this sentence instead. The replay's own stored
outcome (metadata `replay_outcome`, `replay_message`, its error class) says whether it ran;
compare's first divergence says where it left the original. None of it says whether the replay
was right: that is a scorer's judgement (whatif.scorers), shown as one. The raw message is kept
beside the sentence for whoever wants the provider's own words.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..storage.store import Store
from .compare import compare

# a provider error class (whatif.provider.ERROR_CLASSES) → what happened, in plain words
PLAIN_ERRORS = {
    "timeout": "{provider} did not answer in time",
    "connection": "could not reach {provider}",
    "bad_response": "{provider} sent an answer that could not be read",
    "rate_limit": "{provider} is refusing requests for now (too many requests)",
    "server_error": "{provider} had a server error",
    "auth": "{provider} refused the credentials",
    "bad_request": "{provider} refused the request",
}
_NO_CREDENTIALS = ("missing credentials", "api key", "api_key", "no key", "not set")


NOT_JUDGED = "not judged: whether it is right is a scorer's call"


@dataclass
class ReplayOutcome:
    text: str  # the sentence shown: what the replay did, never whether that was right
    kind: str  # reproduced | answered | diverged | could_not_start | stopped | running
    raw: str | None = None  # the replay's stored message, word for word

    def to_dict(self) -> dict:
        return {"text": self.text, "kind": self.kind, "raw": self.raw}

    @property
    def status(self) -> str:
        """The replay's status line: what happened, then that it is not a verdict (a reproduction is one
        only of the steps)."""
        icons = {"reproduced": "🔁", "answered": "💬", "diverged": "↪️", "could_not_start": "🔌", "stopped": "🔌"}
        return f"{icons.get(self.kind, '⏳')} {self.text} ({NOT_JUDGED})"


def provider_of(model: str | None) -> str:
    """'openai' for 'openai/gpt-4o-mini'; the model itself when it names no provider."""
    model = model or "the model"
    return model.split("/", 1)[0] if "/" in model else model


def plain_error(error_class: str | None, message: str | None, model: str | None) -> str:
    """A provider failure in plain words (no class names, no library names)."""
    provider = provider_of(model)
    low = (message or "").lower()
    if error_class in (None, "auth", "other", "bad_request", "server_error") and any(w in low for w in _NO_CREDENTIALS):
        return f"no credentials for {provider}"
    return PLAIN_ERRORS.get(error_class or "", "the call to {provider} failed").format(provider=provider)


def describe(
    outcome: str | None,
    message: str | None,
    error_class: str | None,
    divergence: dict | None,
    *,
    model: str | None,
    started: bool,
) -> ReplayOutcome:
    """The sentence for one replay from what it stored (`divergence`: compare's first divergence as a dict)."""
    if outcome is None:
        return ReplayOutcome("still replaying", "running")
    if outcome in ("provider_error", "error"):
        reason = plain_error(error_class, message, model) if outcome == "provider_error" else "the replay itself failed"
        if not started:
            return ReplayOutcome(f"could not start: {reason}", "could_not_start", message)
        where = _where(divergence)
        return ReplayOutcome(f"stopped{where}: {reason}", "stopped", message)
    if divergence is None:
        return ReplayOutcome("reproduced", "reproduced", message)
    if divergence.get("a_seq") is None and divergence.get("b_seq") is None:
        return ReplayOutcome("same steps, different outcome", "diverged", message)
    if outcome == "final_answer":
        return ReplayOutcome(f"answered, diverged from the original{_where(divergence)}", "answered", message)
    text = f"diverged{_where(divergence)}"
    if outcome == "budget":
        text += ", then stopped at its budget"
    return ReplayOutcome(text, "diverged", message)


def _where(divergence: dict | None) -> str:
    """' at step 8' (the original's step where there is one, else the replay's)."""
    if not divergence:
        return ""
    seq = divergence.get("a_seq") if divergence.get("a_seq") is not None else divergence.get("b_seq")
    return f" at step {seq}" if seq is not None else ""


def replay_outcome(store: Store, session: dict) -> ReplayOutcome | None:
    """The outcome of the replay `session` (a stored session row); None when it is not a replay."""
    if not session.get("replay_of"):
        return None
    meta = session.get("metadata") or {}
    outcome = meta.get("replay_outcome")
    model = (session.get("replay_config") or {}).get("model") or session.get("model")
    start = session.get("replay_from") or 0  # steps copied from before the range are not the replay's own
    started = any(
        (m := s.metadata or {}).get("live") or (m.get("source_seq") or -1) >= start and s.type != "error"
        for s in store.load_steps(session["id"])
    )
    divergence = None
    if outcome is not None and store.get_session(session["replay_of"]) is not None:
        found = compare(store, session["replay_of"], session["id"]).first_divergence
        divergence = found.to_dict() if found else None
    error_class = session.get("error_class") if session.get("status") == "failed" else None
    return describe(outcome, meta.get("replay_message"), error_class, divergence, model=model, started=started)

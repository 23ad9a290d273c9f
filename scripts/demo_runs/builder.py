"""What every demo run is built with: `Run` keeps one session's clock, seq counter, running
context size and events, and writes them as native JSONL.

Deterministic: each run draws from its own seeded ``random.Random`` and starts at a fixed
timestamp, ids come from counters or that generator, and nothing reads the wall clock. Events
are built as ``replay_core.events`` models and written with ``to_json_dict()`` through
``orjson.dumps(..., option=OPT_SORT_KEYS)``.
"""

from __future__ import annotations

import json
import random
import string
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from replay_core.events import SessionEndEvent, SessionEvent, StepEvent

LLAMA = "ollama/llama3.1:70b"

# USD per million tokens (input, output); a local ollama model costs nothing per token.
PRICES = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "claude-sonnet-4": (3.00, 15.00),
    LLAMA: (0.0, 0.0),
}
# (time to first token in ms, ms per output token)
SPEED = {
    "gpt-4o": (420, 11.0),
    "gpt-4o-mini": (310, 7.0),
    "claude-sonnet-4": (560, 13.0),
    LLAMA: (650, 32.0),
}

_ID_CHARS = string.ascii_letters + string.digits


def tok(text: str) -> int:
    """A rough token count (≈ 4 characters a token)."""
    return max(1, (len(text) + 3) // 4)


def as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class Run:
    """Builds one session: a clock, a seq counter, running context size and the events."""

    def __init__(
        self,
        filename: str,
        *,
        name: str,
        agent_id: str,
        model: str,
        workflow: str,
        environment: str,
        agent_version: str,
        tags: list[str],
        started_at: datetime,
        seed: int,
        system: str | None = None,
        metadata: dict[str, Any] | None = None,
        user_id: str | None = None,
        thread_id: str | None = None,
    ):
        self.filename = filename
        self.session_id = "demo-" + filename.removesuffix(".jsonl")
        self.model = model
        self.rng = random.Random(seed)
        self.clock = started_at
        self.seq = 0
        self.steps: list[dict[str, Any]] = []
        self.messages: list[dict[str, str]] = []
        self.ctx = 180  # tool schemas and framing
        if system:
            self.messages.append({"role": "system", "content": system})
            self.ctx += tok(system)
        self.session: dict[str, Any] = {
            "session_id": self.session_id,
            "name": name,
            "agent_id": agent_id,
            "model": model,
            "workflow": workflow,
            "environment": environment,
            "agent_version": agent_version,
            "tags": tags,
            "started_at": started_at,
            "source": "demo",
        }
        if metadata:
            self.session["metadata"] = metadata
        for key, value in (("user_id", user_id), ("thread_id", thread_id)):  # who it served, which conversation
            if value:
                self.session[key] = value
        self.end_event: dict[str, Any] | None = None
        self.dropped: set[int] = set()

    # -- plumbing -------------------------------------------------------------------------

    def wait(self, ms: int) -> None:
        self.clock += timedelta(milliseconds=int(ms))

    def _remember(self, role: str, content: str) -> None:
        self.messages.append({"role": role, "content": content})
        self.ctx += tok(content) + 6

    def _step(self, type_: str, *, duration_ms: float, gap_ms: int | None = None, **fields: Any) -> dict[str, Any]:
        self.wait(self.rng.randint(15, 160) if gap_ms is None else gap_ms)
        self.seq += 1
        step = {
            "session_id": self.session_id,
            "event_id": f"e{self.seq:04d}",
            "seq": self.seq,
            "type": type_,
            "timestamp": self.clock,
            "duration_ms": int(duration_ms),
        }
        step.update({k: v for k, v in fields.items() if v is not None})
        self.steps.append(step)
        self.wait(int(duration_ms))
        return step

    def _model_call(self, out_text: str, model: str | None) -> tuple[dict[str, Any], int]:
        model = model or self.model
        tokens_in = self.ctx + self.rng.randint(0, 30)
        tokens_out = tok(out_text) + self.rng.randint(3, 14)
        price_in, price_out = PRICES[model]
        cost = round((tokens_in * price_in + tokens_out * price_out) / 1_000_000, 6)
        ttft, per_token = SPEED[model]
        duration = ttft + tokens_in * 0.015 + tokens_out * per_token * self.rng.uniform(0.85, 1.25)
        return {"model": model, "tokens_in": tokens_in, "tokens_out": tokens_out, "cost_usd": cost}, int(duration)

    def _context_snapshot(self) -> list[dict[str, str]]:
        return [dict(m) for m in self.messages]

    # -- steps ----------------------------------------------------------------------------

    def user(self, text: str, *, wait_ms: int = 0, metadata: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        step = self._step("input", duration_ms=0, gap_ms=wait_ms, content=text, metadata=metadata, **kw)
        self._remember("user", text)
        return step

    def think(
        self,
        text: str,
        *,
        context: bool = False,
        state: dict[str, str] | None = None,
        model: str | None = None,
        metadata: dict[str, Any] | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        usage, duration = self._model_call(text, model)
        if state is not None:
            metadata = {**(metadata or {}), "state": state}
        recorded = self._context_snapshot() if context else None
        step = self._step("think", duration_ms=duration, content=text, context=recorded, metadata=metadata, **usage, **kw)
        self._remember("assistant", text)
        return step

    def decide(self, text: str, *, model: str | None = None, state: dict[str, str] | None = None, **kw: Any) -> dict[str, Any]:
        usage, duration = self._model_call(text, model)
        metadata = {"state": state} if state is not None else None
        step = self._step("decision", duration_ms=duration, content=text, metadata=metadata, **usage, **kw)
        self._remember("assistant", text)
        return step

    def call(
        self,
        tool: str,
        args: Any,
        *,
        scripted: bool = False,
        model: str | None = None,
        duration_ms: int | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        call_id = "call_" + "".join(self.rng.choice(_ID_CHARS) for _ in range(12))
        rendered = f"{tool}({json.dumps(args, ensure_ascii=False)})"
        if scripted:
            usage, duration = {}, duration_ms if duration_ms is not None else self.rng.randint(2, 12)
        else:
            usage, duration = self._model_call(rendered, model)
        step = self._step("tool_call", duration_ms=duration, tool_name=tool, tool_args=args, tool_call_id=call_id, **usage, **kw)
        self._remember("assistant", rendered)
        return step

    def result(
        self,
        call: dict[str, Any],
        content: Any,
        *,
        latency_ms: int | None = None,
        latency: tuple[int, int] = (90, 900),
        status: str = "ok",
        error_class: str | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        text = as_text(content)
        duration = latency_ms if latency_ms is not None else self.rng.randint(*latency)
        for key in ("agent_id", "parent_id"):
            if key in call and key not in kw:
                kw[key] = call[key]
        kw.pop("retry", None)
        step = self._step(
            "tool_result",
            duration_ms=duration,
            gap_ms=self.rng.randint(2, 25),
            tool_name=call["tool_name"],
            tool_args=call["tool_args"],
            tool_call_id=call["tool_call_id"],
            content=text,
            status=status,
            error_class=error_class,
            retry=call.get("retry"),
            **kw,
        )
        self._remember("tool", text)
        return step

    def observe(self, text: str, *, state: dict[str, str] | None = None, **kw: Any) -> dict[str, Any]:
        metadata = {"state": state} if state is not None else None
        step = self._step("observation", duration_ms=self.rng.randint(40, 400), content=text, metadata=metadata, **kw)
        self._remember("user", text)
        return step

    def error(self, text: str, error_class: str, *, duration_ms: int | None = None, **kw: Any) -> dict[str, Any]:
        duration = duration_ms if duration_ms is not None else self.rng.randint(80, 600)
        return self._step("error", duration_ms=duration, content=text, status="error", error_class=error_class, **kw)

    def span(self, content: str, *, metadata: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        return self._step("span", duration_ms=0, gap_ms=self.rng.randint(5, 40), content=content, metadata=metadata, **kw)

    def close(self, span: dict[str, Any], **metadata: Any) -> None:
        """End a span now: its duration covers its children; ``metadata`` is merged in."""
        span["duration_ms"] = int((self.clock - span["timestamp"]).total_seconds() * 1000)
        if metadata:
            span["metadata"] = {**(span.get("metadata") or {}), **metadata}

    def end(self, status: str, outcome: str | None = None, error_class: str | None = None) -> None:
        self.wait(self.rng.randint(30, 250))
        self.end_event = {
            "session_id": self.session_id,
            "status": status,
            "outcome": outcome,
            "error_class": error_class,
            "ended_at": self.clock,
        }

    def drop(self, seqs: range | list[int]) -> None:
        """Lose these steps on the way (a gap in seq the UI must show, never fill in)."""
        self.dropped.update(seqs)

    # -- output ---------------------------------------------------------------------------

    def events(self) -> list[dict[str, Any]]:
        out = [SessionEvent(**self.session).to_json_dict()]
        out += [StepEvent(**s).to_json_dict() for s in self.steps if s["seq"] not in self.dropped]
        if self.end_event is not None:
            end = {k: v for k, v in self.end_event.items() if v is not None}
            out.append(SessionEndEvent(**end).to_json_dict())
        return out

    def dump(self) -> bytes:
        return b"".join(orjson.dumps(e, option=orjson.OPT_SORT_KEYS) + b"\n" for e in self.events())


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)

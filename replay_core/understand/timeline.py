"""An opened session: its steps in order, cycles, gaps and running totals.

Everything here is computed once when the session is opened, so that moving the
cursor over the timeline (snapshot.state_at) costs O(1) for the totals.
"""

from __future__ import annotations

import gc
from bisect import bisect_left
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .cycles import Cycle, cycle_of_steps, group_cycles
from ..events import StepEvent
from ..ingest.pipeline import collector_paused
from ..storage.store import Store


@dataclass(frozen=True)
class Gap:
    """Seqs that should be there and are not: shown as such, never papered over."""

    first_missing: int
    last_missing: int

    @property
    def label(self) -> str:
        if self.first_missing == self.last_missing:
            return f"step {self.first_missing} missing"
        return f"steps {self.first_missing}–{self.last_missing} missing"

    def to_dict(self) -> dict:
        return {"first_missing": self.first_missing, "last_missing": self.last_missing, "label": self.label}


@dataclass
class RunningTotals:
    """Cumulative sums per step position (inclusive)."""

    tokens_in: list[int]
    tokens_out: list[int]
    cost_usd: list[float]
    cost_unknown_steps: list[int]
    tool_calls: list[int]
    errors: list[int]
    retries: list[int]
    elapsed_s: list[float | None]

    @classmethod
    def of(cls, steps: list[StepEvent]) -> RunningTotals:
        """One pass over the steps, all sums at once (a pass per sum was a third of building a timeline)."""
        first = next((s.timestamp for s in steps if s.timestamp), None)
        model_steps = {"think", "decision"}
        out = cls([], [], [], [], [], [], [], [])
        tokens_in = tokens_out = unknown = calls = errors = retries = 0
        cost = 0.0
        for s in steps:
            t_in, t_out, kind = s.tokens_in or 0, s.tokens_out or 0, s.type
            tokens_in += t_in
            tokens_out += t_out
            if s.cost_usd is not None:
                cost += s.cost_usd
            elif kind in model_steps and (t_in or t_out):
                unknown += 1
            calls += kind == "tool_call"
            errors += kind == "error" or s.status == "error"
            retries += (s.retry or 0) > 0
            out.tokens_in.append(tokens_in)
            out.tokens_out.append(tokens_out)
            out.cost_usd.append(cost)
            out.cost_unknown_steps.append(unknown)
            out.tool_calls.append(calls)
            out.errors.append(errors)
            out.retries.append(retries)
            out.elapsed_s.append((s.timestamp - first).total_seconds() if s.timestamp and first else None)
        return out

    def at(self, position: int) -> dict[str, Any]:
        return {
            "tokens_in": self.tokens_in[position],
            "tokens_out": self.tokens_out[position],
            "cost_usd": round(self.cost_usd[position], 6),
            "cost_unknown_steps": self.cost_unknown_steps[position],
            "tool_calls": self.tool_calls[position],
            "errors": self.errors[position],
            "retries": self.retries[position],
            "elapsed_s": self.elapsed_s[position],
        }


@dataclass
class Timeline:
    session: dict
    steps: list[StepEvent]
    cycles: list[Cycle]
    cycle_index: list[int | None]
    gaps: list[Gap]
    totals: RunningTotals
    context_ids: set[str] = field(default_factory=set)
    _seqs: list[int] = field(default_factory=list, repr=False)
    cache: dict = field(default_factory=dict, repr=False)  # derived indexes (snapshot) built on first use

    @property
    def id(self) -> str:
        return self.session["id"]

    def position_of(self, seq: int) -> int:
        """Position of the first step at or after `seq` (clamped to the run)."""
        if not self.steps:
            raise IndexError("this session has no steps")
        return min(bisect_left(self._seqs, seq), len(self.steps) - 1)

    def step_at_seq(self, seq: int) -> StepEvent | None:
        pos = bisect_left(self._seqs, seq)
        return self.steps[pos] if pos < len(self.steps) and self._seqs[pos] == seq else None

    def error_positions(self) -> tuple[int, ...]:
        """Positions of failed steps; a pass over every step, so computed once (a page asks several times)."""
        if "error_positions" not in self.cache:
            self.cache["error_positions"] = tuple(i for i, s in enumerate(self.steps) if s.type == "error" or s.status == "error")
        return self.cache["error_positions"]

    def error_class_positions(self) -> tuple[int, ...]:
        """Positions of steps that name an error class (what search matches beside the index)."""
        if "error_class_positions" not in self.cache:
            self.cache["error_class_positions"] = tuple(i for i, s in enumerate(self.steps) if s.error_class)
        return self.cache["error_class_positions"]

    def first_input(self) -> StepEvent | None:
        """What the agent was asked: the first input step that is not a system prompt (a pass, kept)."""
        if "first_input" not in self.cache:
            self.cache["first_input"] = next(
                (s for s in self.steps if s.type == "input" and (s.metadata or {}).get("role") != "system"), None)
        return self.cache["first_input"]

    def summary(self) -> str:
        """The run in one sentence, for the top of the timeline and the CLI."""
        status = self.session.get("status") or "running"
        n_cycles, n_steps = len(self.cycles), len(self.steps)
        head = {
            "succeeded": f"Succeeded after {n_cycles} cycles ({n_steps} steps)",
            "failed": f"Failed after {n_cycles} cycles ({n_steps} steps)",
            "incomplete": f"Incomplete: stopped sending events after {n_cycles} cycles ({n_steps} steps)",
            "running": f"Still running: {n_cycles} cycles ({n_steps} steps) so far",
        }.get(status, f"{status}: {n_cycles} cycles ({n_steps} steps)")
        parts = [head]
        errors = self.error_positions()
        if errors:
            first = self.steps[errors[0]]
            what = first.tool_name and f"{first.tool_name} " or ""
            line = _telling_line(first.content or "")
            detail = f": {line[:160].rstrip('.')}" if line else ""
            parts.append(f"first error at step {first.seq} ({what}{first.error_class or 'error'}){detail}")
        if self.session.get("error_class") and status == "failed":
            parts.append(f"ended with {self.session['error_class']}")
        if self.gaps:
            parts.append(", ".join(g.label for g in self.gaps))
        return "; ".join(parts) + "."


def _telling_line(text: str) -> str:
    """The line of an error's output a reviewer wants first: one naming an error, else the last."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for ln in lines:
        lowered = ln.lower()
        if "error" in lowered or "exception" in lowered or "failed" in lowered:
            return ln
    return lines[-1] if lines else ""


def find_gaps(seqs: list[int]) -> list[Gap]:
    return [Gap(a + 1, b - 1) for a, b in zip(seqs, seqs[1:], strict=False) if b - a > 1]


def build_timeline(session: dict, steps: list[StepEvent], context_ids: set[str] | None = None) -> Timeline:
    seqs = [s.seq for s in steps]
    membership = cycle_of_steps([s.type for s in steps])
    return Timeline(
        session=session,
        steps=steps,
        cycles=group_cycles(steps, membership),
        cycle_index=membership,
        gaps=find_gaps(seqs),
        totals=RunningTotals.of(steps),
        context_ids=context_ids or set(),
        _seqs=seqs,
    )


def open_timeline(store: Store, session_id: str) -> Timeline:
    """Load a session and everything the timeline needs, in three narrow queries.

    The cyclic GC is paused meanwhile: a 100,000-step run is over a million long-lived objects, none
    of them cyclic garbage, and its collections, triggered again and again, took a third of the time."""
    session = store.get_session(session_id)
    if session is None:
        raise KeyError(session_id)
    with paused_and_promoted():
        return build_timeline(session, store.load_steps(session_id), store.context_event_ids(session_id))


@contextmanager
def paused_and_promoted() -> Iterator[None]:
    """collector_paused, and what was made meanwhile moved straight to the oldest generation (gc.freeze
    then gc.unfreeze: a list splice), not traversed by the young collection that the next allocation
    would start (45 ms at 100,000 steps). Nothing is exempt from later full collections."""
    with collector_paused():
        yield
        gc.freeze()
        gc.unfreeze()


def count_cycles(store: Store, session_ids: list[str]) -> dict[str, int]:
    """Cycles per session for lists, from step types alone."""
    counts = {}
    for sid, types in store.step_types(session_ids).items():
        members = [c for c in cycle_of_steps(types) if c is not None]
        counts[sid] = (members[-1] + 1) if members else 0
    return counts

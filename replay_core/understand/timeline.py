"""An opened session: its steps in order, cycles, gaps and running totals.

Everything here is computed once when the session is opened, so that moving the
cursor over the timeline (snapshot.state_at) costs O(1) for the totals.
"""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, overload

from ..events import StepEvent
from ..ingest.pipeline import collector_paused
from ..ingest.pricing import any_estimated
from ..storage.store import STEP_COLUMNS, Store, step_events, step_fields_set
from .cycles import Cycle, cycle_of_steps, cycles_of

Columns = dict[str, Sequence]  # a run's steps as columns, by STEP_COLUMNS name


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
    def of(cls, columns: Columns) -> RunningTotals:
        """All sums from the steps' columns, each an accumulate (an opened run has no step objects to walk).
        Each sum starts from 0 as a loop adding to 0 would: a count is an int from its first step on."""
        types, statuses = columns["type"], columns["status"]
        tokens_in = [v or 0 for v in columns["tokens_in"]]
        tokens_out = [v or 0 for v in columns["tokens_out"]]
        model_steps = {"think", "decision"}
        unknown = [
            c is None and k in model_steps and (a != 0 or b != 0)
            for c, k, a, b in zip(columns["cost_usd"], types, tokens_in, tokens_out, strict=True)
        ]
        stamps = columns["timestamp"]
        first = next((t for t in stamps if t), None)
        return cls(
            tokens_in=_running(tokens_in, 0),
            tokens_out=_running(tokens_out, 0),
            cost_usd=_running([0.0 if c is None else c for c in columns["cost_usd"]], 0.0),
            cost_unknown_steps=_running(unknown, 0),
            tool_calls=_running([k == "tool_call" for k in types], 0),
            errors=_running([k == "error" or st == "error" for k, st in zip(types, statuses, strict=True)], 0),
            retries=_running([(r or 0) > 0 for r in columns["retry"]], 0),
            elapsed_s=[(t - first).total_seconds() if t and first else None for t in stamps],
        )

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


def _running(values: list, start: int | float) -> list:
    """Running sums of `values` from `start` (excluded), in order: the float sums added as a loop adds them."""
    out = list(accumulate(values, initial=start))
    del out[0]
    return out


class Steps(Sequence[StepEvent]):
    """An opened run's steps, each built when first asked for, whole from its full row (content, arguments
    and metadata included: never a step in part): one on indexing, all at once on iteration. Building
    100,000 step objects was a fifth of opening a run, and a page draws the few around its cursor."""

    def __init__(self, session_id: str, columns: Columns):
        self._session_id = session_id
        self._columns = columns
        self._built: list[StepEvent | None] = [None] * len(columns["seq"])
        self._whole: list[StepEvent] | None = None  # every step, once iterated
        self._fields_set = step_fields_set()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._built)

    @overload
    def __getitem__(self, index: int) -> StepEvent: ...

    @overload
    def __getitem__(self, index: slice) -> list[StepEvent]: ...

    def __getitem__(self, index: int | slice) -> StepEvent | list[StepEvent]:
        if isinstance(index, slice):
            if self._whole is not None:
                return self._whole[index]
            return [self[i] for i in range(*index.indices(len(self._built)))]
        step = self._built[index]
        if step is None:
            row = tuple(self._columns[name][index] for name in STEP_COLUMNS)
            step = self._built[index] = step_events(self._session_id, [row], self._fields_set)[0]
        return step

    def __iter__(self) -> Iterator[StepEvent]:
        whole = self._whole
        if whole is None:
            with self._lock, collector_paused():
                whole = self._whole
                if whole is None:
                    rows = zip(*(self._columns[name] for name in STEP_COLUMNS), strict=True)
                    fresh = step_events(self._session_id, rows, self._fields_set)
                    whole = [new if old is None else old for old, new in zip(self._built, fresh, strict=True)]
                    self._built[:] = whole
                    self._whole = whole
        return iter(whole)

    def __repr__(self) -> str:
        return f"<{len(self)} steps of {self._session_id!r}>"


@dataclass
class Timeline:
    session: dict
    steps: Sequence[StepEvent]  # a list, or Steps when opened from the store
    columns: Columns
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

    def span(self, from_seq: int, to_seq: int) -> tuple[int, int]:
        """Positions [start, end) of the steps from `from_seq` to `to_seq`, both included."""
        return bisect_left(self._seqs, from_seq), bisect_right(self._seqs, to_seq)

    def seq_of_event(self, event_id: str) -> int | None:
        """The seq the step named `event_id` holds now (an OTLP step's seq may move until its run settles;
        its event id never does); None when the run holds no such step."""
        for seq, found in zip(self.columns["seq"], self.columns["event_id"], strict=True):
            if found == event_id:
                return seq
        return None

    def step_at_seq(self, seq: int) -> StepEvent | None:
        pos = bisect_left(self._seqs, seq)
        return self.steps[pos] if pos < len(self.steps) and self._seqs[pos] == seq else None

    def error_positions(self) -> tuple[int, ...]:
        """Positions of failed steps; a pass over every step, so computed once (a page asks several times)."""
        if "error_positions" not in self.cache:
            pairs = enumerate(zip(self.columns["type"], self.columns["status"], strict=True))
            self.cache["error_positions"] = tuple(i for i, (kind, status) in pairs if kind == "error" or status == "error")
        return self.cache["error_positions"]

    def error_class_positions(self) -> tuple[int, ...]:
        """Positions of steps that name an error class (what search matches beside the index)."""
        if "error_class_positions" not in self.cache:
            self.cache["error_class_positions"] = tuple(i for i, e in enumerate(self.columns["error_class"]) if e)
        return self.cache["error_class_positions"]

    def first_input(self) -> StepEvent | None:
        """What the agent was asked: the first input step that is not a system prompt (a pass, kept)."""
        if "first_input" not in self.cache:
            pairs = enumerate(zip(self.columns["type"], self.columns["metadata"], strict=True))
            pos = next((i for i, (kind, meta) in pairs if kind == "input" and (meta or {}).get("role") != "system"), None)
            self.cache["first_input"] = None if pos is None else self.steps[pos]
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
        if self.session.get("order_settling"):
            parts.append("spans still arriving out of order: steps are numbered 1..n once they stop")
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


# the OTLP readers' names (ingest/formats/otel/readers.py), which the receiver stores as a run's source; not imported
# from there, as opening a run must not load the span readers
OTLP_SOURCES = frozenset({"otlp-json", "otlp-proto"})


def placed_by_time(session: dict) -> bool:
    """A run received over OTLP: its seqs are an order, its steps named by event id; a hole between seqs is
    room left while its spans arrive out of order (numbered 1..n once they stop), never a lost step."""
    return session.get("source") in OTLP_SOURCES


def columns_of(steps: Sequence[StepEvent]) -> Columns:
    """Steps in hand as the columns an opened run is computed from."""
    return {name: [getattr(s, name) for s in steps] for name in STEP_COLUMNS}


def build_timeline(session: dict, steps: list[StepEvent], context_ids: set[str] | None = None) -> Timeline:
    """The timeline of steps in hand (tests, a run not in the store)."""
    return _timeline(session, steps, columns_of(steps), context_ids)


def _timeline(session: dict, steps: Sequence[StepEvent], columns: Columns, context_ids: set[str] | None) -> Timeline:
    seqs = list(columns["seq"])
    membership = cycle_of_steps(columns["type"])
    holes = find_gaps(seqs)
    arriving = placed_by_time(session) and bool(holes)
    return Timeline(
        # a step priced from list prices makes the run's cost an estimate too (pricing.ESTIMATED)
        session=session | {"cost_estimated": any_estimated(columns["metadata"]), "order_settling": arriving},
        steps=steps,
        columns=columns,
        cycles=cycles_of(seqs, columns["type"], membership),
        cycle_index=membership,
        gaps=[] if placed_by_time(session) else holes,
        totals=RunningTotals.of(columns),
        context_ids=context_ids or set(),
        _seqs=seqs,
    )


def open_timeline(store: Store, session_id: str) -> Timeline:
    """Load a session and everything the timeline needs, in three narrow queries; cycles, gaps and totals
    come from the steps' columns, and the step objects are built when asked for (Steps).

    The cyclic GC is paused meanwhile: a 100,000-step run is over a million long-lived objects, none
    of them cyclic garbage, and its collections, triggered again and again, took a third of the time."""
    session = store.get_session(session_id)
    if session is None:
        raise KeyError(session_id)
    with collector_paused():
        columns = dict(zip(STEP_COLUMNS, store.load_step_columns(session_id), strict=True))
        return _timeline(session, Steps(session_id, columns), columns, store.context_event_ids(session_id))


def count_cycles(store: Store, session_ids: list[str]) -> dict[str, int]:
    """Cycles per session for lists, from step types alone."""
    counts = {}
    for sid, types in store.step_types(session_ids).items():
        members = [c for c in cycle_of_steps(types) if c is not None]
        counts[sid] = (members[-1] + 1) if members else 0
    return counts

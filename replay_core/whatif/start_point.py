"""Where a case's replay starts: a seq, the first model turn, or a step picked by its kind.

Cases of a dataset are different runs, so a step number rarely means the same moment in
each; a kind does: "the last user message", "the first tool error", "the first model
turn after the first tool error". The spec is text, stored with the experiment:

    first-model-turn                       (default) the run's first thought, tool call or answer
    SEQ                                    that step number in every case
    [first|last] KIND [after [first|last] KIND]

KIND is a step type (input, think, tool_call, tool_result, observation, decision, error)
or one of `model_turn` (think, tool_call, decision), `user_message` (input) and
`tool_error` (a tool result or error step with a tool name that failed). `first` is the
default. A run that holds no such step cannot be replayed from it: `resolve` raises
NoSuchStep with the reason, and the experiment counts the case as refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..events import StepEvent, StepType

FIRST_MODEL_TURN = "first-model-turn"
REFUSED = "refused"  # an experiment run's outcome when its case cannot be replayed from the start point: counted, never scored
MODEL_TYPES = ("think", "tool_call", "decision")


def _tool_error(step: StepEvent) -> bool:
    return step.type in ("tool_result", "error") and bool(step.tool_name) and (step.status == "error" or step.type == "error")


def _of_type(step_type: str) -> Callable[[StepEvent], bool]:
    return lambda s: s.type == step_type


KINDS: dict[str, Callable[[StepEvent], bool]] = {
    "model_turn": lambda s: s.type in MODEL_TYPES,
    "user_message": lambda s: s.type == "input",
    "tool_error": _tool_error,
    **{t.value: _of_type(t.value) for t in StepType if t != StepType.SPAN},
}
_PART = r"(?:(first|last)\s+)?([a-z_]+)"
_SPEC = re.compile(rf"{_PART}(?:\s+after\s+{_PART})?")


class StartError(ValueError):
    """A start spec that cannot be read; names what is accepted."""


class NoSuchStep(LookupError):
    """The run holds no step the spec asks for: the case is refused, with this reason."""


@dataclass(frozen=True)
class Pick:
    which: str  # first | last
    kind: str

    def text(self) -> str:
        return f"{self.which} {self.kind}"


@dataclass(frozen=True)
class StartPoint:
    spec: str
    seq: int | None = None
    pick: Pick | None = None
    after: Pick | None = None

    def resolve(self, steps: Sequence[StepEvent]) -> int:
        """The seq this case's replay starts at; NoSuchStep when the run has none."""
        if self.seq is not None:
            return self.seq
        if self.pick is None:
            raise StartError(f"start {self.spec!r} names neither a step nor a kind of step")
        lo = 0
        if self.after is not None:
            at = _find(steps, self.after, 0)
            if at is None:
                raise NoSuchStep(f"the run has no {self.after.kind} step (start: {self.spec})")
            lo = at + 1
        at = _find(steps, self.pick, lo)
        if at is None:
            where = f" after its {self.after.text()}" if self.after else ""
            raise NoSuchStep(f"the run has no {self.pick.kind} step{where} (start: {self.spec})")
        return steps[at].stored_seq


def _find(steps: Sequence[StepEvent], pick: Pick, lo: int) -> int | None:
    test = KINDS[pick.kind]
    hits = (i for i in (range(len(steps) - 1, lo - 1, -1) if pick.which == "last" else range(lo, len(steps))) if test(steps[i]))
    return next(hits, None)


def parse(value: str | int | None) -> StartPoint:
    """A start spec (see the module doc) checked; StartError names what is accepted."""
    if value is None or value == FIRST_MODEL_TURN:
        return StartPoint(FIRST_MODEL_TURN, pick=Pick("first", "model_turn"))
    if isinstance(value, int) or str(value).strip().isdigit():
        return StartPoint(str(int(value)), seq=int(value))
    text = " ".join(str(value).lower().replace("-", "_").split())
    found = _SPEC.fullmatch(text)
    if found is None or found.group(2) not in KINDS or (found.group(4) and found.group(4) not in KINDS):
        raise StartError(
            f"start {value!r}: expected {FIRST_MODEL_TURN}, a step number, or [first|last] KIND "
            f"[after [first|last] KIND] with KIND one of {', '.join(KINDS)}"
        )
    pick = Pick(found.group(1) or "first", found.group(2))
    after = Pick(found.group(3) or "first", found.group(4)) if found.group(4) else None
    return StartPoint(" ".join([pick.text(), *(["after", after.text()] if after else [])]), pick=pick, after=after)

"""One model call of a recorded run, opened to be edited and asked again (the Playground page).

A call is the model turn holding a step: its thought or answer and the tool calls after it, and
the chat messages the model had before it (recording.Recording's, the same the state view shows
and a replay from there sends). Running it edits those messages and asks one model once, through
the what-if replay itself: the turn's range replayed with the edited messages as its start, so
the answer is stored as a replay of the source (`replay_of`, tagged "playground"), credentials are
checked as What-if checks them, and Compare and the timeline open it like any replay.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..events import StepEvent
from ..storage.actor import Actor
from ..storage.store import Store
from ..understand.timeline import Timeline, open_timeline
from .reach import launch_problems
from .recording import split_turns
from .replay import ReplayError, ReplayResult, recording_in, replay
from .replay_config import RECORDED, ReplayConfig

TAG = "playground"
MODEL_OUTPUT = ("think", "tool_call", "decision")


@dataclass
class ModelCall:
    """A recorded model turn and what the model was sent before it."""

    timeline: Timeline
    seq: int  # the step it was opened from
    from_step: int  # the turn's first and last model output (stored seqs)
    to_step: int
    messages: list[dict]  # the messages the model was sent, system prompt included (copies)
    answer: list[StepEvent]  # what the model answered then: the turn's steps
    context_source: str  # where the messages come from, in words

    @property
    def session_id(self) -> str:
        return self.timeline.id

    @property
    def model(self) -> str | None:
        """The model that answered then, as recorded."""
        return next((s.model for s in self.answer if s.model), None) or self.timeline.session.get("model")

    @property
    def system_prompt(self) -> str:
        return next((str(m.get("content") or "") for m in self.messages if m.get("role") == "system"), "")


@dataclass
class Ran:
    """One run of a call: the replay it is stored as, and what the model answered."""

    result: ReplayResult
    answer: list[StepEvent]  # the new model turn: a thought or answer, tool calls (an error step when it failed)


def open_call(store: Store, session_id: str, seq: int) -> ModelCall:
    """The model call holding step `seq` of a run; ReplayError when that step is not the model's output."""
    try:
        timeline = open_timeline(store, session_id)
    except KeyError:
        raise ReplayError(f"no such session: {session_id}") from None
    return call_in(timeline, store, seq)


def call_in(timeline: Timeline, store: Store, seq: int) -> ModelCall:
    """open_call on a run already opened (the page keeps its timeline cached)."""
    session_id = timeline.id
    step = next((s for s in timeline.steps if s.seq == seq), None)
    if step is None:
        raise ReplayError(f"{session_id} has no step {seq}")
    if step.type not in MODEL_OUTPUT:
        raise ReplayError(
            f"step {seq} is a {step.type.replace('_', ' ')}, not a model's output: open a thought, tool call or answer"
        )
    _, turns = split_turns(timeline.steps)
    turn = next(t for t in turns if any(s.seq == seq for s in t.steps))
    rec = recording_in(timeline, store, turn.first_seq, turn.steps[-1].stored_seq)
    return ModelCall(
        timeline=timeline,
        seq=seq,
        from_step=rec.from_step,
        to_step=rec.to_step,
        messages=[dict(m) for m in rec.messages([])],
        answer=list(turn.steps),
        context_source=rec.context_source,
    )


def with_system_prompt(messages: list[dict], system_prompt: str) -> list[dict]:
    """The messages with `system_prompt` as their one system message (none when it is blank)."""
    rest = [m for m in messages if m.get("role") != "system"]
    return [{"role": "system", "content": system_prompt}, *rest] if system_prompt.strip() else rest


def problems(config: ReplayConfig, environ: Mapping[str, str] | None = None) -> list[str]:
    """Why the call cannot run with `config` now, each with its fix (What-if's own check); [] when it can."""
    if config.model == RECORDED:
        return ["The run's own answer is the recorded one shown beside it: pick a live model to ask."]
    return launch_problems([config], environ)


def run_call(store: Store, call: ModelCall, messages: list[dict], config: ReplayConfig, *, actor: Actor | None = None) -> Ran:
    """Ask `config`'s model once with `messages` in place of what the run sent; stored as a one-turn replay.

    Refused before anything is stored or asked (ReplayError) when the model cannot run now.
    Editors only (`actor`): a call costs money, and is in the audit log as a replay.
    """
    found = problems(config)
    if found:
        raise ReplayError(" ".join(found))
    rec = recording_in(call.timeline, store, call.from_step, call.to_step)
    rec.start_with(messages)
    # one step's budget: a turn whose calls the recording answers from elsewhere would be asked again
    once = replace(config, budget=replace(config.budget, max_steps=1))
    result = replay(store, call.session_id, call.from_step, call.to_step, once, tags=(TAG,), actor=actor, recording=rec)
    return Ran(result, answer_of(store, result.session))


def answer_of(store: Store, replay_id: str) -> list[StepEvent]:
    """What the model answered in a playground run: its steps other than the tool answers served after them."""
    steps = open_timeline(store, replay_id).steps
    return [s for s in steps if s.type in (*MODEL_OUTPUT, "error") and not (s.metadata or {}).get("recorded")]


def model_steps(timeline: Timeline) -> list[StepEvent]:
    """The steps a playground opens: the model's thoughts, calls and answers."""
    return [s for s in timeline.steps if s.type in MODEL_OUTPUT]


def answer_view(steps: list[StepEvent]) -> dict[str, Any]:
    """An answer as words and calls: {"text": the thought or answer, "calls": [(tool, arguments)], "error"}."""
    text = "\n\n".join(s.content for s in steps if s.type in ("think", "decision") and s.content)
    calls = [(s.tool_name or "tool", s.tool_args) for s in steps if s.type == "tool_call"]
    error = next((s.content for s in steps if s.type == "error"), None)
    return {"text": text, "calls": calls, "error": error}

"""The agent's state at step n (design.md §5).

The context shown is the latest one the source recorded at or before n; when the
source recorded none, chat messages are rebuilt from the steps before n, in the
OpenAI chat shape that replay also sends to a model.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

import orjson

from ..events import StepEvent
from ..storage.store import Store
from .timeline import Timeline

@dataclass
class Snapshot:
    position: int
    step: StepEvent
    cycle: int | None
    context: Any
    context_source: str  # "recorded" (with context_seq) or "rebuilt"
    context_seq: int | None
    totals: dict[str, Any]
    state: dict[str, Any]

    def to_dict(self) -> dict:
        return {
            "seq": self.step.seq,
            "position": self.position,
            "cycle": self.cycle,
            "step": self.step.to_json_dict(),
            "context_source": self.context_source,
            "context_seq": self.context_seq,
            "context": self.context,
            "totals": self.totals,
            "state": self.state,
        }


def _arguments_json(args: Any) -> str:
    if isinstance(args, str):
        return args
    return orjson.dumps(args if args is not None else {}).decode()


def rebuild_messages(steps: list[StepEvent], marks: list[tuple[int, int | None]] | None = None) -> list[dict]:
    """Chat messages an agent would have seen, rebuilt from its recorded steps.

    think/decision → assistant text; tool_call → assistant tool call (merged into the
    assistant turn before it); tool_result, and tool errors → tool message answering
    its call; input → user (or the role the source gave); observation → user or tool.

    With `marks`, appends for each step where the messages stood just before it: how
    many there were, and how many tool calls the last one held (None unless it is an
    assistant turn) — so any prefix can be cut from one rebuild (see messages_before).
    """
    messages: list[dict] = []
    pending: dict[str, str] = {}  # tool_call_id -> tool name, for calls not answered yet
    for step in steps:
        if marks is not None:
            last = messages[-1] if messages else None
            marks.append((len(messages), len(last.get("tool_calls", ())) if last and last["role"] == "assistant" else None))
        kind = step.type
        meta = step.metadata or {}
        if kind in ("think", "decision"):
            messages.append({"role": "assistant", "content": step.content or ""})
        elif kind == "tool_call":
            call_id = step.tool_call_id or f"call_{step.seq}"
            call = {"id": call_id, "type": "function", "function": {"name": step.tool_name or "tool", "arguments": _arguments_json(step.tool_args)}}
            last = messages[-1] if messages else None
            if last and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            pending[call_id] = step.tool_name or ""
        elif kind in ("tool_result", "observation", "error"):
            call_id = step.tool_call_id if step.tool_call_id in pending else _match_pending(pending, step.tool_name)
            if call_id is not None:
                pending.pop(call_id)
                messages.append({"role": "tool", "tool_call_id": call_id, "content": step.content or ""})
            elif kind == "observation":
                messages.append({"role": "user", "content": step.content or ""})
            elif kind == "tool_result":
                messages.append({"role": "user", "content": f"Result of {step.tool_name or 'tool'}: {step.content or ''}"})
        elif kind == "input":
            role = meta.get("role") if meta.get("role") in ("system", "user", "assistant") else "user"
            messages.append({"role": role, "content": step.content or ""})
    return messages


def _match_pending(pending: dict[str, str], tool_name: str | None) -> str | None:
    for call_id, name in pending.items():
        if tool_name is None or name == tool_name:
            return call_id
    return None


def source_state(steps: list[StepEvent]) -> dict[str, Any]:
    """Goal, memory, page summary… as the source recorded them, latest value wins."""
    state: dict[str, Any] = {}
    for step in steps:
        recorded = (step.metadata or {}).get("state")
        if isinstance(recorded, dict):
            state.update({k: v for k, v in recorded.items() if v is not None})
    return state


@dataclass
class _Index:
    """What state_at needs from a whole session, built once per opened timeline."""

    messages: list[dict]  # rebuild_messages over every step
    marks: list[tuple[int, int | None]]  # per step: where `messages` stood before it
    context_positions: list[int]  # steps with a recorded context
    state_positions: list[int]  # steps with recorded source state


def _index(timeline: Timeline) -> _Index:
    found = timeline.cache.get("snapshot")
    if found is None:
        marks: list[tuple[int, int | None]] = []
        messages = rebuild_messages(timeline.steps, marks)
        steps = timeline.steps
        found = timeline.cache["snapshot"] = _Index(
            messages=messages,
            marks=marks,
            context_positions=[i for i, s in enumerate(steps) if s.event_id in timeline.context_ids],
            state_positions=[i for i, s in enumerate(steps) if isinstance((s.metadata or {}).get("state"), dict)],
        )
    return found


def messages_before(timeline: Timeline, pos: int) -> list[dict]:
    """rebuild_messages(steps[:pos]), cut from the session's one rebuild.

    The message dicts are shared with the index (copying thousands per slider move costs
    more than the rest of state_at): treat them as read-only.
    """
    index = _index(timeline)
    count, calls = index.marks[pos]
    out = index.messages[:count]
    if out and calls is not None and len(out[-1].get("tool_calls", ())) != calls:
        last = dict(out[-1])  # the last assistant turn had fewer tool calls at this point
        if calls:
            last["tool_calls"] = last["tool_calls"][:calls]
        else:
            del last["tool_calls"]
        out[-1] = last
    return out


def state_at(timeline: Timeline, seq: int, store: Store | None = None) -> Snapshot:
    """State at the step with `seq` (or the first step after it). O(1) totals; one keyed read at most."""
    pos = timeline.position_of(seq)
    index = _index(timeline)
    context, source, context_seq = None, "rebuilt", None
    with_context = bisect_right(index.context_positions, pos)
    if store is not None and with_context:
        earlier = timeline.steps[index.context_positions[with_context - 1]]
        context = store.step_context(timeline.id, earlier.event_id)
        source, context_seq = "recorded", earlier.seq
    if context is None:
        context = messages_before(timeline, pos)
    stated = index.state_positions[: bisect_right(index.state_positions, pos)]
    return Snapshot(
        position=pos,
        step=timeline.steps[pos],
        cycle=timeline.cycle_index[pos],
        context=context,
        context_source=source,
        context_seq=context_seq,
        totals=timeline.totals.at(pos),
        state=source_state([timeline.steps[i] for i in stated]),
    )

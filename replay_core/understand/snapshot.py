"""The agent's state at step n: the state-at-step rule (docs/architecture.md).

The context at step n is what the agent had in front of it when it produced step n:
the latest chat context the source recorded at or before n (what it sent to get the
step it was recorded at), plus that step and every later step before n rebuilt in the
OpenAI chat shape; with no recorded chat context, every step before n rebuilt.
`agent_context` is the one function that builds it: the state view, the CLI, the API
and a replay starting at n (whatif.recording) all call it, so what the state view
shows is exactly what a replay sends (property-tested against the fake provider).
Each message carries its origin (recorded at step p, or rebuilt from step s) beside it,
never inside it, so the messages stay byte-equal to what is sent.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice, pairwise
from operator import attrgetter
from typing import Any

import orjson

from ..events import StepEvent
from ..ingest.pipeline import collector_paused
from ..storage.store import Store
from .timeline import Columns, Timeline

CHAT_ROLES = ("system", "user", "assistant", "tool")


def is_chat(context: Any) -> bool:
    """True for a list of well-formed chat messages a provider would accept."""
    if not isinstance(context, list) or not context:
        return False
    for msg in context:
        if not isinstance(msg, dict) or msg.get("role") not in CHAT_ROLES:
            return False
        if msg["role"] == "tool" and not msg.get("tool_call_id"):
            return False
        for call in msg.get("tool_calls") or ():
            if not isinstance(call, dict) or not call.get("id") or not isinstance(call.get("function"), dict):
                return False
    return True


@dataclass
class AgentContext:
    """The chat messages the agent had before one step, and where each came from."""

    messages: list[dict]  # read-only: shared with the session's cached rebuild
    origins: list[dict]  # per message: {"source": "recorded", "seq": p} or {"source": "rebuilt", "seq": s}
    base: list[dict]  # the recorded chat context used as the start ([] when none)
    base_seq: int | None  # the step the base was recorded at
    start: int  # position of the first rebuilt step (the base's step, or 0)
    rebuilt_from: tuple[_Rebuild, Columns] = field(repr=False, compare=False)  # the rebuild cut, the run's columns
    recorded: Any = None  # a recorded context that is not chat messages: shown beside, never sent

    def going_on(self, pos: int) -> Rebuilder:
        """The rebuilt part as it stood before the step at `pos`, as a Rebuilder a replay starting
        there goes on with (whatif.recording). `pos` from `start` to as far as the rebuild these
        messages were cut from reaches (the run's end, or its next recorded context)."""
        rebuild, columns = self.rebuilt_from
        return rebuild.resume(columns, pos)

    @property
    def source(self) -> str:
        rebuilt = len(self.messages) > len(self.base)
        if self.base_seq is None:
            return "rebuilt"
        return "recorded+rebuilt" if rebuilt else "recorded"

    def note(self) -> str:
        """One sentence saying how these messages were put together."""
        n_base, n_rebuilt = len(self.base), len(self.messages) - len(self.base)
        if self.base_seq is None:
            plural = "s" if n_rebuilt != 1 else ""
            text = f"{n_rebuilt} message{plural} rebuilt from the steps before this one (no chat context recorded)"
        elif n_rebuilt:
            first = self.origins[n_base]["seq"]
            text = (
                f"{n_base} message{'s' if n_base != 1 else ''} as recorded at step {self.base_seq}, then {n_rebuilt} "
                f"rebuilt from steps {first}–{self.origins[-1]['seq']}"
            )
        else:
            text = f"{n_base} message{'s' if n_base != 1 else ''} as recorded at step {self.base_seq}"
        if self.recorded is not None:
            text += "; the source also recorded a context that is not chat messages (shown apart, not sent)"
        return text + "."


@dataclass
class Snapshot:
    position: int
    step: StepEvent
    cycle: int | None
    agent: AgentContext
    totals: dict[str, Any]
    state: dict[str, Any]

    @property
    def context(self) -> list[dict]:
        return self.agent.messages

    @property
    def context_source(self) -> str:  # "recorded", "recorded+rebuilt" (both with context_seq) or "rebuilt"
        return self.agent.source

    @property
    def context_seq(self) -> int | None:
        return self.agent.base_seq

    def to_dict(self) -> dict:
        return {
            "seq": self.step.seq,
            "position": self.position,
            "cycle": self.cycle,
            "step": self.step.to_json_dict(),
            "context_source": self.context_source,
            "context_seq": self.context_seq,
            "context_note": self.agent.note(),
            "context": self.context,
            "context_origins": self.agent.origins,
            "recorded_context": self.agent.recorded,
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
    rebuilder = Rebuilder()
    rebuilder.feed(map(_REBUILT_OF_STEP, steps), marks)
    return rebuilder.messages


REBUILT_FIELDS = ("type", "seq", "content", "tool_name", "tool_args", "tool_call_id", "metadata")  # what a rebuild reads
_REBUILT_OF_STEP = attrgetter(*REBUILT_FIELDS)


def _owned(message: dict) -> dict:
    """A message and its tool call list copied: what a later tool call may append to."""
    own = dict(message)
    if "tool_calls" in own:
        own["tool_calls"] = list(own["tool_calls"])
    return own


class Rebuilder:
    """rebuild_messages that can go on: fed steps a, then steps b, its messages are rebuild_messages(a + b).

    Only the last message ever changes (an open assistant turn gaining a tool call, while `calls` is
    not None); every message before it is final. A rebuilder owns its last message: made from
    messages cut from a cached rebuild, it copies that one (the rest stay shared, read-only).
    """

    __slots__ = ("calls", "messages", "pending")

    def __init__(self, messages: list[dict] | None = None, pending: dict[str, str] | None = None, calls: int | None = None):
        self.messages: list[dict] = list(messages or ())
        self.pending: dict[str, str] = dict(pending or {})  # tool_call_id -> tool name, for calls not answered yet
        self.calls = calls  # how many tool calls the last message holds (None unless it is an assistant turn)
        if calls is not None:
            self.messages[-1] = _owned(self.messages[-1])

    def copy(self) -> Rebuilder:
        return Rebuilder(self.messages, self.pending, self.calls)

    def taken(self) -> list[dict]:
        """The messages so far, as a list no later step changes (an open assistant turn copied)."""
        out = list(self.messages)
        if self.calls is not None:
            out[-1] = _owned(out[-1])
        return out

    def extend(self, steps: Iterable[StepEvent]) -> None:
        self.feed(map(_REBUILT_OF_STEP, steps))

    def feed(self, rows: Iterable[tuple], marks: list[tuple[int, int | None]] | None = None) -> None:
        """Go on over the steps' REBUILT_FIELDS (an opened run's columns, zipped: no step objects)."""
        messages, pending, calls = self.messages, self.pending, self.calls
        for kind, seq, content, tool_name, tool_args, tool_call_id, metadata in rows:
            if marks is not None:
                marks.append((len(messages), calls))
            if kind in ("think", "decision"):
                messages.append({"role": "assistant", "content": content or ""})
                calls = 0
            elif kind == "tool_call":
                call_id = tool_call_id or f"call_{seq}"
                function = {"name": tool_name or "tool", "arguments": _arguments_json(tool_args)}
                call = {"id": call_id, "type": "function", "function": function}
                if calls is None:
                    messages.append({"role": "assistant", "tool_calls": [call]})  # no "content": None: litellm drops it
                    calls = 1
                else:
                    messages[-1].setdefault("tool_calls", []).append(call)
                    calls += 1
                pending[call_id] = tool_name or ""
            elif kind in ("tool_result", "observation", "error"):
                call_id = tool_call_id if tool_call_id in pending else _match_pending(pending, tool_name)
                if call_id is not None:
                    pending.pop(call_id)
                    messages.append({"role": "tool", "tool_call_id": call_id, "content": content or ""})
                    calls = None
                elif kind == "observation":
                    messages.append({"role": "user", "content": content or ""})
                    calls = None
                elif kind == "tool_result":
                    messages.append({"role": "user", "content": f"Result of {tool_name or 'tool'}: {content or ''}"})
                    calls = None
            elif kind == "input":
                meta = metadata or {}
                role = meta.get("role") if meta.get("role") in ("system", "user", "assistant") else "user"
                messages.append({"role": role, "content": content or ""})
                calls = 0 if role == "assistant" else None
        self.calls = calls


def _match_pending(pending: dict[str, str], tool_name: str | None) -> str | None:
    for call_id, name in pending.items():
        if tool_name is None or name == tool_name:
            return call_id
    return None


def source_state(steps: list[StepEvent]) -> dict[str, Any]:
    """Goal, memory, page summary… as the source recorded them, latest value wins."""
    return _stated({}, (step.metadata for step in steps))


def _stated(state: dict[str, Any], metadata: Iterable[dict | None]) -> dict[str, Any]:
    """`state` updated with the source state each step's metadata records (None values left out)."""
    for meta in metadata:
        recorded = (meta or {}).get("state")
        if isinstance(recorded, dict):
            state.update({k: v for k, v in recorded.items() if v is not None})
    return state


@dataclass
class _Rebuild:
    """rebuild_messages over steps[start:end] with its marks and each message's origin."""

    start: int
    messages: list[dict]
    marks: list[tuple[int, int | None]]  # per step of the range: where `messages` stood before it
    origins: list[dict]  # per message: the step that opened it
    checkpoints: list[tuple[dict[str, str], int | None] | None]  # every CHECKPOINT steps: unanswered calls, calls

    def cut(self, pos: int) -> tuple[list[dict], list[dict]]:
        """rebuild_messages(steps[start:pos]) and their origins, cut from the one rebuild.

        The message dicts are shared (copying thousands per slider move costs more than the
        rest of state_at): treat them as read-only.
        """
        if pos - self.start >= len(self.marks):
            return list(self.messages), list(self.origins)
        count, calls = self.marks[pos - self.start]
        out = self.messages[:count]
        if out and calls is not None and len(out[-1].get("tool_calls", ())) != calls:
            last = dict(out[-1])  # the last assistant turn had fewer tool calls at this point
            if calls:
                last["tool_calls"] = last["tool_calls"][:calls]
            else:
                del last["tool_calls"]
            out[-1] = last
        return out, self.origins[:count]

    def resume(self, columns: Columns, pos: int) -> Rebuilder:
        """A Rebuilder holding rebuild_messages(steps[start:pos]), ready to go on: cut at the checkpoint
        before `pos`, then fed the steps from there, not the whole range again. Checkpoints are at most
        as far apart as the calls unanswered at them are many (copying them costs as much)."""
        index = min((pos - self.start) // CHECKPOINT, len(self.checkpoints) - 1)
        while (saved := self.checkpoints[index]) is None:
            index -= 1
        pending, calls = saved
        at = self.start + index * CHECKPOINT
        rebuilder = Rebuilder(self.cut(at)[0], pending, calls)
        rebuilder.feed(_rows(columns, at, pos))
        return rebuilder


CHECKPOINT = 128  # steps between the saved states a replay's start goes on from (Rebuilder.resume)
PREFIX = 4096  # steps: a state this near the start of a longer range is cut from a rebuild of these alone
_STARTING = threading.Lock()


def _rebuild(timeline: Timeline, start: int, end: int, pos: int | None = None) -> _Rebuild:
    """The one rebuild of steps[start:end], made once per opened timeline; or, asked `pos` (a page that
    draws before it needs more: `behind=True` below) for a state within PREFIX steps of the start of a
    range more than twice that long that is not rebuilt yet, a rebuild of its first PREFIX steps, while
    a thread rebuilds the whole range. Opening a 100,000-step run at its start waited ~0.13 s for
    messages it did not show; rebuilding only as far as asked and the rest on the next far jump made
    that jump ~80 ms. Whoever needs the whole range before the thread is done hurries it and waits."""
    key, pending_key = ("snapshot", start, end), ("snapshot pending", start, end)
    found = timeline.cache.get(key)
    if found is not None:
        return found
    with _STARTING:  # one thread per range, whichever session asks first (an opened run is shared)
        pending = timeline.cache.get(pending_key)
        if pending is None and pos is not None and pos - start < PREFIX and end - start > 2 * PREFIX:
            hurry = threading.Event()
            thread = threading.Thread(
                target=_rebuild_whole, args=(timeline, start, end, hurry), daemon=True, name=f"rebuild {timeline.id}"
            )
            pending = timeline.cache[pending_key] = _rebuilt_range(timeline, start, start + PREFIX), thread, hurry
            thread.start()
    if pending is not None:
        prefix, thread, hurry = pending
        if pos is not None and pos - start < PREFIX:
            return prefix
        hurry.set()
        thread.join()
    found = timeline.cache.get(key)
    if found is None:  # no thread, or it failed: rebuilt here
        found = timeline.cache[key] = _rebuilt_range(timeline, start, end)
    return found


def _rebuild_whole(timeline: Timeline, start: int, end: int, hurry: threading.Event) -> None:
    try:
        timeline.cache[("snapshot", start, end)] = _rebuilt_range(timeline, start, end, hurry=hurry)
    finally:
        timeline.cache.pop(("snapshot pending", start, end), None)


def _yielding(rows: Iterable[tuple], hurry: threading.Event, every: int = 512) -> Iterator[tuple]:
    """`rows`, with the GIL let go a moment every `every` rows until someone waits for them: a rebuild
    behind the page must not hold back the server's sending of what the page drew (it held the GIL
    for 5 ms at a time)."""
    for i, row in enumerate(rows):
        if not i % every and not hurry.is_set():
            time.sleep(0.0005)
        yield row


def _rows(columns: Columns, start: int, end: int) -> Iterator[tuple]:
    return zip(*(islice(columns[name], start, end) for name in REBUILT_FIELDS), strict=True)


def _rebuilt_range(timeline: Timeline, start: int, end: int, *, hurry: threading.Event | None = None) -> _Rebuild:
    with collector_paused():  # a message dict per step of a long run: see timeline.open_timeline
        columns = timeline.columns
        rows = _rows(columns, start, end) if hurry is None else _yielding(_rows(columns, start, end), hurry)
        marks: list[tuple[int, int | None]] = []
        rebuilder, saved = Rebuilder(), 0
        checkpoints: list[tuple[dict[str, str], int | None] | None] = []
        while True:  # a checkpoint every CHECKPOINT steps, skipped while copying what is unanswered costs more
            if len(rebuilder.pending) <= len(marks) - saved:
                checkpoints.append((dict(rebuilder.pending), rebuilder.calls))
                saved = len(marks)
            else:
                checkpoints.append(None)
            rebuilder.feed(islice(rows, CHECKPOINT), marks)
            if len(marks) < len(checkpoints) * CHECKPOINT:
                break
        messages = rebuilder.messages
        bounds = [m[0] for m in marks] + [len(messages)]
        opened = zip(islice(columns["seq"], start, end), pairwise(bounds), strict=True)  # a step's seq, its messages
        origins = [{"source": "rebuilt", "seq": seq} for seq, (a, b) in opened for _ in range(b - a)]
        return _Rebuild(start, messages, marks, origins, checkpoints)


@dataclass
class _Index:
    """What state_at needs from a whole session, built once per opened timeline."""

    context_positions: list[int]  # steps with a recorded context
    state_positions: list[int]  # steps with recorded source state
    states: list[dict[str, Any]]  # the source state after each STATES-th of those steps (from none)


STATES = 64  # steps with source state between two of the _Index's states


def _index(timeline: Timeline) -> _Index:
    found = timeline.cache.get("snapshot")
    if found is None:
        ids, metadata = timeline.columns["event_id"], timeline.columns["metadata"]
        contexts = timeline.context_ids
        stated = [i for i, m in enumerate(metadata) if m and isinstance(m.get("state"), dict)]
        states: list[dict[str, Any]] = [{}]
        for start in range(0, len(stated) - STATES + 1, STATES):
            states.append(_stated(dict(states[-1]), (metadata[i] for i in stated[start : start + STATES])))
        found = timeline.cache["snapshot"] = _Index(
            context_positions=[i for i, e in enumerate(ids) if e in contexts] if contexts else [],
            state_positions=stated,
            states=states,
        )
    return found


def messages_before(timeline: Timeline, pos: int) -> list[dict]:
    """rebuild_messages(steps[:pos]), cut from the session's one rebuild (read-only dicts)."""
    return _rebuild(timeline, 0, len(timeline.steps)).cut(pos)[0]


def agent_context(timeline: Timeline, pos: int, store: Store | None = None, *, behind: bool = False) -> AgentContext:
    """The chat messages the agent had when it produced the step at `pos` (the one definition).

    The latest context recorded at or before `pos` is the base when it is chat messages
    (it is what the agent sent to get the step it was recorded at); that step and every
    later one before `pos` are rebuilt after it. Without a store, or with no recorded chat
    context, every step before `pos` is rebuilt. One keyed read at most; the rebuilds are
    cached per base, each over the steps up to the next recorded context, so scrubbing a
    whole run rebuilds every step once. `behind`: a page that draws this state first may have the
    rest of a long run rebuilt in a thread (see _rebuild); a later state past it may then wait.
    """
    index = _index(timeline)
    found = bisect_right(index.context_positions, pos)
    recorded = None
    if store is not None and found:
        at = index.context_positions[found - 1]
        raw = store.step_context(timeline.id, timeline.columns["event_id"][at])
        if is_chat(raw):
            end = index.context_positions[found] if found < len(index.context_positions) else len(timeline.steps)
            rebuild = _rebuild(timeline, at, end, pos if behind else None)
            messages, origins = rebuild.cut(pos)
            seq = timeline.steps[at].seq
            base_origin = [{"source": "recorded", "seq": seq}] * len(raw)
            return AgentContext(raw + messages, base_origin + origins, raw, seq, at, (rebuild, timeline.columns))
        recorded = raw
    rebuild = _rebuild(timeline, 0, len(timeline.steps), pos if behind else None)
    messages, origins = rebuild.cut(pos)
    return AgentContext(messages, origins, [], None, 0, (rebuild, timeline.columns), recorded)


def state_at(timeline: Timeline, seq: int, store: Store | None = None, *, behind: bool = False) -> Snapshot:
    """State at the step with `seq` (or the first step after it). O(1) totals; one keyed read at most.
    `behind`: as agent_context's."""
    pos = timeline.position_of(seq)
    index = _index(timeline)
    count = bisect_right(index.state_positions, pos)  # steps with source state up to pos: from the state
    since = count // STATES * STATES  # after the last STATES-th of them, the rest merged
    metadata = timeline.columns["metadata"]
    state = _stated(dict(index.states[count // STATES]), (metadata[i] for i in index.state_positions[since:count]))
    return Snapshot(
        position=pos,
        step=timeline.steps[pos],
        cycle=timeline.cycle_index[pos],
        agent=agent_context(timeline, pos, store, behind=behind),
        totals=timeline.totals.at(pos),
        state=state,
    )

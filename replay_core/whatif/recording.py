"""The original run seen as a source of answers for a replay (docs/replay.md).

A replayed range is cut into model turns (a thought or answer and the tool calls that
follow it) and what the environment said back before the next turn. The recording
answers three questions: what the model saw before a turn (chat messages), what a tool
call returned when the run made the same call (same tool, same canonical-JSON
arguments), and what the model answered to the same request messages (the `recorded`
model, keyed by a hash that leaves system messages out so prompt edits still match).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..events import StepEvent
from ..ingest.formats.jsondoc import parse_arguments
from ..storage.store import Store
from ..understand.snapshot import Rebuilder, agent_context
from ..understand.timeline import Timeline

TEXT_TYPES = ("think", "decision")
ANSWER_TYPES = ("tool_result", "observation", "error")


def canonical_args(args: Any) -> str:
    """Arguments as canonical JSON (parsed when given as a JSON string, keys sorted)."""
    args = parse_arguments(args)
    return orjson.dumps(args if args is not None else {}, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()


def call_key(step: StepEvent) -> tuple[str, str]:
    return (step.tool_name or "", canonical_args(step.tool_args))


def _message_bytes(msg: dict) -> bytes | None:
    """A message as hashed: without call ids or argument formatting; None for system messages."""
    if msg.get("role") == "system":
        return None
    item = {k: v for k, v in msg.items() if k != "tool_call_id"}
    if item.get("tool_calls"):
        item["tool_calls"] = [
            {"name": c["function"]["name"], "arguments": canonical_args(c["function"].get("arguments"))}
            for c in item["tool_calls"]
        ]
    return orjson.dumps(item, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)


def _feed(digest, messages: list[dict]) -> None:
    for msg in messages:
        data = _message_bytes(msg)
        if data is not None:
            digest.update(len(data).to_bytes(8, "big"))
            digest.update(data)


def request_key(messages: list[dict]) -> str:
    """Hash of request messages without system messages, call ids, or argument formatting."""
    digest = hashlib.sha256()
    _feed(digest, messages)
    return digest.hexdigest()


class MessageLog:
    """Chat messages of a growing list of steps: base + rebuild_messages(all steps), without
    rebuilding them each turn.

    The steps go on into one snapshot.Rebuilder (a start cut from the run's cached rebuild:
    Recording.start_log). Only its last message can still change, so every message before it
    is hashed once, as it comes (key). Equal to base + rebuild_messages(all steps) (tested).
    """

    def __init__(self, base: list[dict], steps: Sequence[StepEvent] = (), rebuilt: Rebuilder | None = None):
        self.base = base
        self.rebuilder = Rebuilder() if rebuilt is None else rebuilt
        self.digest = hashlib.sha256()
        self.hashed = -1  # rebuilt messages in the digest after base (-1: base not yet either)
        self.extend(steps)

    def extend(self, steps: Sequence[StepEvent]) -> None:
        self.rebuilder.extend(steps)

    def messages(self) -> list[dict]:
        return self.base + self.rebuilder.taken()

    def key(self) -> str:
        """request_key(self.messages()), from the running hash."""
        if self.hashed < 0:
            _feed(self.digest, self.base)
            self.hashed = 0
        rebuilt = self.rebuilder.messages
        final = max(len(rebuilt) - 1, self.hashed)
        _feed(self.digest, rebuilt[self.hashed : final])
        self.hashed = final
        digest = self.digest.copy()
        _feed(digest, rebuilt[final:])
        return digest.hexdigest()

    def copy(self) -> MessageLog:
        other = MessageLog.__new__(MessageLog)
        other.base, other.rebuilder = self.base, self.rebuilder.copy()
        other.digest, other.hashed = self.digest.copy(), self.hashed
        return other


@dataclass
class Turn:
    """Model output of the original run and the environment's answer before the next one."""

    index: int
    steps: list[StepEvent]
    env: list[StepEvent] = field(default_factory=list)

    @property
    def calls(self) -> list[StepEvent]:
        return [s for s in self.steps if s.type == "tool_call"]

    @property
    def call_keys(self) -> Counter:
        return Counter(call_key(s) for s in self.calls)

    @property
    def text_type(self) -> str | None:
        """think or decision: what a text-only answer in this turn's place is."""
        texts = [s.type for s in self.steps if s.type in TEXT_TYPES]
        return texts[-1] if texts else None

    @property
    def first_seq(self) -> int:
        return self.steps[0].stored_seq

    @property
    def last_seq(self) -> int:
        return (self.env or self.steps)[-1].stored_seq


def split_turns(steps: Sequence[StepEvent]) -> tuple[list[StepEvent], list[Turn]]:
    """Steps before the first model output, then the turns.

    A thought or answer opens a turn; tool calls join the open turn until the
    environment speaks, after which a call opens a new one.
    """
    lead: list[StepEvent] = []
    turns: list[Turn] = []
    for step in steps:
        if step.type in TEXT_TYPES or (step.type == "tool_call" and (not turns or turns[-1].env)):
            turns.append(Turn(len(turns), [step]))
        elif step.type == "tool_call":
            turns[-1].steps.append(step)
        else:
            (turns[-1].env if turns else lead).append(step)
    return lead, turns


@dataclass
class RecordedCall:
    call: StepEvent
    answer: StepEvent | None  # the step that answered it, when the run recorded one


class Recording:
    """One session's range [from_step, to_step], ready to be replayed."""

    def __init__(self, timeline: Timeline, store: Store | None, from_step: int, to_step: int):
        self.timeline = timeline
        self.session = timeline.session
        self.from_step, self.to_step = from_step, to_step
        start, end = timeline.span(from_step, to_step)
        self.range_steps = timeline.steps[start:end]
        self.lead, self.turns = split_turns(self.range_steps)
        self.covers_end = end == len(timeline.steps)
        self._start_log, at, self.covered, self.context_source = self._base_context(store, start)
        self.base = self._start_log.base
        self._prefix_span = at, start
        self._calls: dict[tuple[str, str], list[RecordedCall]] | None = None
        self._answers: dict[str, Turn] | None = None

    def _base_context(self, store: Store | None, start: int) -> tuple[MessageLog, int, int, str]:
        """The messages before the range, the position of their first rebuilt step, how many lead
        steps their recorded base covers, and a word on them.

        The context before the range's first model step is snapshot.agent_context's, the
        one the state view shows: a recorded chat base plus the steps since, rebuilt (here
        as they stood at `start`, taken from the same cached rebuild). When the base was
        recorded after `start` (inside the range's lead steps), it covers those lead steps,
        which are then not rebuilt twice.
        """
        if not self.turns:
            rebuilt = agent_context(self.timeline, start).going_on(start)
            return MessageLog([], rebuilt=rebuilt), 0, 0, "rebuilt from the steps"
        ctx = agent_context(self.timeline, self.timeline.position_of(self.turns[0].first_seq), store)
        if ctx.base_seq is None:
            return MessageLog([], rebuilt=ctx.going_on(start)), 0, 0, "rebuilt from the steps"
        base, source = [dict(m) for m in ctx.base], f"recorded at step {ctx.base_seq}"
        if ctx.start <= start:
            return MessageLog(base, rebuilt=ctx.going_on(start)), ctx.start, 0, source
        return MessageLog(base), ctx.start, ctx.start - start, source

    # ------------------------------------------------------------------ context

    @property
    def prefix(self) -> Sequence[StepEvent]:
        """The steps before the range that the start messages hold rebuilt after the base."""
        return self.timeline.steps[slice(*self._prefix_span)]

    def start_log(self) -> MessageLog:
        """The messages at the start of the range, ready to grow with the replay's steps."""
        return self._start_log.copy()

    def start_with(self, messages: list[dict]) -> None:
        """The context at the start of the range replaced by `messages` (nothing rebuilt after them)."""
        self._start_log = MessageLog([dict(m) for m in messages])
        self.base, self.covered, self._answers = self._start_log.base, 0, None
        self._prefix_span = self._prefix_span[1], self._prefix_span[1]

    def messages(self, new_steps: list[StepEvent]) -> list[dict]:
        """What the model sees after `new_steps` of the replay (no prompt change applied)."""
        log = self.start_log()
        log.extend(new_steps[self.covered :])
        return log.messages()

    def system_prompt(self) -> str:
        """The original system prompt (empty when the run recorded none)."""
        for msg in self.messages([]):
            if msg.get("role") == "system":
                return msg.get("content") or ""
        return ""

    def tools(self) -> list[dict]:
        """Tool schemas: the source's own when recorded, else inferred from the recorded calls."""
        recorded = (self.session.get("metadata") or {}).get("tools")
        if isinstance(recorded, list) and recorded:
            schemas = [t for t in (_openai_tool(t) for t in recorded) if t]
            if schemas:
                return schemas
        by_name: dict[str, list[Any]] = {}
        for step in self.timeline.steps:
            if step.type == "tool_call" and step.tool_name:
                by_name.setdefault(step.tool_name, []).append(parse_arguments(step.tool_args))
        return [_inferred_tool(name, calls) for name, calls in by_name.items()]

    # ------------------------------------------------------------------ answers

    def find_call(self, name: str, args: Any) -> RecordedCall | None:
        """The recorded call with the same tool and arguments: first at or after the range, else any."""
        if self._calls is None:
            self._calls = self._index_calls()
        found = self._calls.get((name, canonical_args(args)), [])
        return next((c for c in found if c.call.stored_seq >= self.from_step), found[0] if found else None)

    def _index_calls(self) -> dict[tuple[str, str], list[RecordedCall]]:
        steps = self.timeline.steps
        index: dict[tuple[str, str], list[RecordedCall]] = {}
        for pos, step in enumerate(steps):
            if step.type == "tool_call":
                index.setdefault(call_key(step), []).append(RecordedCall(step, _answer_of(steps, pos)))
        return index

    def recorded_answer(self, key: str) -> Turn | None:
        """The original turn that answered request messages with this request_key."""
        if self._answers is None:  # built whole, then published: concurrent replays may share a recording
            answers: dict[str, Turn] = {}
            log, done = self.start_log(), self.covered
            for turn in self.turns:
                upto = next(i for i in range(done, len(self.range_steps)) if self.range_steps[i].seq == turn.first_seq)
                log.extend(self.range_steps[done:upto])
                done = upto
                answers.setdefault(log.key(), turn)
            self._answers = answers
        return self._answers.get(key)

    def turn_of_seq(self, seq: int) -> Turn | None:
        return next((t for t in self.turns if t.first_seq <= seq <= t.last_seq), None)


def _answer_of(steps: Sequence[StepEvent], pos: int, lookahead: int = 200) -> StepEvent | None:
    """The step that answered the call at `pos`: same call id, else the next result of that tool."""
    call, later = steps[pos], steps[pos + 1 : pos + 1 + lookahead]
    if call.tool_call_id:
        hit = next((s for s in later if s.type in ANSWER_TYPES and s.tool_call_id == call.tool_call_id), None)
        if hit is not None:
            return hit
    return next((s for s in later if s.type in ("tool_result", "error") and s.tool_name == call.tool_name), None)


_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array", dict: "object"}


def _inferred_tool(name: str, calls: list[Any]) -> dict:
    dict_calls = [c for c in calls if isinstance(c, dict)]
    props: dict[str, dict] = {}
    for args in dict_calls:
        for key, value in args.items():
            kind = _JSON_TYPES.get(type(value))
            seen = props.setdefault(key, {"type": kind} if kind else {})
            if seen.get("type") not in (None, kind) and {seen["type"], kind} != {"integer", "number"}:
                seen.pop("type")
            elif {seen.get("type"), kind} == {"integer", "number"}:
                seen["type"] = "number"
    props = dict(sorted(props.items()))  # stored JSON may not keep key order (PostgreSQL JSONB)
    required = [k for k in props if dict_calls and all(k in c for c in dict_calls)]
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"Tool used by the recorded run (schema inferred from {len(calls)} recorded call(s)).",
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


def _openai_tool(tool: Any) -> dict | None:
    """A recorded tool description in the OpenAI `tools` shape (OpenAI or Anthropic style)."""
    if not isinstance(tool, dict):
        return None
    if tool.get("type") == "function" and isinstance(tool.get("function"), dict):
        return tool
    if tool.get("name"):
        params = tool.get("parameters") or tool.get("input_schema") or {"type": "object", "properties": {}}
        return {
            "type": "function",
            "function": {"name": tool["name"], "description": tool.get("description", ""), "parameters": params},
        }
    return None

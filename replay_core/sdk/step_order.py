"""The order of a recorded run: seq numbers given in the order steps were recorded.

Three things make it more than a counter. A model call's steps come later than the call
(litellm logs from another thread), so the call's place is held and the steps recorded
after it wait until it is filled, or given up on after its deadline. A span's step is
written when the span closes, so it takes its seq when it opens and is emitted at close.
And a decorated tool's own call is dropped when it repeats a call the model asked for:
its result then answers the model's call id, so a run shows each call once.

Not thread-safe by itself: the Recorder uses it under its lock.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from typing import Any

import orjson

from ..events import StepEvent


def _canonical(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


class Held:
    """The place of a model call in flight; `events` are its steps once they come."""

    __slots__ = ("key", "parent", "deadline", "events", "abandoned")

    def __init__(self, key: str, parent: str | None, deadline: float):
        self.key, self.parent, self.deadline = key, parent, deadline
        self.events: list[StepEvent] | None = None
        self.abandoned = False


class Reserved:
    """A span's place: it takes its seq when reached; its step comes at close."""

    __slots__ = ("placed", "seq", "event")

    def __init__(self):
        self.placed, self.seq, self.event = False, None, None


class AutoCall:
    """A tool call made by a decorated tool, to be dropped when it repeats a model's call."""

    __slots__ = ("event",)

    def __init__(self, event: StepEvent):
        self.event = event


class StepOrder:
    """Numbers one run's steps. With `numbered=False` (a run opened elsewhere) seq is left to the store."""

    def __init__(self, numbered: bool = True):
        self.numbered = numbered
        self.last_seq = 0
        self._queue: deque = deque()
        self._open_calls: dict[str, tuple[str | None, bytes]] = {}  # model tool calls not answered yet
        self._aliases: dict[str, str] = {}  # a decorated tool's call id -> the model's call id

    @property
    def waiting(self) -> bool:
        return bool(self._queue)

    def add(self, item: StepEvent | AutoCall) -> list[StepEvent]:
        """The steps ready to send now: this one, unless it waits behind a held call."""
        if self._queue:
            self._queue.append(item)
            return self.release()
        placed = self._place(item)
        return [placed] if placed is not None else []

    def reserve(self) -> Reserved:
        slot = Reserved()
        if self._queue:
            self._queue.append(slot)
        else:
            self._place(slot)
        return slot

    def complete(self, slot: Reserved, event: StepEvent) -> list[StepEvent]:
        if not slot.placed:
            slot.event = event  # emitted when the queue reaches its place
            return []
        event.seq = slot.seq
        return [event]

    def hold(self, key: str, parent: str | None, timeout: float) -> Held:
        held = Held(key, parent, time.monotonic() + timeout)
        self._queue.append(held)
        return held

    def fill(self, held: Held, events: list[StepEvent]) -> list[StepEvent]:
        if not held.abandoned:
            held.events = events
            return self.release()
        return [ready for event in events for ready in self.add(event)]  # too late: they go last

    def release(self, *, expire_all: bool = False) -> list[StepEvent]:
        """Number the queue up to the first held call still in flight and within its deadline."""
        out: list[StepEvent] = []
        now = time.monotonic()
        while self._queue:
            head = self._queue[0]
            items: Sequence[StepEvent | AutoCall | Reserved]
            if isinstance(head, Held):
                if head.events is None and now < head.deadline and not expire_all:
                    break
                head.abandoned = head.events is None
                items = head.events or ()
            else:
                items = (head,)
            self._queue.popleft()
            out.extend(e for e in map(self._place, items) if e is not None)
        return out

    def _place(self, item: StepEvent | AutoCall | Reserved) -> StepEvent | None:
        if isinstance(item, Reserved):
            item.placed, item.seq = True, self._next()
            if item.event is not None:
                item.event.seq = item.seq
            return item.event
        if isinstance(item, AutoCall):
            event = item.event
            model_call = self._match_call(event)
            if model_call is not None:
                if event.tool_call_id:
                    self._aliases[event.tool_call_id] = model_call
                return None
        else:
            event = item
            if event.type == "tool_call" and event.tool_call_id:
                self._open_calls[event.tool_call_id] = (event.tool_name, _canonical(event.tool_args))
        if event.type in ("tool_result", "error") and event.tool_call_id:
            event.tool_call_id = self._aliases.pop(event.tool_call_id, event.tool_call_id)
            self._open_calls.pop(event.tool_call_id, None)
        event.seq = self._next()
        return event

    def _next(self) -> int | None:
        if not self.numbered:
            return None
        self.last_seq += 1
        return self.last_seq

    def _match_call(self, event: StepEvent) -> str | None:
        """The model's open call this execution answers: same tool and arguments, else same tool."""
        args = _canonical(event.tool_args)
        same_tool = [cid for cid, (tool, _) in self._open_calls.items() if tool == event.tool_name]
        exact = [cid for cid in same_tool if self._open_calls[cid][1] == args]
        chosen = next(iter(exact or same_tool), None)
        if chosen is not None:
            del self._open_calls[chosen]
        return chosen

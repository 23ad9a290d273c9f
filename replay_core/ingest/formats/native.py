"""The native format: JSON Lines of contract events (`agent-replay/v1`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import IO

import orjson

from ...events import SCHEMA, EventError, parse_event
from .reader import BadRecord, Event


class NativeFormat:
    name = "native"
    label = "Agent Replay JSONL"
    ends_runs = False  # the contract states a run's status itself: a run without session_end is still running
    lines_stand_alone = True  # every line names its session: `watch` reads only what was appended

    def sniff(self, head: bytes, filename: str) -> bool:
        first = head.lstrip()[:4096]
        return first.startswith(b"{") and SCHEMA.encode() in first.split(b"\n", 1)[0]

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord]:
        for number, line in enumerate(data.split(b"\n"), start=1):
            if not line.strip():
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                yield BadRecord(f"{filename}:{number}", f"invalid JSON ({exc.args[0]})")
                continue
            try:
                yield parse_event(obj)
            except EventError as exc:
                yield BadRecord(f"{filename}:{number}", exc.reason)


FORMAT = NativeFormat()


def dumps(event: Event) -> bytes:
    return orjson.dumps(event.to_json_dict())


def write(events: Iterable[Event], out: IO[bytes]) -> int:
    """Write events as JSON Lines; returns how many were written."""
    n = 0
    for ev in events:
        out.write(dumps(ev) + b"\n")
        n += 1
    return n

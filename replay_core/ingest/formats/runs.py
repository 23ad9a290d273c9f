"""One imported run being assembled: the importers' shared way to emit contract events.

Every importer turns its source into runs; `Run` numbers steps in source order, keeps
event ids unique and stable (so re-importing a file stores nothing twice), validates
each step against the contract and reports a step that does not fit as a `BadRecord`
naming where in the file it came from, instead of raising half-way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ...events import SessionEndEvent, SessionEvent, StepEvent, describe_validation_error, fast_step
from ...storage.tables import sessions
from ...storage.widths import RUN_IDS, cut_apart, width
from .reader import BadRecord, Event

IDS_CUT = "ids_cut"  # in a run's metadata: its user_id / thread_id whole, when their columns hold them cut


def stable_id(filename: str, data: bytes, *parts: object) -> str:
    """A session id for sources that carry none: file stem + content hash (+ position)."""
    digest = hashlib.sha1(data).hexdigest()[:10]
    stem = Path(filename).name.split(".")[0] or "run"
    return "-".join([stem[:120], digest, *(str(p) for p in parts)])


def parse_time(value: Any) -> datetime | None:
    """ISO-8601 text, 'YYYY-MM-DD HH:MM:SS', or epoch seconds/milliseconds/nanoseconds; naive is UTC."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = float(value)
        if seconds > 1e17:
            seconds /= 1e9
        elif seconds > 1e11:
            seconds /= 1e3
        return datetime.fromtimestamp(seconds, UTC)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)  # Python 3.11 reads "Z" itself: the usual case, one call
        except ValueError:
            try:
                parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            except ValueError:
                return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def compact(mapping: dict[str, Any]) -> dict[str, Any] | None:
    """The mapping without None values (and None when nothing is left)."""
    out = {k: v for k, v in mapping.items() if v is not None}
    return out or None


def fitted_ids(session: dict[str, Any]) -> dict[str, Any]:
    """A run's fields read from a trace, its user and thread ids as their columns hold them: unchanged when
    they fit; else cut apart (their start, …, a hash of the whole: two users stay two, and one user's runs
    stay together) with the whole ids in the run's metadata (`ids_cut`), and the run kept. Sent over the
    API or the SDK such an id is refused instead (the contract's width)."""
    whole = {k: v for k in RUN_IDS if isinstance(v := session.get(k), str) and len(v) > width(sessions.c[k])}
    if not whole:
        return session
    metadata = {**(session.get("metadata") or {}), IDS_CUT: whole}
    return session | {k: cut_apart(v, sessions.c[k]) for k, v in whole.items()} | {"metadata": metadata}


_HEAD_AND_TAGS = frozenset({"session_id", "event_id", "seq", "type", "kind", "schema"})


class Run:
    """The events of one session, built step by step in source order."""

    def __init__(self, session_id: str, where: str, **session: Any):
        self.session_id = session_id
        self.where = where
        self.session: dict[str, Any] = {k: v for k, v in session.items() if v is not None}
        self.steps: list[StepEvent] = []
        self.errors: list[BadRecord] = []
        self.end: dict[str, Any] | None = None
        self._ids: set[str] = set()
        self._tried: dict[str, int] = {}  # an id met more than once → the last n its `#n` search reached

    def step(self, event_id: str, type: str, *, where: str | None = None, **fields: Any) -> StepEvent | None:
        """Append one step; None (and a BadRecord kept for the reader) when it breaks the contract."""
        event_id = self._unique(str(event_id))
        body = {k: v for k, v in fields.items() if v is not None}
        if "metadata" in body:
            body["metadata"] = compact(body["metadata"])
        head = {"session_id": self.session_id, "event_id": event_id, "seq": len(self.steps) + 1, "type": type}
        # the contract's fast path where it vouches for the fields (keys given twice, or a tag, go to the model as before)
        fast = None if body.keys() & _HEAD_AND_TAGS else fast_step({"kind": "step", **head, **body})
        try:
            step = fast or StepEvent(**head, **body)
        except ValidationError as exc:
            self.errors.append(BadRecord(where or self.where, describe_validation_error(exc)))
            return None
        self.steps.append(step)
        return step

    def _unique(self, event_id: str) -> str:
        """`event_id`, else the first of `event_id#2`, `#3`… not taken; looked for from where the last search for the
        same id stopped (ids are only ever added), so a run repeating one id n times costs n probes, not n²."""
        if event_id not in self._ids:
            self._ids.add(event_id)
            return event_id
        n = self._tried.get(event_id, 1)
        candidate = event_id
        while candidate in self._ids:
            n += 1
            candidate = f"{event_id}#{n}"
        self._tried[event_id] = n
        self._ids.add(candidate)
        return candidate

    def finish(
        self, status: str, *, outcome: str | None = None, error_class: str | None = None, ended_at: datetime | None = None
    ) -> None:
        self.end = compact({"status": status, "outcome": outcome, "error_class": error_class, "ended_at": ended_at})

    def events(self) -> Iterator[Event | BadRecord]:
        """The session event, its steps, its end (if the source said how it ended), and refusals."""
        try:
            yield SessionEvent(session_id=self.session_id, **fitted_ids(self.session))
            if self.end is not None:
                end = SessionEndEvent(session_id=self.session_id, **self.end)
        except ValidationError as exc:
            yield BadRecord(self.where, describe_validation_error(exc))
            return
        yield from self.steps
        yield from self.errors
        if self.end is not None:
            yield end

"""What a reader is and what it gives back: the one interface every format module implements.

Kept apart from the package's registry so that readers import it without importing the registry
(no import cycle between the package and its readers).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from ...events import AttachmentEvent, SessionEndEvent, SessionEvent, StepEvent

Event = SessionEvent | StepEvent | SessionEndEvent | AttachmentEvent
SNIFF_BYTES = 256 * 1024


@dataclass(frozen=True)
class BadRecord:
    """A record a reader refused: `where` is `file:line` (or a path inside the document)."""

    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


@dataclass(frozen=True)
class Ignored:
    """A record a reader read and chose not to turn into events (a progress line, a hook
    notice…): yielded so the import can account for it by `kind` instead of losing it silently.
    `known` is False when the reader could not tell what the record is: that counts against
    its understanding of the file, a record it knows and skips on purpose does not."""

    where: str
    kind: str
    known: bool = True


@dataclass(frozen=True)
class Records:
    """How many records a reader found in the file and what it calls them ("trajectory entries",
    "spans"…). Yielded once, first, by a reader whose record is not the container's own unit
    (a JSONL line, a JSON list item, one JSON object); otherwise the pipeline counts those."""

    count: int
    unit: str


def kind_of(record: object) -> str:
    """A short name for what a record is, for the ignored-by-kind account: `type=progress`,
    `keys id, source, action`, `str`."""
    if isinstance(record, dict):
        for key in DISCRIMINATORS:
            value = record.get(key)
            if isinstance(value, str) and value:
                return f"{key}={value[:40]}"
        return "keys " + ", ".join(list(record)[:4]) if record else "empty object"
    return type(record).__name__


DISCRIMINATORS = ("type", "kind", "event", "role", "action", "observation")


class DocumentError(ValueError):
    """A file a reader cannot read at all. Readers raise it; the pipeline turns it into a
    refusal of the file with `record` (where it breaks and why)."""

    def __init__(self, record: BadRecord):
        super().__init__(str(record))
        self.record = record


class Format(Protocol):
    name: str  # what --format takes
    label: str  # what a person reads
    # (optional) ends_runs = False: the format states runs' status itself, so a run of a finished
    # file without an end stays as it says; otherwise such a run ends `unknown` (pipeline.import_bytes)
    # (optional) lines_stand_alone = True: each line can be read without the ones before it, so
    # `watch` reads only appended lines (otherwise it reads a grown file again from its start);
    # unwatchable = "why": runs are named by the whole file's content, so `watch` refuses the file

    def sniff(self, head: bytes, filename: str) -> bool:
        """True when the first bytes of a file look like this format."""

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored | Records]:
        """Events of the whole file, in file order; an `Ignored` for each record it skips."""


class UnknownFormat(ValueError):
    pass

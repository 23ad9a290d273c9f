"""Readers and writers of trace formats, one module per format behind one interface.

A reader turns a file's bytes into contract events (or `BadRecord`s naming where and
why a record was refused); `detect` places a file by its content, not its name.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from ..events import SessionEndEvent, SessionEvent, StepEvent

Event = SessionEvent | StepEvent | SessionEndEvent
SNIFF_BYTES = 256 * 1024


@dataclass(frozen=True)
class BadRecord:
    """A record a reader refused: `where` is `file:line` (or a path inside the document)."""

    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


class DocumentError(ValueError):
    """A file a reader cannot read at all. Readers raise it; the pipeline turns it into a
    refusal of the file with `record` (where it breaks and why)."""

    def __init__(self, record: BadRecord):
        super().__init__(str(record))
        self.record = record


class Format(Protocol):
    name: str  # what --format takes
    label: str  # what a person reads

    def sniff(self, head: bytes, filename: str) -> bool:
        """True when the first bytes of a file look like this format."""

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord]:
        """Events of the whole file, in file order."""


class UnknownFormat(ValueError):
    pass


def registry() -> dict[str, Format]:
    """Known formats, in detection order (most specific first)."""
    from . import anthropic, langchain, native, notte, openai_chat, otel, smolagents, swe_agent

    formats: list[Format] = [native.FORMAT]
    formats += [otel.OTLP_JSON, otel.OTLP_PROTO, otel.OTEL_SPANS]
    # agent formats, most specific first; a generic "list of chat messages" last
    formats += [swe_agent.SWE_AGENT, swe_agent.MINI_SWE_AGENT, smolagents.FORMAT, notte.FORMAT, langchain.FORMAT,
                anthropic.FORMAT, openai_chat.FORMAT]
    return {f.name: f for f in formats}


def get_format(name: str) -> Format:
    formats = registry()
    if name not in formats:
        raise UnknownFormat(f"unknown format {name!r}; known formats: {', '.join(formats)}")
    return formats[name]


def detect(data: bytes, filename: str) -> Format:
    head = data[:SNIFF_BYTES]
    for fmt in registry().values():
        if fmt.sniff(head, filename):
            return fmt
    known = ", ".join(f"{f.name} ({f.label})" for f in registry().values())
    raise UnknownFormat(f"{filename}: cannot tell which format this file is in; known formats: {known}")

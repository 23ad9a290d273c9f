"""Readers and writers of trace formats, one module per format behind one interface.

A reader turns a file's bytes into contract events (or `BadRecord`s naming where and
why a record was refused); `detect` places a file by its content, not its name.
"""

from __future__ import annotations

from .reader import SNIFF_BYTES, BadRecord, DocumentError, Event, Format, Ignored, Records, UnknownFormat

__all__ = [
    "SNIFF_BYTES",
    "BadRecord",
    "DocumentError",
    "Event",
    "Format",
    "Ignored",
    "Records",
    "UnknownFormat",
    "candidates",
    "detect",
    "get_format",
    "registry",
]


def registry() -> dict[str, Format]:
    """Known formats, in detection order (most specific first)."""
    from . import (
        aider,
        anthropic,
        atif,
        autogen,
        browser_use,
        claude_code,
        cline_ui,
        codex_cli,
        crewai,
        gemini_cli,
        goose,
        inspect_ai,
        langchain,
        langfuse,
        letta,
        native,
        notte,
        openai_agents,
        openai_chat,
        openhands,
        otel,
        phoenix,
        pydantic_ai,
        smolagents,
        swe_agent,
    )

    formats: list[Format] = [native.FORMAT]
    formats += [otel.OTLP_JSON, otel.OTLP_PROTO, phoenix.FORMAT, otel.OTEL_SPANS]  # Phoenix's rows before generic span dumps
    formats += [claude_code.FORMAT, codex_cli.FORMAT, gemini_cli.FORMAT]  # coding agents' own session logs
    # agent formats, most specific first; a generic "list of chat messages" last
    formats += [
        atif.FORMAT,
        langfuse.FORMAT,
        letta.FORMAT,
        pydantic_ai.FORMAT,
        openai_agents.FORMAT,
        autogen.FORMAT,
        crewai.FORMAT,
        openai_agents.INPUT_LIST,
        aider.FORMAT,
        goose.FORMAT,
        cline_ui.FORMAT,
        openhands.FORMAT,
        inspect_ai.FORMAT,
        swe_agent.SWE_AGENT,
        swe_agent.MINI_SWE_AGENT,
        browser_use.FORMAT,
        smolagents.FORMAT,
        notte.FORMAT,
        langchain.FORMAT,
        anthropic.FORMAT,
        openai_chat.FORMAT,
    ]
    return {f.name: f for f in formats}


def get_format(name: str) -> Format:
    formats = registry()
    if name not in formats:
        raise UnknownFormat(f"unknown format {name!r}; known formats: {', '.join(formats)}")
    return formats[name]


def candidates(data: bytes, filename: str) -> list[Format]:
    """Every reader whose sniff passes on the file's first bytes, in registry order: the import
    reads the file with each and keeps the one that accounts for most of it (ingest.accounting)."""
    head = data[:SNIFF_BYTES]
    return [fmt for fmt in registry().values() if fmt.sniff(head, filename)]


def detect(data: bytes, filename: str) -> Format:
    """The first reader whose sniff passes (a quick guess; the import compares all of them)."""
    found = candidates(data, filename)
    if found:
        return found[0]
    known = ", ".join(f"{f.name} ({f.label})" for f in registry().values())
    raise UnknownFormat(f"{filename}: cannot tell which format this file is in; known formats: {known}")

"""Short text columns hold at most their declared width, and the two databases disagree past it:
SQLite keeps the longer value, PostgreSQL refuses the whole write (a DataError). A name a person
or client chose (a note's author, a reviewer, a dataset) is therefore checked against its column
before the write and refused with the field and the limit named, the same on both databases; text
read from a trace (an attachment's file name) is kept rather than refused: cut to fit, with a mark."""

from __future__ import annotations

from typing import TypeVar

from sqlalchemy import Column, String

T = TypeVar("T", str, str | None)


MARK = "…"  # ends a value cut to fit its column


class TooLong(ValueError):
    """A chosen name wider than its column: `field: at most N characters (got M)`."""


def width(column: Column) -> int:
    """The declared width of a String column (tables.py is the one place widths are written)."""
    kind = column.type
    if not isinstance(kind, String) or kind.length is None:
        raise TypeError(f"{column}: not a String column with a width")
    return kind.length


def fit(field: str, value: T, column: Column) -> T:
    """`value` unchanged when it fits `column`; refused (TooLong naming `field`) when it does not."""
    limit = width(column)
    if value is not None and len(value) > limit:
        raise TooLong(f"{field}: at most {limit} characters (got {len(value)})")
    return value


def cut(value: T, column: Column) -> T:
    """`value` unchanged when it fits `column`, else cut to the width with its last character `MARK`."""
    limit = width(column)
    if value is None or len(value) <= limit:
        return value
    return value[: limit - len(MARK)] + MARK

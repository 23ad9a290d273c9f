"""Short text columns hold at most their declared width, and the two databases disagree past it:
SQLite keeps the longer value, PostgreSQL refuses the whole write (a DataError). A name a person
or client chose (a note's author, a reviewer, a dataset) is therefore checked against its column
before the write and refused with the field and the limit named, the same on both databases; text
read from a trace (an attachment's file name) is kept rather than refused: cut to fit, with a mark.
An id read from a trace (a run's user or thread) is cut so that two ids stay two (`cut_apart`); a
person's name from a credential has one width everywhere it is kept (`holder`)."""

from __future__ import annotations

import hashlib
from typing import TypeVar

from sqlalchemy import Column, String

from .tables import audit_log

T = TypeVar("T", str, str | None)


MARK = "…"  # ends a value cut to fit its column
# Every column that keeps who did something (audit log, queues, share links, alerts, schedules) has this
# width (tests/test_field_widths.py holds them to it), so a name fits them all or none.
HOLDER = audit_log.c.who
# A run's ids read from a trace (its user, its thread: columns of `sessions`): cut apart when too long.
RUN_IDS = ("user_id", "thread_id")


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


def cut_apart(value: T, column: Column) -> T:
    """`value` unchanged when it fits `column`, else its start, `MARK` and a short hash of the whole: two
    ids alike in their first characters stay two (a cut that merged them would merge two users' runs),
    and the same id is always cut the same way (a user's runs stay together across imports)."""
    limit = width(column)
    if value is None or len(value) <= limit:
        return value
    tag = MARK + "#" + hashlib.sha256(value.encode()).hexdigest()[:12]
    return value[: limit - len(tag)] + tag


def holder(who: str) -> str:
    """An actor's name as the columns that keep one hold it. A token holder's name too wide is refused
    when the tokens are read (server/auth.py); a name from elsewhere (an e-mail from single sign-on, this
    machine's user@host, a schedule's) is kept cut with the mark: shortened visibly, never silently."""
    return cut(who, HOLDER)

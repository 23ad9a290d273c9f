"""JSON and JSON Lines documents as the importers read them.

One place decides whether bytes are one JSON document or JSON Lines, and turns a
decode failure (a truncated file, a stray character) into a `BadRecord` naming the
line and column, so every importer refuses a broken file the same clear way. It also
holds the cheap key sniffing that `detect` uses on a file's first bytes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

import orjson

from .reader import BadRecord, DocumentError


def _decode_error(filename: str, exc: orjson.JSONDecodeError, line_offset: int = 0) -> BadRecord:
    return BadRecord(f"{filename}:{exc.lineno + line_offset}:{exc.colno}", f"invalid JSON ({exc.msg}); is the file truncated?")


def load_json(data: bytes, filename: str) -> Any:
    """One JSON document, or DocumentError naming the line and column where it breaks."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DocumentError(_decode_error(filename, exc)) from None


def json_lines(data: bytes, filename: str) -> Iterator[tuple[int, Any] | BadRecord]:
    """(line number, object) for each non-blank line; a BadRecord for a line that is not JSON."""
    loads = orjson.loads
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line or line.isspace():  # (strip() copied every line only to test it)
            continue
        try:
            yield number, loads(line)
        except orjson.JSONDecodeError as exc:
            yield BadRecord(f"{filename}:{number}", f"invalid JSON ({exc.msg}); is the line truncated?")


def json_objects(data: bytes, filename: str, key: str | None = None) -> Iterator[tuple[int, dict] | BadRecord]:
    """Like `json_lines`, with a BadRecord for a line that is not an object (or lacks text under `key`)."""
    for item in json_lines(data, filename):
        if isinstance(item, BadRecord):
            yield item
        elif not isinstance(item[1], dict) or key is not None and not isinstance(item[1].get(key), str):
            yield BadRecord(
                f"{filename}:{item[0]}", f"expected a JSON object with a '{key}'" if key else "expected a JSON object"
            )
        else:
            yield item


_INK = re.compile(rb"\S")


def is_json_lines(data: bytes) -> bool:
    """More than one non-blank line, the first of which is a whole JSON object by itself.

    Judged without copying the file (strip and partition copied all of it, twice, per look)."""
    start = ink.start() if (ink := _INK.search(data)) else len(data)
    newline = data.find(b"\n", start)
    if newline < 0 or _INK.search(data, newline + 1) is None:
        return False
    first = data[start:newline].rstrip()
    if not first.endswith(b"}"):
        return False
    try:
        return isinstance(orjson.loads(first), dict)
    except orjson.JSONDecodeError:
        return False


@functools.lru_cache(maxsize=256)
def _key_pattern(key: str, value: str | None) -> re.Pattern[bytes]:
    pattern = rb'"' + re.escape(key.encode()) + rb'"\s*:'
    if value is not None:
        pattern += rb'\s*"' + re.escape(value.encode()) + rb'"'
    return re.compile(pattern)


def has_key(head: bytes, key: str, value: str | None = None) -> bool:
    """Whether `"key":` (or `"key": "value"`) occurs in the first bytes of a file."""
    return _key_pattern(key, value).search(head) is not None


def first_record(head: bytes) -> Any:
    """The first line as JSON when it is a whole JSON value by itself (JSON Lines), else None."""
    line = head.lstrip().split(b"\n", 1)[0]
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None


def starts_json(head: bytes) -> bool:
    return head.lstrip()[:1] in (b"{", b"[")


def parse_arguments(raw: Any) -> Any:
    """Tool arguments: JSON text decoded when it is JSON, otherwise kept as given."""
    if isinstance(raw, str):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
    return raw


def as_object(value: Any) -> dict:
    """`value` when it is a JSON object, else an empty one: for reading optional nested objects."""
    return value if isinstance(value, dict) else {}


def as_array(value: Any) -> list:
    """`value` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []

"""What a file looks like, said in a sentence, and how many records its container holds.

A refusal that only lists the known formats leaves a person guessing; one that says "JSON
list of 4 objects with keys id, timestamp, source, action…" or "ZIP archive holding
header.json, samples/…" tells them what they have. The same look at the container gives the
default record count of the import's accounting: a JSONL line, an item of a top-level JSON
list, one JSON object (a reader whose record is something else says so with `Records`).
"""

from __future__ import annotations

import functools
import io
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from .jsondoc import is_json_lines
from .reader import DISCRIMINATORS

SHOWN = 4  # keys, values or members named before "…"
NOT_JSON = "text that starts like JSON but is not valid JSON"


@dataclass(frozen=True)
class Shape:
    """The container of a file: its kind, its record count and unit, and a sentence about it.

    The sentence is needed only when a file is refused, and saying what every line of a big
    JSONL file holds cost as much as reading it: `said` may be a function, called when asked.
    A JSON list is parsed only when something about it is asked (most readers of lists count their own
    records, and the reader parses the file anyway): see `_ListShape`."""

    kind: str  # jsonl, json-list, json-object (any `{` start), zip, yaml, markdown, text, binary, empty
    records: int
    unit: str
    said: str | Callable[[], str]

    @property
    def text(self) -> str:
        return self.said() if callable(self.said) else self.said


class _ListShape(Shape):
    """A file that starts with `[`: parsed when first asked about."""

    def __init__(self, data: bytes):
        object.__setattr__(self, "_data", data)

    @functools.cached_property
    def _look(self) -> Shape:
        try:
            doc = orjson.loads(self._data)  # type: ignore[attr-defined]
        except orjson.JSONDecodeError:
            return Shape("text", 1, "document", NOT_JSON)
        return Shape("json-list", len(doc), "list items", lambda: _list_phrase(doc))  # valid JSON after `[` is a list

    kind = property(lambda self: self._look.kind)
    records = property(lambda self: self._look.records)
    unit = property(lambda self: self._look.unit)
    said = property(lambda self: self._look.said)


def _names(items, limit: int = SHOWN) -> str:
    items = list(items)
    return ", ".join(str(i) for i in items[:limit]) + ("…" if len(items) > limit else "")


def _keys(objects: list[dict]) -> list[str]:
    seen: dict[str, None] = {}
    for obj in objects:
        for key in obj:
            seen.setdefault(key)
    return list(seen)


def _discriminated(objects: list[dict]) -> str | None:
    """`whose `type` is user/assistant/progress…` when every object carries one such key."""
    for key in DISCRIMINATORS:
        values = [v for o in objects if isinstance(v := o.get(key), str)]
        if objects and len(values) == len(objects):
            common = [v for v, _ in Counter(values).most_common()]
            return f"whose `{key}` is " + "/".join(common[:SHOWN]) + ("…" if len(common) > SHOWN else "")
    return None


def _objects_phrase(objects: list, noun: str) -> str:
    dicts = [o for o in objects if isinstance(o, dict)]
    if len(dicts) < len(objects):
        kinds = Counter(type(o).__name__ for o in objects)
        return f"{noun} of " + ", ".join(f"{n} {k}" for k, n in kinds.most_common())
    how = _discriminated(dicts)
    if how:
        return f"{noun} {how} (keys {_names(_keys(dicts))})"
    return f"{noun} with keys {_names(_keys(dicts))}"


def _jsonl_phrase(lines: list[bytes]) -> str:
    objects, broken = [], 0
    for line in lines:
        try:
            objects.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            broken += 1
    return _objects_phrase(objects, f"JSONL of {len(lines)} lines") + (f", {broken} of them not JSON" if broken else "")


def _list_phrase(doc: list) -> str:
    return (
        _objects_phrase(doc, f"JSON list of {len(doc)} items")
        .replace(f"list of {len(doc)} items whose", f"list of {len(doc)} objects whose")
        .replace(f"list of {len(doc)} items with", f"list of {len(doc)} objects with")
    )


def _document_phrase(data: bytes) -> str:
    try:
        return f"JSON object with keys {_names(orjson.loads(data))}"  # valid JSON that starts with `{` is an object
    except orjson.JSONDecodeError:
        return NOT_JSON


def shape_of(data: bytes) -> Shape:
    stripped = data[:4096].lstrip() or data.lstrip()  # the start tells the container (no copy of a big file)
    if not stripped:
        return Shape("empty", 0, "records", "an empty file")
    if data[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                names = zf.namelist()
        except (zipfile.BadZipFile, OSError, ValueError, EOFError):
            return Shape("binary", 1, "archive", f"a damaged ZIP archive of {len(data)} bytes")
        tops = list(dict.fromkeys(n.split("/", 1)[0] + ("/" if "/" in n else "") for n in names))
        return Shape("zip", len(names), "archive members", f"ZIP archive holding {_names(tops)}")
    if is_json_lines(data):
        records = [line for line in data.split(b"\n") if line and not line.isspace()]
        return Shape("jsonl", len(records), "lines", lambda: _jsonl_phrase(records))
    if stripped[:1] == b"{":  # one document, valid or not: parsed only to be described (the reader parses it anyway)
        return Shape("json-object", 1, "document", lambda: _document_phrase(data))
    if stripped[:1] == b"[":
        return _ListShape(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Shape("binary", 1, "document", f"binary data of {len(data)} bytes")
    if "\x00" in text:
        return Shape("binary", 1, "document", f"binary data of {len(data)} bytes")
    lines = text.splitlines()
    if stripped.startswith(b"interactions:") or stripped.startswith(b"---"):
        return Shape("yaml", 1, "document", f"YAML text of {len(lines)} lines")
    if any(line.startswith(("# ", "## ", "```", "- [", "* ")) for line in lines[:200]):
        return Shape("markdown", len(lines), "lines", "markdown text")
    return Shape("text", len(lines), "lines", f"plain text of {len(lines)} lines")


def describe(data: bytes) -> str:
    """One phrase for a refusal: what the file looked like."""
    return shape_of(data).text

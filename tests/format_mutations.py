"""Shared hypothesis strategies for the readers' bad-input tests: truncate, reorder, type-confuse.

A reader given a mutated real file must answer with events or clean `BadRecord`s naming the
file (and line, path or ZIP member), never raise.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from replay_core.ingest.formats import BadRecord
from replay_core.ingest.pipeline import read_events

CONFUSERS = [None, 0, -1, 1.5, True, "", "x", [], {}, [1, "a"], {"a": None}]


def confuse(doc: Any, draw) -> Any:
    """The document with one value, picked by a random walk, replaced by one of another type."""
    path: list = []
    node = doc
    while isinstance(node, dict | list) and node and draw(st.integers(0, 4)) > 0:
        key = draw(st.sampled_from(list(node) if isinstance(node, dict) else list(range(len(node)))))
        path.append(key)
        node = node[key]
    replacement = draw(st.sampled_from([c for c in CONFUSERS if type(c) is not type(node)]))
    if not path:
        return replacement
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = replacement
    return doc


def reorder(items: list, draw) -> list:
    return draw(st.permutations(items)) if items else items


def check_clean(data: bytes, filename: str, fmt: str) -> None:
    """Read mutated bytes with a forced format: no exception, every refusal one line naming the file."""
    events, bad, used = read_events(data, filename, fmt)
    assert used == fmt
    for record in bad:
        assert isinstance(record, BadRecord)
        assert record.where.startswith(filename), record
        assert "\n" not in str(record), record


@st.composite
def byte_mutated(draw, data: bytes) -> bytes:
    """The file's bytes with one byte-level damage: a byte flipped, a run deleted or inserted, the end
    cut off. Works on any file (YAML, ZIP archives, gzip members, protobuf), not only decoded JSON."""
    kind = draw(st.sampled_from(["flip", "delete", "insert", "truncate"]))
    at = draw(st.integers(0, max(0, len(data) - 1)))
    if kind == "flip" and data:
        return data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
    if kind == "delete":
        return data[:at] + data[at + draw(st.integers(1, 64)) :]
    if kind == "insert":
        return data[:at] + draw(st.binary(min_size=1, max_size=16)) + data[at:]
    return data[:at]

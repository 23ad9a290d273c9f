"""VCR cassettes: recorded HTTP exchanges with a model provider, as test suites keep them.

A cassette is YAML with `interactions: [{request, response}]`. Bodies are JSON text,
or `!!binary` base64 of gzip-compressed JSON (`Content-Encoding: gzip`); the time of
an exchange is only in the response's `Date` header. This module opens all of that
into plain request/response bodies for the chat importers.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

import orjson
import yaml

from ..unpack import UnpackedTooLarge, Unpacker
from .jsondoc import DocumentError
from .reader import BadRecord

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass
class Interaction:
    """One recorded request and its response, bodies decoded when they are JSON."""

    index: int
    uri: str
    request: Any
    response: Any
    status: int | None
    date: datetime | None
    where: str


def is_cassette(head: bytes, path_fragment: bytes) -> bool:
    """A YAML cassette whose requests go to a URI containing `path_fragment`."""
    return head.lstrip().startswith(b"interactions:") and path_fragment in head


def _body(raw: Any, unpacker: Unpacker) -> Any:
    if isinstance(raw, dict):
        raw = raw.get("string")
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = raw.encode()
    if raw[:2] == b"\x1f\x8b":
        raw = unpacker.gunzip(raw)  # under the file's unpack cap: a small cassette may hold a gzip bomb
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw.decode("utf-8", "replace")


def _header(headers: Any, name: str) -> str | None:
    for key, value in (headers or {}).items():
        if key.lower() == name:
            return value[0] if isinstance(value, list) and value else value
    return None


def read_cassette(data: bytes, filename: str) -> list[Interaction]:
    """The interactions of a cassette, or DocumentError naming the line where it breaks."""
    try:
        doc = yaml.load(data, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else "?"
        raise DocumentError(BadRecord(f"{filename}:{line}", f"invalid YAML ({exc.problem}); is the file truncated?")) from None
    except yaml.reader.ReaderError as exc:  # a byte YAML does not allow (invalid UTF-8, a control character)
        line = data.decode("utf-8", "replace")[: exc.position].count("\n") + 1
        record = BadRecord(f"{filename}:{line}", f"invalid YAML ({exc.reason}, at character {exc.position})")
        raise DocumentError(record) from None
    except yaml.YAMLError as exc:
        raise DocumentError(BadRecord(filename, f"invalid YAML ({str(exc).splitlines()[0][:200]})")) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("interactions"), list):
        raise DocumentError(BadRecord(filename, "interactions: expected a list of recorded requests"))
    out, unpacker = [], Unpacker()
    for i, item in enumerate(doc["interactions"]):
        where = f"{filename}:interactions[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("request"), dict):
            raise DocumentError(BadRecord(where, "expected {request, response}"))
        request, response = item["request"], item.get("response") or {}
        try:
            req_body, resp_body = _body(request.get("body"), unpacker), _body(response.get("body"), unpacker)
        except (OSError, EOFError, zlib.error, UnpackedTooLarge) as exc:
            raise DocumentError(BadRecord(where, f"response body: cannot gunzip ({exc})")) from None
        date = _header(response.get("headers"), "date")
        try:
            when = parsedate_to_datetime(date) if date else None
        except (TypeError, ValueError):
            when = None
        status = (response.get("status") or {}).get("code")
        out.append(Interaction(i, str(request.get("uri") or ""), req_body, resp_body, status, when, where))
    return out

"""Small decoders of span fields, shared by every container: times, ids, status and kind.

Each takes what any writer puts there (OTLP's decimal nanoseconds or an SDK's ISO text, hex or
base64 ids, enum numbers or names) and returns one spelling.
"""

from __future__ import annotations

import base64
import binascii
import re
from datetime import UTC, datetime, timedelta
from typing import Any

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
KINDS = ("unspecified", "internal", "server", "client", "producer", "consumer")
_HEX = re.compile(r"^(0x)?[0-9a-fA-F]+$")
_HEX_DIGITS = "0123456789abcdef"


def to_ns(value: Any) -> int | None:
    """Epoch nanoseconds from an epoch number (ns as OTLP writes it; µs, ms or s told by size) or ISO-8601 text."""
    if value.__class__ is str and value.isdigit():  # the common case, OTLP/JSON's decimal nanoseconds
        number = int(value)
        if number >= 10**17:
            return number
    elif value.__class__ is str and "T" in value:  # ISO-8601 text with its offset, as most span exports write times
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            pass  # spaces around it, or not ISO: read below
        else:
            if parsed.tzinfo is not None:
                return (parsed - EPOCH) // _MICROSECOND * 1000
    if value is None or value == "" or isinstance(value, bool):
        return None
    text = str(value).strip()
    if isinstance(value, int | float) or text.isdigit():
        number = int(text) if text.isdigit() else value
        for limit, scale in ((1e17, 1), (1e14, 1_000), (1e11, 1_000_000)):
            if number >= limit:
                return int(number * scale)
        return int(number * 1_000_000_000) or None
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    parsed = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return (parsed - EPOCH) // _MICROSECOND * 1000


def ns_time(ns: int | None) -> datetime | None:
    return None if ns is None else EPOCH + _MICROSECOND * (ns // 1000)  # a product: no arguments parsed, as a call has


def time_ns(value: datetime) -> int:
    return (value - EPOCH) // _MICROSECOND * 1000


def span_hex(value: Any, size: int) -> str | None:
    """An id as lowercase hex: from hex (optionally 0x…), base64 (protobuf's JSON) or a decimal integer."""
    if value.__class__ is str and len(value) == size * 2:  # the common case: hex
        low = value.lower()
        if not low.strip(_HEX_DIGITS):  # every character a hex digit (strip leaves any other)
            return low
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:0{size * 2}x}" if value else None
    text = str(value).strip()
    if len(text) == size * 2 and _HEX.match(text):
        return text.lower()
    if text.lower().startswith("0x") and _HEX.match(text):
        number = int(text, 16)
        return f"{number:0{size * 2}x}" if number else None
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) == size:
        return raw.hex() if any(raw) else None
    if text.isdigit():
        return f"{int(text):0{size * 2}x}"
    raise ValueError(f"not a {size}-byte id (hex, base64 or integer): {text[:60]!r}")


_STATUS_NAMES = {
    **{name: name.lower() for name in ("UNSET", "OK", "ERROR")},
    **{f"STATUS_CODE_{name}": name.lower() for name in ("UNSET", "OK", "ERROR")},
}


def status_of(value: Any) -> str:
    named = _STATUS_NAMES.get(value) if value.__class__ is str else None  # the usual spellings, looked up at once
    if named is not None:
        return named
    text = str(value if value is not None else "").lower()
    if text in ("2", "error") or text.endswith("error"):
        return "error"
    if text in ("1", "ok") or text.endswith("ok"):
        return "ok"
    return "unset"


def kind_of(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, int):
        return KINDS[value] if 0 <= value < len(KINDS) else str(value)
    return str(value).lower().rsplit(".", 1)[-1].removeprefix("span_kind_")


def safe_ints(value: Any) -> Any:
    """Integers too big for a 64-bit JSON column become text."""
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
        return str(value)
    if isinstance(value, list):
        return [safe_ints(v) for v in value]
    if isinstance(value, dict):
        return {k: safe_ints(v) for k, v in value.items()}
    return value

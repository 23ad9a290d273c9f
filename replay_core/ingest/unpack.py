"""Decompression counted as it streams: a few KB of zip, zstd or gzip can unpack to gigabytes, and the
size an archive declares is the attacker's to write. Every reader that unpacks (an inspect_ai `.eval`'s
members, a cassette's gzip bodies) reads through `Unpacker`, which stops at the cap it was given,
whatever any header says: AGENT_REPLAY_MAX_UNPACKED_MB (default 64) bytes per file, all members counted."""

from __future__ import annotations

import os
import zlib
from typing import Protocol

CHUNK = 1 << 20


def max_unpacked_bytes() -> int:
    """The cap on the bytes one file may unpack to: AGENT_REPLAY_MAX_UNPACKED_MB megabytes (default 64)."""
    return int(float(os.environ.get("AGENT_REPLAY_MAX_UNPACKED_MB", "64")) * 1024 * 1024)


class UnpackedTooLarge(ValueError):
    """A file whose content unpacks past the cap (a decompression bomb, or a file to import with a higher cap)."""


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class Unpacker:
    """Bytes left to unpack for one file; each read takes from them, a chunk at a time."""

    def __init__(self, cap: int | None = None):
        self.cap = max_unpacked_bytes() if cap is None else cap
        self.left = self.cap

    def _take(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise UnpackedTooLarge(
                f"unpacks to more than {self.cap / 1024 / 1024:g} MB (AGENT_REPLAY_MAX_UNPACKED_MB): not read further"
            )

    def read(self, stream: _Readable) -> bytes:
        """Everything a decompressing stream gives, a chunk at a time (no buffer sized from a header)."""
        parts = []
        while chunk := stream.read(min(CHUNK, self.left + 1)):
            self._take(len(chunk))
            parts.append(chunk)
        return b"".join(parts)

    def gunzip(self, data: bytes) -> bytes:
        """A gzip stream (concatenated members too), unpacked under the cap."""
        parts, rest = [], data
        while rest:
            unpacker = zlib.decompressobj(wbits=31)
            pending = rest
            while pending:
                chunk = unpacker.decompress(pending, min(CHUNK, self.left + 1))
                self._take(len(chunk))
                parts.append(chunk)
                pending = unpacker.unconsumed_tail
                if unpacker.eof:
                    break
            if not unpacker.eof:
                raise zlib.error("the gzip stream is cut short")
            rest = unpacker.unused_data
        return b"".join(parts)

"""Checking an image before it is kept: its real type from its bytes, its size, that it decodes.

A screenshot from a trace is untrusted: the declared media type may be wrong, the bytes may be
truncated, or the image may be a decompression bomb. Each is refused with a reason, so the
step itself can still be kept and the refusal shown beside it.

Memory: a 150 KB PNG may decode to 160 MB of pixels. The size is read from the header before
anything is decoded (AGENT_REPLAY_MAX_IMAGE_PIXELS, default 40,000,000, refuses larger), and every
decode in the process (uploads, imports, video frames) first takes what it will hold from one
shared budget, AGENT_REPLAY_DECODE_BUDGET_MB (default 256): eight bombs at once decode one or two
at a time, not all together. The thumbnail is sampled down before anything else is made of the
image, so no second full-size copy is.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, UnidentifiedImageError

MAX_BYTES = 10 * 1024 * 1024  # a full-page PNG of a busy page is 1-3 MB
THUMB_WIDTH = 240
_PIXEL_BYTES = {"1": 1, "L": 1, "P": 1, "I;16": 2, "I;16B": 2, "I;16L": 2}  # Pillow holds 4 bytes a pixel in the rest
WAIT_S = 120.0  # how long a decode waits for the budget before the image is refused
KINDS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


class MediaError(ValueError):
    """An image that cannot be kept, with the reason in words."""


def max_pixels() -> int:
    """The most pixels an image may have: AGENT_REPLAY_MAX_IMAGE_PIXELS (default 40,000,000: 8K × 5K)."""
    return int(os.environ.get("AGENT_REPLAY_MAX_IMAGE_PIXELS", "40000000"))


class DecodeBudget:
    """Bytes of decoded pixels the process holds at once, shared by every decode; a decode waits its turn."""

    def __init__(self, limit: int):
        self.limit, self.used = limit, 0
        self._turn = threading.Condition()

    @contextmanager
    def hold(self, nbytes: int, what: str) -> Iterator[None]:
        if nbytes > self.limit:
            raise MediaError(f"{what} would decode to {nbytes:,} bytes, over the {self.limit:,}-byte decode budget")
        with self._turn:
            if not self._turn.wait_for(lambda: self.used + nbytes <= self.limit, WAIT_S):
                raise MediaError(f"{what}: the server is decoding other images; not kept, send it again")
            self.used += nbytes
        try:
            yield
        finally:
            with self._turn:
                self.used -= nbytes
                self._turn.notify_all()


# Pillow holds an image in blocks (16 MB by default). glibc serves a freed block's size from its heap
# afterwards (its mmap threshold rises to the largest block freed, up to 32 MB), and a thread's heap keeps
# what it freed: eight decodes on eight threads left ~800 MB resident after the budget was given back.
# In one block per image, any image over 32 MB is mapped and unmapped whole: what a decode frees leaves.
Image.core.set_block_size(1 << 30)

_BUDGET: DecodeBudget | None = None
_BUDGET_LOCK = threading.Lock()


def decode_budget() -> DecodeBudget:
    """The process's budget: AGENT_REPLAY_DECODE_BUDGET_MB megabytes (default 256), read on first use."""
    global _BUDGET
    with _BUDGET_LOCK:
        if _BUDGET is None:
            _BUDGET = DecodeBudget(int(float(os.environ.get("AGENT_REPLAY_DECODE_BUDGET_MB", "256")) * 1024 * 1024))
        return _BUDGET


def decoding(img: Image.Image, *, rgb_copy: bool = False):
    """Hold the budget for decoding an opened (not yet decoded) image, and for a full-size RGB copy of it."""
    width, height = img.size
    per_pixel = _PIXEL_BYTES.get(img.mode, 4) + (4 if rgb_copy else 0)
    return decode_budget().hold(width * height * per_pixel, f"image of {width}×{height} pixels")


@dataclass(frozen=True)
class CheckedImage:
    data: bytes
    sha256: str
    mime_type: str
    width: int
    height: int
    thumbnail: bytes = field(repr=False)  # made from the decoding that checked it: decoding again cost as much

    def blob(self) -> dict:
        """The `media_blobs` row, thumbnail included."""
        return {
            "mime_type": self.mime_type,
            "size": len(self.data),
            "width": self.width,
            "height": self.height,
            "data": self.data,
            "thumbnail": self.thumbnail,
        }


def check(data: bytes, declared: str | None = None, *, max_bytes: int = MAX_BYTES) -> CheckedImage:
    """The image, or MediaError: empty, too large, not an image, another type than declared, or broken."""
    if not data:
        raise MediaError("empty image")
    if len(data) > max_bytes:
        raise MediaError(f"image of {len(data):,} bytes is over the {max_bytes:,}-byte cap")
    try:
        with Image.open(io.BytesIO(data)) as img:  # reads the header only
            kind, (width, height) = img.format, img.size
            cap = max_pixels()
            if width * height > cap:
                raise MediaError(f"image of {width}×{height} pixels is over the {cap:,}-pixel cap")
            with decoding(img):
                try:
                    img.load()  # decodes every byte: a truncated file fails here, not later in a view
                    small = thumbnail(img)
                finally:
                    img.close()  # its pixels freed before the budget is given back
    except MediaError:
        raise
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        raise MediaError(f"not a readable image ({type(exc).__name__}: {str(exc)[:120]})") from None
    mime = KINDS.get(kind or "")
    if mime is None:
        raise MediaError(f"image type {kind} is not kept (PNG, JPEG, GIF and WebP are)")
    if declared and declared.lower().split(";")[0].strip() not in (mime, "image/jpg" if mime == "image/jpeg" else mime):
        raise MediaError(f"declared as {declared} but the bytes are {mime}")
    return CheckedImage(data, hashlib.sha256(data).hexdigest(), mime, width, height, small)


def as_bytes(source) -> tuple[bytes, str | None]:
    """Bytes of an image given as bytes, a path, or a PIL image (saved as PNG), with its declared type."""
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source), None
    if isinstance(source, Image.Image):
        buf = io.BytesIO()
        source.save(buf, format="PNG")
        return buf.getvalue(), "image/png"
    if isinstance(source, str | Path):
        return Path(source).read_bytes(), None
    raise TypeError(f"a screenshot is bytes, a path or a PIL image, not {type(source).__name__}")


def thumbnail(img: Image.Image, width: int = THUMB_WIDTH) -> bytes:
    """A decoded image as a small JPEG (the filmstrip's). A big one is first sampled down to four times the
    thumbnail's width (nearest pixels: averaging, or converting first, makes a second full-size copy, and
    Pillow's alpha handling one more), then scaled with antialiasing from there."""
    factor = img.width // (width * 4)
    small = img
    if factor > 1:
        small = img.resize((max(1, img.width // factor), max(1, img.height // factor)), Image.Resampling.NEAREST)
    small = small.convert("RGB")
    small.thumbnail((width, width * 4))
    buf = io.BytesIO()
    small.save(buf, format="JPEG", quality=70)
    return buf.getvalue()


def check_target(target) -> dict | None:
    """Where the step acted: {"x", "y"} (a click) or {"box": [x, y, w, h]} (an element), in image pixels."""
    if target is None:
        return None
    if isinstance(target, list | tuple) and len(target) in (2, 4):
        target = {"x": target[0], "y": target[1]} if len(target) == 2 else {"box": list(target)}
    if not isinstance(target, dict):
        raise MediaError("target is a click point {x, y} or a box {box: [x, y, w, h]}")
    given = [target.get("x"), target.get("y")] if "box" not in target else list(target.get("box") or [])
    numbers = [v for v in given if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(numbers) not in (2, 4) or len(numbers) < len(given):
        raise MediaError("target is a click point {x, y} or a box {box: [x, y, w, h]} of numbers")
    return {"x": float(numbers[0]), "y": float(numbers[1])} if "box" not in target else {"box": [float(v) for v in numbers]}

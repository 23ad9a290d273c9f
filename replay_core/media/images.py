"""Checking an image before it is kept: its real type from its bytes, its size, that it decodes.

A screenshot from a trace is untrusted: the declared media type may be wrong, the bytes may be
truncated, or the image may be a decompression bomb. Each is refused with a reason, so the
step itself can still be kept and the refusal shown beside it.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, UnidentifiedImageError

MAX_BYTES = 10 * 1024 * 1024  # a full-page PNG of a busy page is 1-3 MB
MAX_PIXELS = 40_000_000  # 8K × 5K; beyond this Pillow's own bomb check would warn
THUMB_WIDTH = 240
KINDS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


class MediaError(ValueError):
    """An image that cannot be kept, with the reason in words."""


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
        with Image.open(io.BytesIO(data)) as img:
            kind, (width, height) = img.format, img.size
            if width * height > MAX_PIXELS:
                raise MediaError(f"image of {width}×{height} pixels is over the {MAX_PIXELS:,}-pixel cap")
            img.load()  # decodes every byte: a truncated file fails here, not later in a view
            small = thumbnail(img)
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
    """A decoded image as a small JPEG (the filmstrip's)."""
    small = img.convert("RGB")
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

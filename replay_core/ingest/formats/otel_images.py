"""Images inside the chat messages of OTLP spans: taken out of a step's context into its attachments, so a
context holds no megabytes of base64 and each image is stored (and shown) once."""

from __future__ import annotations

import re
from typing import Any

_DATA_URL = re.compile(r"data:(image/[\w.+-]+);base64,", re.IGNORECASE)


def take_images(messages: Any, where: str) -> list[dict]:
    """Images inside chat messages, for the step's attachments (the media path checks and keeps them).

    GenAI message parts `{"type": "blob", "modality": "image", "mime_type", "content": base64}` (and
    `"image"` parts written the same way), `{"type": "uri", "modality": "image", "uri"}`, and OpenAI
    content parts `{"type": "image_url", "image_url": {"url": "data:image/png;base64,…"}}`. Inline
    bytes leave the message, which keeps the part with `"attachment": name` in their place, so a
    context holds no megabytes of base64 and the image is stored (and shown) once. A URL is kept as a
    reference, never fetched. `where` names the images (`input.1`: the first in the input)."""
    found: list[dict] = []

    def visit(part: Any) -> None:
        if not isinstance(part, dict):
            return
        kind = part.get("type")
        mime = part.get("mime_type") or part.get("mimeType")
        is_image = part.get("modality") == "image" or (isinstance(mime, str) and mime.startswith("image/"))
        if kind in ("blob", "image") and (is_image or kind == "image") and isinstance(part.get("content"), str):
            name = f"{where}.{len(found) + 1}"
            found.append({"media_type": mime if isinstance(mime, str) else None, "data": part.pop("content"), "name": name})
            part["attachment"] = name
        elif kind in ("uri", "image") and is_image and isinstance(part.get("uri"), str):
            found.append({"url": part["uri"]})
        elif kind == "image_url":
            holder = part.get("image_url")
            url = holder.get("url") if isinstance(holder, dict) else holder
            if not isinstance(url, str):
                return
            inline = _DATA_URL.match(url)
            if inline is None:
                found.append({"url": url})
                return
            name = f"{where}.{len(found) + 1}"
            found.append({"media_type": inline.group(1).lower(), "data": url[inline.end() :], "name": name})
            part["image_url"] = {"attachment": name}

    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        for key in ("parts", "content"):
            parts = message.get(key)
            for part in parts if isinstance(parts, list) else []:
                visit(part)
    return found

"""Attaching a screenshot to a step: checked, stored once per content hash, thumbnailed once."""

from __future__ import annotations

from ..storage.store import Store
from .images import CheckedImage, MediaError, as_bytes, check, check_target

__all__ = ["MediaError", "attach_image", "screenshots"]


def attach_image(
    store: Store,
    session_id: str,
    event_id: str | None,
    source,
    *,
    media_type: str | None = None,
    name: str | None = None,
    target=None,
) -> dict:
    """Keep one image of a step. Raises MediaError (naming the step) for anything that cannot be kept;
    nothing is stored then. The same image twice on one step is kept once."""
    where = f"session {session_id}" + (f", step {event_id}" if event_id else "")
    try:
        if isinstance(source, CheckedImage):  # checked already (an import checks each image as it reads it)
            image = source
        else:
            data, declared = as_bytes(source)
            image = check(data, media_type or declared)
        point = check_target(target)
    except (MediaError, OSError) as exc:
        raise MediaError(f"{where}: {exc}") from None
    blob = None if store.has_blob(image.sha256) else image.blob()
    attachment_id, new = store.add_media(
        session_id, event_id, blob, sha256=image.sha256, mime_type=image.mime_type, name=name, target=point
    )
    return {"id": attachment_id, "sha256": image.sha256, "new": new, "width": image.width, "height": image.height}


def screenshots(store: Store, session_id: str) -> list[dict]:
    """The session's images (descriptions, no bytes), in the order they were attached."""
    return [a for a in store.list_attachments(session_id) if (a.get("mime_type") or "").startswith("image/")]

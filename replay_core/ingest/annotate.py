"""Review notes are a way in too: a note's text and author are redacted like a step before
they are stored, and the writer's role is checked (every role may leave notes, an unknown
one may not). Pages and routes annotate through here, never through `Store.annotate`.
"""

from __future__ import annotations

from ..storage.actor import ANNOTATE, Actor
from ..storage.store import Store
from .redact import Redactor, default_redactor


def annotate(
    store: Store,
    session_id: str,
    label: str,
    text: str = "",
    *,
    event_id: str | None = None,
    author: str | None = None,
    actor: Actor | None = None,
    redactor: Redactor | None = None,
) -> int:
    """Store a verdict and note on a run (or one of its steps); returns the note's id."""
    store.authorize(actor, ANNOTATE, session_id)
    scrub = (redactor or default_redactor()).scrub
    text = scrub(text or "")[0]
    author = scrub(author)[0] if author else author
    return store.annotate(session_id, label, text, event_id=event_id, author=author)

"""Review notes are a way in too: a note's text and author are redacted like a step before
they are stored, and the writer's role is checked (every role may leave notes, an unknown
one may not). An author or step id wider than its column is refused (`TooLong`, a ValueError
naming the field) before anything is written, on SQLite as on PostgreSQL. Pages and routes
annotate through here, never through `Store.annotate`.
"""

from __future__ import annotations

from ..storage.actor import ANNOTATE, Actor
from ..storage.store import Store
from ..storage.tables import annotations as notes
from ..storage.widths import fit, width
from .redact import Redactor, default_redactor

AUTHOR_MAX = width(notes.c.author)  # the pages' name boxes stop there


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
    author = fit("author", scrub(author)[0] if author else author, notes.c.author)
    event_id = fit("event_id", event_id, notes.c.event_id)
    return store.annotate(session_id, label, text, event_id=event_id, author=author)

"""The one ingestion pipeline: validate → redact → store, for every way runs come in.

File import, the HTTP API, the SDK recorder and the litellm logger all end here, so
the rules (nothing unredacted stored, idempotent, all-or-nothing by default) hold
everywhere.
"""

from __future__ import annotations

import base64
import gc
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..events import StepEvent
from .formats import BadRecord, DocumentError, Event, Ignored, detect, get_format
from .redact import Redactor, default_redactor
from ..storage.actor import IMPORT, Actor
from ..storage.store import Store


@dataclass
class IngestReport:
    """What one ingestion did; `errors` holds refused records with where they were."""

    sessions: list[str] = field(default_factory=list)
    steps: int = 0
    duplicates: int = 0
    redacted: int = 0
    errors: list[BadRecord] = field(default_factory=list)
    files: list[dict] = field(default_factory=list)

    def add(self, other: IngestReport) -> None:
        self.sessions += [s for s in other.sessions if s not in self.sessions]
        self.steps += other.steps
        self.duplicates += other.duplicates
        self.redacted += other.redacted
        self.errors += other.errors

    def to_dict(self) -> dict:
        out = asdict(self)
        out["errors"] = [str(e) for e in self.errors]
        return out


class ImportRejected(ValueError):
    """A file with bad records, refused whole: nothing from it was stored."""

    def __init__(self, errors: list[BadRecord]):
        self.errors = errors
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(f"{errors[0]}{more}")


def ingest(
    store: Store, events: Iterable[Event], *, redactor: Redactor | None = None, source: str | None = None
) -> IngestReport:
    """Redact and store already-validated events in one transaction.

    `source` names where new sessions came from when their own events do not say.
    """
    redactor = redactor or default_redactor()
    clean: list[Event] = []
    redacted = 0
    attachments: list[tuple[str, str, dict]] = []
    for ev in events:
        if isinstance(ev, StepEvent) and ev.metadata and "attachment" in ev.metadata:
            ev = _set_aside_attachment(ev, attachments)
        before = ev.redacted if isinstance(ev, StepEvent) else 0
        ev = redactor.event(ev)
        if isinstance(ev, StepEvent):
            redacted += ev.redacted - before
        clean.append(ev)
    written = store.write(clean, default_source=source)
    _store_attachments(store, attachments)
    return IngestReport(sessions=written.sessions, steps=written.steps, duplicates=written.duplicates, redacted=redacted)


def _set_aside_attachment(step: StepEvent, pending: list[tuple[str, str, dict]]) -> StepEvent:
    """A screenshot an importer put in metadata["attachment"] goes to the attachments table, not the step row."""
    meta = dict(step.metadata)
    found = meta.pop("attachment")
    if isinstance(found, dict) and found.get("data_b64"):
        found = {**found, "data": base64.b64decode(found["data_b64"])}
        pending.append((step.session_id, step.identity(), found))
    return step.model_copy(update={"metadata": meta or None})


def _store_attachments(store: Store, pending: list[tuple[str, str, dict]]) -> None:
    """Add set-aside attachments once: a re-import does not add the same (step, name) again."""
    known: dict[str, set] = {}
    for sid, event_id, found in pending:
        have = known.setdefault(sid, {(a["event_id"], a["name"]) for a in store.list_attachments(sid)})
        if (event_id, found.get("name")) in have:
            continue
        store.add_attachment(sid, found["data"], event_id=event_id, name=found.get("name"), mime_type=found.get("mime_type"))
        have.add((event_id, found.get("name")))


PROGRESS_EVERY = 5000


def read_events(
    data: bytes, filename: str, fmt: str = "auto", *, progress: Callable[[int], None] | None = None,
    ignored: Counter | None = None,
) -> tuple[list[Event], list[BadRecord], str]:
    """Parse a whole file: its events, its bad records, and the format used.

    `progress`, when given, is told how many records were read, every few thousand;
    `ignored`, when given, counts by kind the records the reader chose not to use.
    """
    reader = detect(data, filename) if fmt == "auto" else get_format(fmt)
    events: list[Event] = []
    bad: list[BadRecord] = []
    skipped = ignored if ignored is not None else Counter()
    try:
        for n, item in enumerate(reader.read(data, filename), start=1):
            if isinstance(item, Ignored):
                skipped[item.kind] += 1
            else:
                (bad if isinstance(item, BadRecord) else events).append(item)
            if progress and n % PROGRESS_EVERY == 0:
                progress(n)
    except DocumentError as exc:  # the file cannot be read at all
        bad.append(exc.record)
    return events, bad, reader.name


def import_bytes(
    store: Store,
    data: bytes,
    filename: str,
    *,
    fmt: str = "auto",
    skip_bad: bool = False,
    redactor: Redactor | None = None,
    progress: Callable[[int], None] | None = None,
    actor: Actor | None = None,
) -> IngestReport:
    """Import one file's content. Bad records refuse the file whole unless `skip_bad`.
    Editors only (`actor`, default the local user); every import is in the audit log."""
    actor = store.authorize(actor, IMPORT, filename)
    ignored: Counter = Counter()
    with _collector_paused():
        events, bad, used = read_events(data, filename, fmt, progress=progress, ignored=ignored)
        if bad and not skip_bad:
            store.record_audit(actor, IMPORT, outcome="refused", target=filename, detail={"bad_records": len(bad)})
            raise ImportRejected(bad)
        report = ingest(store, events, redactor=redactor, source=used)
    store.record_audit(actor, IMPORT, target=filename, detail={
        "format": used, "sessions": len(report.sessions), "steps": report.steps, "skipped_bad": len(bad)})
    report.errors = bad
    report.files = [{"file": filename, "format": used, "sessions": len(report.sessions), "steps": report.steps,
                     "ignored": dict(ignored)}]
    return report


@contextmanager
def _collector_paused():
    """Python's cyclic GC, triggered over and over by the hundreds of thousands of objects
    a big file becomes, took half the parse time; nothing made here is cyclic garbage."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def import_file(store: Store, path: str | Path, **kwargs) -> IngestReport:
    path = Path(path)
    return import_bytes(store, path.read_bytes(), str(path), **kwargs)

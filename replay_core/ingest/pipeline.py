"""The one ingestion pipeline: validate → redact → store, for every way runs come in.

File import, the HTTP API, the SDK recorder and the litellm logger all end here, so
the rules (nothing unredacted stored, idempotent, all-or-nothing by default) hold
everywhere.
"""

from __future__ import annotations

import base64
import gc
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..events import AttachmentEvent, SessionEndEvent, SessionEvent, SessionStatus, StepEvent
from ..media.attachments import attach_image
from ..media.images import CheckedImage, MediaError, check, check_target
from ..storage.actor import IMPORT, REPLACE, Actor
from ..storage.store import StepRow, Store
from ..storage.tables import attachments as attachment_rows
from ..storage.tables import sessions as session_rows
from ..storage.widths import TooLong, cut, fit, width
from . import parallel
from .accounting import NO_READER, NO_STEPS, FileAccount, account, mostly_ignored, refusal
from .formats import BadRecord, Event, UnknownFormat, candidates, get_format, native, registry
from .formats.runs import IDS_CUT
from .formats.shape import describe, shape_of
from .redact import Redactor, default_redactor
from .step_rows import CARRIERS

if TYPE_CHECKING:
    from ..storage.writing import Arrangement


@dataclass
class IngestReport:
    """What one ingestion did; `errors` holds refused records with where they were."""

    sessions: list[str] = field(default_factory=list)
    steps: int = 0
    duplicates: int = 0
    redacted: int = 0
    errors: list[BadRecord] = field(default_factory=list)
    files: list[dict] = field(default_factory=list)  # per file: format, records, used, ignored by kind, steps…
    warnings: list[str] = field(default_factory=list)  # e.g. a forced reader that ignored most of a file
    conflicts: list[str] = field(default_factory=list)  # ended runs left as they were (no replace)
    media_refused: list[str] = field(default_factory=list)  # images not kept, each naming its step (the steps are kept)
    set_up: list[str] = field(default_factory=list)  # OTLP traces of a framework building an agent: no run of their own

    def add(self, other: IngestReport) -> None:
        self.sessions += [s for s in other.sessions if s not in self.sessions]
        self.steps += other.steps
        self.duplicates += other.duplicates
        self.redacted += other.redacted
        self.errors += other.errors
        self.media_refused += other.media_refused
        self.set_up += other.set_up
        self.files += other.files
        self.warnings += other.warnings
        self.conflicts += other.conflicts

    def to_dict(self) -> dict:
        out = asdict(self)
        out["errors"] = [str(e) for e in self.errors]
        if not self.media_refused:  # said only when there is something to say
            del out["media_refused"]
        if not self.set_up:
            del out["set_up"]
        if not self.warnings:  # said only when there is something to say (the HTTP API's answer stays as it was)
            out.pop("warnings")
        return out


class ImportRejected(ValueError):
    """A file with bad records, refused whole: nothing from it was stored."""

    def __init__(self, errors: list[BadRecord]):
        self.errors = errors
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(f"{errors[0]}{more}")


def ingest(
    store: Store,
    events: Iterable[Event],
    *,
    redactor: Redactor | None = None,
    source: str | None = None,
    replace: bool = False,
    refuse_conflicts: bool = False,
    actor: Actor | None = None,
    audit: Actor | None = None,
    arrange: Arrangement | None = None,
) -> IngestReport:
    """Redact and store already-validated events in one transaction (with `audit`: an `ingest` line of
    the audit log in that actor's name, in the same transaction: the HTTP API, per request).

    `source` names where new sessions came from when their own events do not say. An
    ended run's end, status, name and outcome change only with `replace`; otherwise a
    different value is reported in `conflicts` (or, with `refuse_conflicts`, refuses
    the batch: `Store.write`). A replace is for editors only (`actor`, default the local
    user) and goes in the audit log, naming the runs it could change.
    """
    events = list(events)
    replacer = None
    if replace:
        replacer = store.authorize(actor, REPLACE, ", ".join(sorted({ev.session_id for ev in events}))[:500] or None)
    redactor = redactor or default_redactor()
    clean: list[SessionEvent | StepEvent | SessionEndEvent | StepRow] = []
    redacted = 0
    attachments: list[tuple[str, str, dict]] = []
    refused: list[str] = []
    warnings: list[str] = []
    for ev in events:
        if isinstance(ev, StepRow):  # validated and redacted as it was made (step_row_of)
            redacted += ev.redacted
            clean.append(ev)
            continue
        if isinstance(ev, AttachmentEvent):
            _set_aside_attachment_event(ev, attachments, refused)
            continue
        if isinstance(ev, StepEvent) and ev.metadata and CARRIERS & ev.metadata.keys():
            ev = _set_aside_attachments(ev, attachments, refused)
        if isinstance(ev, SessionEvent) and ev.metadata and IDS_CUT in ev.metadata:
            warnings.append(_ids_cut(ev))
        before = ev.redacted if isinstance(ev, StepEvent) else 0
        ev = redactor.event(ev)
        if isinstance(ev, StepEvent):
            redacted += ev.redacted - before
        clean.append(ev)
    # only the HTTP routes ask for an audit line, only OTLP's receiver for an arrangement: stand-ins for the Store take neither
    audited: dict[str, Any] = {"audit": audit} if audit is not None else {}
    if arrange is not None:
        audited["arrange"] = arrange
    written = store.write(clean, default_source=source, replace=replace, refuse_conflicts=refuse_conflicts, **audited)
    _store_attachments(store, attachments, refused, redactor)
    if replacer is not None:
        store.record_audit(
            replacer,
            REPLACE,
            target=", ".join(written.sessions)[:500] or None,
            detail={"sessions": len(written.sessions), "steps": written.steps, "source": source},
        )
    return IngestReport(
        sessions=written.sessions,
        steps=written.steps,
        duplicates=written.duplicates,
        redacted=redacted,
        conflicts=written.conflicts,
        media_refused=refused,
        warnings=warnings,
    )


def _ids_cut(session: SessionEvent) -> str:
    """What the import says of a run whose user or thread id was too long for its column (formats.runs.fitted_ids)."""
    names = sorted((session.metadata or {})[IDS_CUT])
    return (
        f"run {session.session_id}: {', '.join(names)} longer than {width(session_rows.c[names[0]])} characters, "
        f"kept cut (…#hash of the whole id), whole in the run's metadata ({IDS_CUT})"
    )


def _set_aside_attachments(step: StepEvent, pending: list[tuple[str, str, dict]], refused: list[str]) -> StepEvent:
    """Images leave the step row for the media store, checked first: an image that cannot be kept is
    named in the step's metadata (`attachments_refused`) and in the report, and the step is kept."""
    meta = dict(step.metadata or {})
    items = meta.pop("attachments", None)
    one = meta.pop("attachment", None)
    items = (items if isinstance(items, list) else [items] if items is not None else []) + ([one] if one is not None else [])
    urls, reasons = [], []
    for i, item in enumerate(items):
        where = f"session {step.session_id}, step {step.seq if step.seq is not None else step.event_id}, attachment {i + 1}"
        try:
            found = _attachment_of(item)
        except MediaError as exc:
            reasons.append(f"{where}: {exc}")
            continue
        if "url" in found:
            urls.append(found["url"])  # kept as a reference; never fetched (no request leaves for a trace's URL)
        else:
            pending.append((step.session_id, step.identity(), found))
    if urls:
        meta["attachment_urls"] = urls
    if reasons:
        meta["attachments_refused"] = reasons
        refused += reasons
    return step.model_copy(update={"metadata": meta or None})


def _set_aside_attachment_event(ev: AttachmentEvent, pending: list[tuple[str, str, dict]], refused: list[str]) -> None:
    """An image sent after its step: kept when it can be, else named in the report (never half-stored)."""
    if ev.url is not None:
        refused.append(f"session {ev.session_id}, step {ev.event_id}: an attachment by URL is kept only inline in a step")
        return
    try:
        pending.append((ev.session_id, ev.event_id, _attachment_of(ev.model_dump(exclude_none=True))))
    except MediaError as exc:
        refused.append(f"session {ev.session_id}, step {ev.event_id}: {exc}")


def _attachment_of(item) -> dict:
    if not isinstance(item, dict):
        raise MediaError(f"an attachment is an object, not {type(item).__name__}")
    if isinstance(item.get("url"), str) and not (item.get("data") or item.get("data_b64")):
        return {"url": item["url"][:2000]}
    encoded = item.get("data") if item.get("data") is not None else item.get("data_b64")
    if not isinstance(encoded, str):
        raise MediaError("an attachment needs `data` (base64) or `url`")
    try:
        data = base64.b64decode(encoded)
    except (ValueError, TypeError):
        raise MediaError("`data` is not valid base64") from None
    declared = item.get("media_type") or item.get("mime_type")
    name = item.get("name")
    if not isinstance(declared, str | None) or not isinstance(name, str | None):
        raise MediaError("`media_type` and `name` are text")
    try:
        declared = fit("media_type", declared, attachment_rows.c.mime_type)
    except TooLong as exc:
        raise MediaError(str(exc)) from None
    found: dict[str, Any] = {"data": data, "media_type": declared, "name": name, "target": check_target(item.get("target"))}
    if (declared or "image/").startswith("image/"):
        found["image"] = check(data, declared)
    return found


def _store_attachments(store: Store, pending: list[tuple[str, str, dict]], refused: list[str], redactor: Redactor) -> None:
    """Images through the media store (once per hash and step); other bytes once per (step, name). An
    attachment's name and target are trace text like the step's: redacted."""
    known: dict[str, set] = {}
    runs: dict[str, bool] = {}
    for sid, event_id, found in pending:
        name = cut(redactor.scrub(found.get("name"))[0], attachment_rows.c.name)  # a trace's text: kept, cut to fit
        found = {**found, "name": name, "target": redactor.scrub(found.get("target"))[0]}
        if not runs.setdefault(sid, store.get_session(sid) is not None):
            refused.append(f"session {sid}, step {event_id}: no such run (send the run's session or steps first)")
            continue
        image: CheckedImage | None = found.get("image")
        if image is not None:
            attach_image(store, sid, event_id, image, name=found.get("name"), target=found.get("target"))
            continue
        have = known.setdefault(sid, {(a["event_id"], a["name"]) for a in store.list_attachments(sid)})
        if (event_id, found.get("name")) in have:
            continue
        store.add_attachment(sid, found["data"], event_id=event_id, name=found.get("name"), mime_type=found.get("media_type"))
        have.add((event_id, found.get("name")))


class FileRefused(UnknownFormat):
    """A file no reader accounts for well enough (or that would give no steps): nothing stored.

    The message names the readers tried, what each made of the file, and what the file looked like."""

    def __init__(self, filename: str, reason: str, tried: list[FileAccount], looks: str):
        self.filename, self.reason, self.tried, self.looks = filename, reason, tried, looks
        readers = (
            "; ".join(a.summary() for a in tried)
            if tried
            else ("none, no known format's signature is in it (known formats: " + ", ".join(registry()) + ")")
        )
        super().__init__(f"{filename}: not imported, {reason}. It looks like {looks}. Readers tried: {readers}")


def read_file(data: bytes, filename: str, fmt: str = "auto", *, progress: Callable[[int], None] | None = None) -> FileAccount:
    """The accounted reading of one file: with `fmt`, or with the reader that accounts for most of it.

    Raises FileRefused when detection finds no reader good enough (see ingest.accounting)."""
    with collector_paused():  # reading alone (detection, watch, demo) as the import reads
        return _read_file(data, filename, fmt, progress)


def _read_file(data: bytes, filename: str, fmt: str, progress: Callable[[int], None] | None) -> FileAccount:
    shape = shape_of(data)
    if fmt != "auto":
        return account(get_format(fmt), data, filename, shape, progress)
    tried: list[FileAccount] = []
    for reader in candidates(data, filename):
        tried.append(account(reader, data, filename, shape, progress))
        if tried[-1].coverage == 1.0 and tried[-1].steps and not tried[-1].bad:
            break  # every record used: no later reader can do better (ties go to the earlier one anyway)
    best = max(tried, key=lambda a: a.coverage, default=None)  # first of the best: registry order breaks ties
    if best is None:
        raise FileRefused(filename, NO_READER, tried, shape.text)
    why = refusal(best)
    if why is not None and not best.bad:  # bad records are refused by where they are
        raise FileRefused(filename, why, tried, shape.text)
    return best


def read_events(
    data: bytes,
    filename: str,
    fmt: str = "auto",
    *,
    progress: Callable[[int], None] | None = None,
    ignored: Counter | None = None,
) -> tuple[list[Event], list[BadRecord], str]:
    """Parse a whole file: its events, its bad records, and the format used.

    `progress`, when given, is told how many records were read, every few thousand;
    `ignored`, when given, counts by kind the records the reader chose not to use.
    """
    acc = read_file(data, filename, fmt, progress=progress)
    if ignored is not None:
        ignored.update(acc.ignored)
    return acc.events, acc.bad, acc.format


def ended_as_unknown(events: list[Event]) -> list[Event]:
    """A finished file's runs end: those whose source said nothing of how they ended get
    status `unknown` (ended, outcome not recorded) instead of staying `running` forever."""
    ended = {ev.session_id for ev in events if isinstance(ev, SessionEndEvent)}
    opened = dict.fromkeys(ev.session_id for ev in events)
    return events + [SessionEndEvent(session_id=sid, status=SessionStatus.UNKNOWN) for sid in opened if sid not in ended]


def import_bytes(
    store: Store,
    data: bytes,
    filename: str,
    *,
    fmt: str = "auto",
    skip_bad: bool = False,
    redactor: Redactor | None = None,
    progress: Callable[[int], None] | None = None,
    live: bool = False,
    replace: bool = False,
    actor: Actor | None = None,
) -> IngestReport:
    """Import one file's content, accounted. Bad records refuse the file whole unless `skip_bad`;
    a file no reader accounts for is refused (FileRefused). Runs of a finished file end as
    the source says, else `unknown`; `live` (a file still being written, `watch`) leaves them running.
    Editors only (`actor`, default the local user); every import is in the audit log."""
    actor = store.authorize(actor, IMPORT, filename)
    with collector_paused():
        if not live and not replace and parallel.suitable(data, fmt):
            try:
                return _import_pipelined(store, data, filename, redactor or default_redactor(), progress, actor)
            except parallel.Fallback:
                pass  # nothing was stored: the plain way reads the file and decides
        acc = read_file(data, filename, fmt, progress=progress)
        if acc.bad and not skip_bad:
            store.record_audit(actor, IMPORT, outcome="refused", target=filename, detail={"bad_records": len(acc.bad)})
            raise ImportRejected(acc.bad)
        if (acc.records or acc.bad) and acc.steps == 0 and not live:  # --skip-bad with nothing left: refused too
            why = f"nothing is left once its bad records are skipped (the first: {acc.bad[0]})" if acc.bad else NO_STEPS
            store.record_audit(actor, IMPORT, outcome="refused", target=filename, detail={"reason": why})
            raise FileRefused(filename, why, [acc], describe(data))
        ends_runs = getattr(get_format(acc.format), "ends_runs", True)
        if live and ends_runs:  # a file still being written: the Store places the steps; a reader's "ended, outcome
            # not recorded" (said at a finished file's end) is not true of it: the run stays running
            events = [
                ev.model_copy(update={"seq": None}) if isinstance(ev, StepEvent) else ev
                for ev in acc.events
                if not (isinstance(ev, SessionEndEvent) and ev.status == SessionStatus.UNKNOWN)
            ]
        else:
            events = acc.events if live or not ends_runs else ended_as_unknown(acc.events)
        report = ingest(store, events, redactor=redactor, source=acc.format, replace=replace, actor=actor)
    store.record_audit(
        actor,
        IMPORT,
        target=filename,
        detail={"format": acc.format, "sessions": len(report.sessions), "steps": report.steps, "skipped_bad": len(acc.bad)},
    )
    report.errors = acc.bad
    warning = mostly_ignored(acc)
    report.warnings += [warning] if warning else []
    report.files = [acc.to_dict() | {"sessions": len(report.sessions), "stored": report.steps, "duplicates": report.duplicates}]
    return report


def _import_pipelined(store: Store, data: bytes, filename: str, redactor: Redactor, progress, actor: Actor) -> IngestReport:
    """A clean native file stored while reader processes read it (ingest.parallel), accounted as
    the plain way accounts it: every line used, none ignored or bad."""
    written, read = parallel.write_pipelined(store, data, redactor, source=native.FORMAT.name, progress=progress)
    # the plain way's count and unit (shape_of): a file the readers took whole, every line an event, is JSON Lines
    # of `read.records` lines once it has two (formats.jsondoc.is_json_lines), so only a one-line file (a "document")
    # is looked at again: counting a big file's lines again was 6% of the writer's time, after the last batch
    records, unit = read.records, "lines"
    if records < 2:
        shape = shape_of(data)
        records, unit = shape.records, shape.unit
    acc = FileAccount(filename, native.FORMAT.name, records, unit, steps=read.steps)
    store.record_audit(
        actor,
        IMPORT,
        target=filename,
        detail={"format": acc.format, "sessions": len(written.sessions), "steps": written.steps, "skipped_bad": 0},
    )
    return IngestReport(
        sessions=written.sessions,
        steps=written.steps,
        duplicates=written.duplicates,
        redacted=read.redacted,
        conflicts=written.conflicts,
        files=[acc.to_dict() | {"sessions": len(written.sessions), "stored": written.steps, "duplicates": written.duplicates}],
    )


def files_under(paths: Iterable[str | Path]) -> Iterator[Path]:
    """The files named, and the files inside folders named (recursively, sorted, hidden ones left out)."""
    for path in map(Path, paths):
        if path.is_dir():
            for found in sorted(path.rglob("*")):
                rel = found.relative_to(path).parts
                if found.is_file() and not any(part.startswith(".") for part in rel):
                    yield found
        else:
            yield path


@contextmanager
def collector_paused():
    """Python's cyclic GC, triggered over and over by the hundreds of thousands of objects
    a big file becomes, took half the parse time; nothing made here is cyclic garbage.

    On the way out what was made meanwhile goes straight to the oldest generation (gc.freeze then
    gc.unfreeze: two list splices), so the young collection the next allocation would start does not
    walk it all (a tenth of reading a big span export); later full collections still see it."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def import_file(store: Store, path: str | Path, **kwargs) -> IngestReport:
    path = Path(path)
    return import_bytes(store, path.read_bytes(), str(path), **kwargs)

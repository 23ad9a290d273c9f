"""A big native file read in a second process while this one writes it.

Reading, validating and redacting a step cost about as much as storing it, and the machine has
two cores: a forked reader turns the file into `WriteBatch`es (rows, not event objects, which
cost more to send than to make) and this process stores each in the one transaction
(`Store.write_batches`) while the reader makes the next.

Only what gives the same result as the plain import goes this way: a file whose every line is
a valid native event, whose runs each lie in one stretch of lines (a batch ends only between
runs, so a run is never written in two parts), and without images (the media store is this
process's). Anything else (a bad line, a run that comes back later, an attachment, a refused
reference) rolls the transaction back and the file is read again the plain way, which names
the bad lines file:line and decides as it always does. Nothing is stored twice: the attempt
is one transaction.

A fork copies this process as it is, so it is used only from a process with one thread (the
CLI): a fork of a threaded server could copy a lock another thread holds.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import orjson

from ..events import EventError, parse_event
from ..storage.store import Store, WriteBatch, WriteRefused, WriteResult
from .redact import Redactor

MIN_LINES = 20_000  # under this a second process costs more than it saves
BATCH_STEPS = 4_000  # steps per batch: the pipeline's grain (a batch ends at the next run's first line)
_CARRIERS = frozenset({"attachment", "attachments"})  # as ingest.pipeline: images go to the media store


@dataclass
class Read:
    """What the reader made of the whole file."""

    records: int = 0
    steps: int = 0
    redacted: int = 0


class Fallback(Exception):
    """The file cannot take the pipelined way (the reason is for tests and logs): read it the plain way."""


def suitable(data: bytes, fmt: str, *, min_lines: int = MIN_LINES) -> bool:
    """Whether `data` may go the pipelined way: native (forced, or what detection tries first),
    big enough, and a process that can fork safely."""
    if fmt not in ("auto", "native") or threading.active_count() != 1:
        return False
    if "fork" not in multiprocessing.get_all_start_methods() or data.count(b"\n") < min_lines:
        return False
    from .formats.native import FORMAT

    return FORMAT.sniff(data[:4096], "")


def write_pipelined(store: Store, data: bytes, redactor: Redactor, *, source: str,
                    progress: Callable[[int], None] | None = None) -> tuple[WriteResult, Read]:
    """Store the file through a reader process; raises Fallback when it must be read the plain way
    (nothing is stored then)."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue(maxsize=8)
    reader = ctx.Process(target=_reader, args=(data, redactor, queue), daemon=True)
    reader.start()
    read = Read()
    try:
        written = store.write_batches(_received(queue, reader, read, progress), default_source=source)
    except WriteRefused as exc:  # e.g. a replay_of naming a run of a later batch: the plain way decides
        raise Fallback(f"refused in part: {exc}") from exc
    finally:
        if reader.is_alive():
            reader.terminate()
        reader.join()
        queue.close()
    return written, read


def _received(queue, reader, read: Read, progress) -> Iterator[WriteBatch]:
    while True:
        try:
            kind, body = queue.get(timeout=1.0)
        except Exception:  # queue.Empty: the reader may have died without a word
            if not reader.is_alive() and queue.empty():
                raise Fallback("the reader process ended without finishing") from None
            continue
        if kind == "batch":
            batch, records = body
            if progress:
                progress(records)
            yield batch
        elif kind == "done":
            read.records, read.steps, read.redacted = body
            if not read.steps:  # refused by the plain way, which says why: nothing may be committed
                raise Fallback("no steps")
            return
        else:
            raise Fallback(body)


def _reader(data: bytes, redactor: Redactor, queue) -> None:
    """The forked process: lines → validated, redacted events → batches on `queue`."""
    try:
        for message in _batches(data, redactor):
            queue.put(message)
    except Fallback as exc:
        queue.put(("fallback", str(exc)))
    except BaseException as exc:  # noqa: BLE001 - said to the parent, which reads the file the plain way
        queue.put(("fallback", f"reader failed: {type(exc).__name__}: {exc}"))
    queue.close()
    queue.join_thread()


def _batches(data: bytes, redactor: Redactor) -> Iterator[tuple[str, object]]:
    batch, in_batch, done = WriteBatch(), 0, set()
    records = steps = redacted = 0
    current = None
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        records += 1
        try:
            ev = parse_event(orjson.loads(line))
        except (orjson.JSONDecodeError, EventError):
            raise Fallback(f"line {number} is not a valid event") from None
        sid = ev.session_id
        if sid != current:
            current = sid
            if sid not in batch.order:
                if sid in done:
                    raise Fallback(f"line {number}: run {sid!r} comes back after other runs")
                if in_batch >= BATCH_STEPS:
                    done.update(batch.order)
                    yield "batch", (batch, records - 1)
                    batch, in_batch = WriteBatch(), 0
        if ev.kind == "attachment" or (ev.kind == "step" and ev.metadata and _CARRIERS & ev.metadata.keys()):
            raise Fallback(f"line {number} carries an image")
        if ev.kind == "step":
            before = ev.redacted
            ev = redactor.event(ev)
            redacted += ev.redacted - before
            in_batch += 1
            steps += 1
        else:
            ev = redactor.event(ev)
        batch.add(ev)
    if batch.order:
        yield "batch", (batch, records)
    yield "done", (records, steps, redacted)


__all__ = ["Fallback", "Read", "suitable", "write_pipelined"]

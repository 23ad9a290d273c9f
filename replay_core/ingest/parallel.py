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
from itertools import pairwise

import orjson

from ..events import AttachmentEvent, EventError, StepEvent, parse_event
from ..storage.store import StepRow, Store, WriteBatch, WriteRefused, WriteResult
from .redact import Redactor
from .step_rows import CARRIERS, step_row_of

MIN_LINES = 20_000  # under this the reader processes cost more than they save
READERS = 2  # with this process, three on two cores: a reader is the slower side, and this one waits less
# PostgreSQL too: 1M steps 19.1k/19.6k steps/s the plain way, 25.8k/27.4k pipelined (bench/RESULTS.md). It had
# been slower there (14.6k) only while the transaction's growing per-run tables went unanalyzed
# (Store.write_batches, ANALYZE_WITHIN).
CUT_LINES = 100_000  # how far past a part's middle its cut (the next change of run) is looked for
# Steps per batch, the grain of the pipeline (a batch ends at the next run's first line); statements per
# batch weigh on PostgreSQL.
BATCH_STEPS = 10_000


@dataclass
class Read:
    """What the reader made of the whole file."""

    records: int = 0
    steps: int = 0
    redacted: int = 0


class Fallback(Exception):
    """The file cannot take the pipelined way (the reason is for tests and logs): read it the plain way."""


def one_thread() -> bool:
    """Whether this process runs one thread, the only kind that forks safely."""
    return threading.active_count() == 1


def suitable(data: bytes, fmt: str) -> bool:
    """Whether `data` may go the pipelined way: native (forced, or what detection tries first),
    big enough, and a process that can fork safely."""
    if fmt not in ("auto", "native") or not one_thread():
        return False
    if "fork" not in multiprocessing.get_all_start_methods() or data.count(b"\n") < MIN_LINES:
        return False
    from .formats.native import FORMAT

    return FORMAT.sniff(data[:4096], "")


def write_pipelined(
    store: Store, data: bytes, redactor: Redactor, *, source: str, progress: Callable[[int], None] | None = None
) -> tuple[WriteResult, Read]:
    """Store the file through reader processes, one per part (READERS, cut between runs); raises
    Fallback when it must be read the plain way (nothing is stored then)."""
    ctx = multiprocessing.get_context("fork")
    readers = []
    for start, end in _parts(data, READERS):
        queue = ctx.Queue(maxsize=8)
        process = ctx.Process(target=_reader, args=(data, start, end, redactor, store.engine.dialect, queue), daemon=True)
        process.start()
        readers.append((process, queue))
    read = Read()
    try:
        written = store.write_batches(_received(readers, read, progress), default_source=source)
    except WriteRefused as exc:  # e.g. a replay_of naming a run of a later batch: the plain way decides
        raise Fallback(f"refused in part: {exc}") from exc
    finally:
        for process, queue in readers:
            if process.is_alive():
                process.terminate()
            process.join()
            queue.close()
    return written, read


def _parts(data: bytes, n: int) -> list[tuple[int, int]]:
    """`data` cut into about `n` equal parts of whole lines, each cut where one run's lines end and
    another's begin (no cut when none is found near the middle: one part)."""
    bounds = [0]
    for k in range(1, n):
        at = data.find(b"\n", len(data) * k // n)
        if at < 0 or at <= bounds[-1]:
            break
        before = _session_of(data[data.rfind(b"\n", 0, at) + 1 : at])
        for _ in range(CUT_LINES):
            start = at + 1
            at = data.find(b"\n", start)
            if at < 0:
                break
            if _session_of(data[start:at]) != before:
                bounds.append(start)
                break
    bounds.append(len(data))
    return list(pairwise(bounds))


def _session_of(line: bytes):
    try:
        return orjson.loads(line).get("session_id")
    except (orjson.JSONDecodeError, AttributeError):
        return None  # a bad line or a blank one: the reader says so, or skips it


def _received(readers, read: Read, progress) -> Iterator[WriteBatch]:
    """The batches in file order; a run met in two batches (a file whose runs are interleaved
    across its parts) sends the file the plain way."""
    seen: set[str] = set()
    for process, queue in readers:
        before = read.records
        while True:
            try:
                kind, body = queue.get(timeout=1.0)
            except Exception:  # queue.Empty: the reader may have died without a word
                if not process.is_alive() and queue.empty():
                    raise Fallback("a reader process ended without finishing") from None
                continue
            if kind == "batch":
                batch, records = body
                if not seen.isdisjoint(batch.order):
                    raise Fallback("a run comes back after other runs")
                seen.update(batch.order)
                if progress:
                    progress(before + records)
                yield batch
            elif kind == "done":
                read.records += body[0]
                read.steps += body[1]
                read.redacted += body[2]
                break
            else:
                raise Fallback(body)
    if not read.steps:  # refused by the plain way, which says why: nothing may be committed
        raise Fallback("no steps")


def _reader(data: bytes, start: int, end: int, redactor: Redactor, dialect, queue) -> None:
    """A forked process: the lines of data[start:end] → validated, redacted events → batches on
    `queue`, bound for the database (`WriteBatch.bind`: the writer's work that needs no stored state)."""
    try:
        for kind, body in _batches(data[start:end], data.count(b"\n", 0, start), redactor):
            if isinstance(body[0], WriteBatch):
                body[0].bind(dialect)
            queue.put((kind, body))
    except Fallback as exc:
        queue.put(("fallback", str(exc)))
    except BaseException as exc:  # said to the parent, which reads the file the plain way
        queue.put(("fallback", f"reader failed: {type(exc).__name__}: {exc}"))
    queue.close()
    queue.join_thread()


# what a reader sends: ("batch", (batch, records read so far)), then ("done", (records, steps, redacted))
_Message = tuple[str, tuple[WriteBatch, int] | tuple[int, int, int]]


def _batches(data: bytes, lines_before: int, redactor: Redactor) -> Iterator[_Message]:
    batch, in_batch = WriteBatch(), 0
    records = steps = redacted = 0
    current = None
    for number, line in enumerate(data.split(b"\n"), start=lines_before + 1):
        if not line.strip():
            continue
        records += 1
        try:
            obj = orjson.loads(line)
            # a step straight into its row, as HTTP and OTLP take it; anything else, or a step the model
            # must judge (and one with images or without an event_id), the event's way
            row = step_row_of(obj, redactor) if type(obj) is dict and obj.get("kind") == "step" else None
            ev = row if row is not None else parse_event(obj)
        except (orjson.JSONDecodeError, EventError):
            raise Fallback(f"line {number} is not a valid event") from None
        sid = ev.session_id
        if sid != current:
            current = sid
            if sid not in batch.order and in_batch >= BATCH_STEPS:  # a batch ends only between runs
                yield "batch", (batch, records - 1)
                batch, in_batch = WriteBatch(), 0
        if isinstance(ev, AttachmentEvent) or (isinstance(ev, StepEvent) and ev.metadata and CARRIERS & ev.metadata.keys()):
            raise Fallback(f"line {number} carries an image")
        if isinstance(ev, StepRow):
            redacted += ev.redacted  # counted as the row was made
        elif isinstance(ev, StepEvent):  # one the fast path left to the model: redacted as an event
            before = ev.redacted
            ev = redactor.event(ev)
            redacted += ev.redacted - before
        else:  # a run's start or end
            batch.add(redactor.event(ev))
            continue
        in_batch += 1
        steps += 1
        batch.add(ev)
    if batch.order:
        yield "batch", (batch, records)
    yield "done", (records, steps, redacted)


__all__ = ["Fallback", "Read", "suitable", "write_pipelined"]

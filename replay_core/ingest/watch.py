"""Following files that agents write while they run: `agent-replay watch PATH...`.

Polling, not inotify: it needs no extra dependency, works the same on every OS and on network
folders, and a poll every second is cheap for the few hundred files an agent's log folder holds.

For JSON Lines files each poll imports what is complete (a half-written last line waits for its
newline). A format whose lines stand alone (`lines_stand_alone`: the native contract, where every
line names its session) is read from where the last poll stopped. Every other format's lines lean
on earlier ones (Claude Code pairs a tool result with a call and counts a message's usage once,
Codex names the session in its first line, Gemini in a header), so a file of theirs that grew is
read again from its start, up to its last whole line, and stored idempotently (steps are keyed by
event id: only the new ones are stored); a part read alone split runs, lost tool names and moved
`started_at`. A format that names runs by a hash of the whole file (`unwatchable` says why) would
make a new run each time the file grew: it is refused with that reason, never followed.
How far each file was read is kept in the database (`Store.save_watch_offset`), so a restarted
watch carries on where it stopped. A file that got a new inode, is shorter than what was read, or
whose start or bytes just before the offset no longer hash to the stored `fingerprint` was replaced
(logrotate's copytruncate keeps the inode, and the new content may outgrow the old offset before
the next poll): it is read again from the start. Runs imported this way stay `running` until the
source says they ended (`live`); the Store's idle expiry marks a run whose file stops growing `incomplete`.

A file that is one JSON or YAML document cannot be read in parts: it is imported whole, as a
finished file, once it has stopped changing between two polls, and again (replacing the run's
end) each time it is rewritten and still again.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from ..storage.store import Store
from .accounting import NO_STEPS
from .formats import SNIFF_BYTES, UnknownFormat, get_format
from .formats.jsondoc import is_json_lines
from .pipeline import FileRefused, ImportRejected, files_under, import_bytes, read_file

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_duration(text: str) -> timedelta:
    """`30s`, `15m`, `2h`, `1d`, `1w` → timedelta; ValueError naming the expected form otherwise."""
    found = _DURATION.match(text or "")
    if not found:
        raise ValueError(f"expected a number and a unit (s, m, h, d, w), e.g. 2h, got {text!r}")
    return timedelta(**{_UNITS[found.group(2)]: float(found.group(1))})


@dataclass
class PollResult:
    """What one pass over the followed paths did."""

    files: int = 0
    steps: int = 0
    sessions: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)


class Watcher:
    """Follows files and folders; `poll()` imports what is new since the last poll."""

    def __init__(
        self,
        store: Store,
        paths: Iterable[str | Path],
        *,
        fmt: str = "auto",
        since: timedelta | None = None,
        skip_bad: bool = False,
    ):
        self.store, self.paths, self.fmt, self.since, self.skip_bad = store, [Path(p) for p in paths], fmt, since, skip_bad
        self._pending: dict[str, tuple[int, float]] = {}  # whole-document files: (size, mtime) last seen
        self._reported: set[str] = set()  # problems already said once

    def poll(self) -> PollResult:
        result = PollResult()
        cutoff = time.time() - self.since.total_seconds() if self.since else None
        for path in files_under(self.paths):
            try:
                stat = path.stat()
            except OSError:
                continue  # gone between listing and reading
            if cutoff is not None and stat.st_mtime < cutoff:
                continue
            try:
                self._follow(path, stat, result)
            except (ImportRejected, UnknownFormat, OSError) as exc:
                problem = str(exc).splitlines()[0]
                if problem not in self._reported:
                    self._reported.add(problem)
                    result.problems.append(problem)
        return result

    def _follow(self, path: Path, stat, result: PollResult) -> None:
        key = str(path.resolve())
        saved = self.store.watch_offset(key)
        offset, fmt = (saved["offset"], saved["format"]) if saved else (0, None)
        if saved and (saved["inode"] != stat.st_ino or stat.st_size < offset or not _same_start(path, saved)):
            offset, fmt = 0, None  # replaced: read it again
        if stat.st_size == offset:
            if saved and saved["offset"] != offset:  # replaced by an empty file: its lines will come from 0
                self.store.save_watch_offset(key, inode=stat.st_ino, offset=0, format=None, fingerprint=fingerprint(path, 0))
            return
        with path.open("rb") as fp:
            if offset and not _jsonl_so_far(fp.read(SNIFF_BYTES)):  # a document written again (Gemini CLI rewrites
                offset = 0  # its session file after each message): read whole again once it is still
            fp.seek(offset)
            data = fp.read()
        if offset == 0 and not _jsonl_so_far(data):
            self._whole(path, key, stat, data, result, again=saved is not None)
            return
        end = data.rfind(b"\n") + 1  # a half-written last line waits for its newline
        if end == 0:
            return
        if fmt is None and self.fmt != "auto":
            fmt = self.fmt
        elif fmt is None:
            try:
                fmt = read_file(data[:end], str(path)).format
            except FileRefused as exc:
                if exc.reason == NO_STEPS:  # only a header so far: wait for the steps
                    return
                raise
        reader = get_format(fmt)
        why = getattr(reader, "unwatchable", None)
        if why:
            raise UnknownFormat(f"{path}: not followed, {fmt} {why}; import it with `agent-replay import` once it is finished")
        if offset and not getattr(reader, "lines_stand_alone", False):  # the whole file up to its last whole line
            with path.open("rb") as fp:
                chunk = fp.read(offset + end)
        else:
            chunk = data[:end]
        report = import_bytes(self.store, chunk, str(path), fmt=fmt, skip_bad=self.skip_bad, live=True)
        self.store.save_watch_offset(
            key, inode=stat.st_ino, offset=offset + end, format=fmt, fingerprint=fingerprint(path, offset + end)
        )
        result.files += 1
        result.steps += report.steps
        result.sessions.update(report.sessions)

    def _whole(self, path: Path, key: str, stat, data: bytes, result: PollResult, again: bool = False) -> None:
        """A one-document file: imported as finished once it is the same size and age two polls running;
        a document that changed after that is imported `again`, its newer reading replacing the run's end."""
        seen = (stat.st_size, stat.st_mtime)
        if self._pending.get(key) != seen:
            self._pending[key] = seen
            return
        report = import_bytes(self.store, data, str(path), fmt=self.fmt, skip_bad=self.skip_bad, replace=again)
        self.store.save_watch_offset(
            key,
            inode=stat.st_ino,
            offset=stat.st_size,
            format=report.files[0]["format"],
            fingerprint=fingerprint(path, stat.st_size),
        )
        result.files += 1
        result.steps += report.steps
        result.sessions.update(report.sessions)

    def run(self, *, interval: float = 1.0, polls: int | None = None, report: Callable[[PollResult], None] | None = None) -> None:
        """Poll every `interval` seconds, `polls` times (None: until interrupted)."""
        n = 0
        while polls is None or n < polls:
            found = self.poll()
            if report:
                report(found)
            n += 1
            if polls is None or n < polls:
                time.sleep(interval)


FINGERPRINT_BYTES = 1024


def fingerprint(path: Path, offset: int) -> str:
    """A hash of the file's first and last `FINGERPRINT_BYTES` before `offset`: what was read, in two
    small reads whatever the file's size. Another file (rotated, rewritten) differs in one or the other."""
    head = min(offset, FINGERPRINT_BYTES)
    with path.open("rb") as fp:
        first = fp.read(head)
        fp.seek(max(head, offset - FINGERPRINT_BYTES))
        last = fp.read(offset - max(head, offset - FINGERPRINT_BYTES))
    return hashlib.sha256(b"%d:" % offset + first + last).hexdigest()


def _same_start(path: Path, saved: dict) -> bool:
    """Whether what was read up to the saved offset is still there (True for offsets saved with no fingerprint)."""
    return saved.get("fingerprint") is None or fingerprint(path, saved["offset"]) == saved["fingerprint"]


def _jsonl_so_far(data: bytes) -> bool:
    """JSON Lines, judged on what is complete: one whole line is enough (a new log has only one yet)."""
    first = data.lstrip().split(b"\n", 1)
    return (
        len(first) == 2
        and first[0].rstrip().endswith(b"}")
        and (is_json_lines(data) or not first[1].strip() or first[1].lstrip()[:1] == b"{")
    )

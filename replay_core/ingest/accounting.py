"""The account of one file read by one reader: what was read, used, ignored, refused, made.

An import that says "imported" while it made an empty run out of a file it did not
understand is worse than a refusal. So every file is accounted for: its records (the
container's unit — a JSONL line, a JSON list item, one JSON object — unless the reader
names its own with `Records`), those the reader ignored by kind (with where the first few
were), the bad ones, and the steps made. `used` is what is left: records the reader took.

Detection reads the file with every reader whose sniff passes and keeps the one that uses
the largest share (`coverage`: records used, or skipped on purpose as a kind the reader
knows — a progress line, a step marker); the registry order breaks ties. A file is refused when
even the best understands less than `MIN_COVERAGE` of its records, or when it has records and
would give no steps. Half is the threshold: a reader that understands fewer than half of a file's records
is guessing about what the file is, and the runs it would make show a partial picture as if
it were whole; a reader that uses most of them and names what it skipped is telling the truth.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ..events import StepEvent
from .formats import BadRecord, DocumentError, Event, Format, Ignored, Records
from .formats.shape import Shape

MIN_COVERAGE = 0.5
NO_STEPS = "it would give no steps"
NO_READER = "no reader recognises it"
EXAMPLES = 3  # where the first few ignored records of each kind were
PROGRESS_EVERY = 5000


@dataclass
class FileAccount:
    """One reader's reading of one file."""

    file: str
    format: str
    records: int
    unit: str
    events: list[Event] = field(default_factory=list)
    bad: list[BadRecord] = field(default_factory=list)
    ignored: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    steps: int = 0
    unknown: int = 0  # ignored records the reader could not tell what they are
    broken: bool = False  # the reader stopped part-way (a document it cannot read): nothing of it is used

    @property
    def ignored_total(self) -> int:
        return sum(self.ignored.values())

    @property
    def used(self) -> int:
        return 0 if self.broken else max(0, self.records - self.ignored_total - len(self.bad))

    @property
    def understood(self) -> int:
        """Records used, or skipped on purpose (a progress line, a step marker): what the reader knows."""
        return 0 if self.broken else max(0, self.records - self.unknown - len(self.bad))

    @property
    def coverage(self) -> float:
        return self.understood / self.records if self.records else 1.0

    def summary(self) -> str:
        """`swe_agent: 0 of 49 lines used (49 ignored: type=user 20, type=progress 19…), 0 steps`."""
        text = f"{self.format}: {self.used} of {self.records} {self.unit} used"
        if self.ignored:
            kinds = ", ".join(f"{k} {n}" for k, n in self.ignored.most_common(3)) + ("…" if len(self.ignored) > 3 else "")
            text += f" ({self.ignored_total} ignored: {kinds})"
        if self.bad:
            text += f", {len(self.bad)} bad"
        return text + f", {self.steps} steps"

    def to_dict(self) -> dict:
        return {
            "file": self.file,
            "format": self.format,
            "records": self.records,
            "unit": self.unit,
            "used": self.used,
            "ignored": dict(self.ignored.most_common()),
            "ignored_examples": self.examples,
            "bad": len(self.bad),
            "steps": self.steps,
        }


def account(
    reader: Format, data: bytes, filename: str, shape: Shape, progress: Callable[[int], None] | None = None
) -> FileAccount:
    """Read the whole file with `reader` and account for every record."""
    acc = FileAccount(filename, reader.name, -1, "")  # the shape's count, unless the reader counts its own (below)
    try:
        for n, item in enumerate(reader.read(data, filename), start=1):
            if isinstance(item, StepEvent):
                acc.steps += 1
                acc.events.append(item)
            elif isinstance(item, Ignored):
                acc.ignored[item.kind] += 1
                acc.unknown += not item.known
                seen = acc.examples.setdefault(item.kind, [])
                if len(seen) < EXAMPLES:
                    seen.append(item.where)
            elif isinstance(item, BadRecord):
                acc.bad.append(item)
            elif isinstance(item, Records):
                acc.records, acc.unit = item.count, item.unit
            else:
                acc.events.append(item)
            if progress and n % PROGRESS_EVERY == 0:
                progress(n)
    except DocumentError as exc:  # the file cannot be read at all
        acc.bad.append(exc.record)
        _stopped(acc)
    except RecursionError:  # a pathologically nested document
        acc.bad.append(BadRecord(filename, "nested too deeply to read"))
        _stopped(acc)
    except Exception as exc:
        # a value of a type the reader did not expect (a list where an object belongs…), or damaged bytes a
        # decoder below the reader gives up on (zlib, YAML, protobuf): the file is refused by where it breaks,
        # as a bad record, never as a traceback
        acc.bad.append(
            BadRecord(
                _locate(reader, data, filename),
                f"cannot be read as {reader.name}: "
                f"unexpected {type(exc).__name__} ({str(exc).splitlines()[0][:200] if str(exc) else 'no detail'})",
            )
        )
        _stopped(acc)
    if acc.records < 0:  # asked only now: a JSON list's count is a parse of the whole file
        acc.records, acc.unit = shape.records, shape.unit
    return acc


def _stopped(acc: FileAccount) -> None:
    """A reading that broke off: what it had made is dropped, so --skip-bad never stores half a file."""
    acc.events, acc.steps, acc.broken = [], 0, True


LOCATE_LINES = 5000


def _locate(reader: Format, data: bytes, filename: str) -> str:
    """`file:line` of the first JSON line that breaks the reader by itself (JSON Lines), else the file."""
    lines = data.split(b"\n")
    if len(lines) < 2 or len(lines) > LOCATE_LINES:
        return filename
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            for _ in reader.read(line + b"\n", filename):
                pass
        except DocumentError:
            continue
        except Exception:  # this line is the one that breaks it
            return f"{filename}:{number}"
    return filename


def refusal(acc: FileAccount) -> str | None:
    """Why the best reading of a file is not good enough to store, or None when it is."""
    if acc.records and acc.steps == 0 and not acc.bad:
        return NO_STEPS
    if acc.coverage < MIN_COVERAGE and not acc.bad:
        return f"the best reader understands {acc.understood} of {acc.records} {acc.unit} (under {MIN_COVERAGE:.0%})"
    return None


def mostly_ignored(acc: FileAccount) -> str | None:
    """The warning a forced reader gets when it ignores most of the file."""
    if acc.records and acc.coverage < MIN_COVERAGE:
        return f"{acc.file}: --format {acc.format} ignored most of the file: {acc.summary()}"
    return None

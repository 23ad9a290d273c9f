"""Importing uploaded files one by one, each with its own result (files never block each other)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from replay_core.ingest.pipeline import ImportRejected, import_bytes
from replay_core.storage.actor import Actor, PermissionDenied
from replay_core.storage.store import Store


@dataclass
class FileResult:
    file: str
    outcome: str
    format: str = ""
    sessions: list[str] = field(default_factory=list)
    steps: int = 0
    duplicates: int = 0
    redacted: int = 0
    errors: list[str] = field(default_factory=list)  # "file:line: reason"

    def row(self) -> dict:
        return {"File": self.file, "Result": self.outcome, "Format": self.format, "Runs": len(self.sessions),
                "Steps": self.steps, "Duplicates": self.duplicates, "Redacted": self.redacted, "Errors": len(self.errors)}


def import_one(store: Store, name: str, data: bytes, *, fmt: str = "auto", skip_bad: bool = False,
               actor: Actor | None = None) -> FileResult:
    try:
        report = import_bytes(store, data, name, fmt=fmt, skip_bad=skip_bad, actor=actor)
    except PermissionDenied as exc:
        return FileResult(name, f"Not imported: {exc}")
    except ImportRejected as exc:
        n = len(exc.errors)
        return FileResult(name, f"Refused: {n} bad record{'s' if n != 1 else ''}, nothing imported",
                          errors=[str(e) for e in exc.errors])
    except ValueError as exc:  # UnknownFormat, or a reader that cannot make sense of the file
        return FileResult(name, f"Not imported: {exc}")
    skipped = len(report.errors)
    outcome = "Imported" + (f", {skipped} bad record{'s' if skipped != 1 else ''} skipped" if skipped else "")
    if report.steps == 0 and report.duplicates:
        outcome = "Already imported: every step was a duplicate"
    return FileResult(name, outcome, report.files[0]["format"], report.sessions, report.steps, report.duplicates,
                      report.redacted, [str(e) for e in report.errors])


def import_all(store: Store, files: list[tuple[str, bytes]], *, fmt: str = "auto", skip_bad: bool = False,
               progress: Callable[[int, str], None] | None = None, actor: Actor | None = None) -> list[FileResult]:
    results = []
    for i, (name, data) in enumerate(files):
        if progress:
            progress(i, name)
        results.append(import_one(store, name, data, fmt=fmt, skip_bad=skip_bad, actor=actor))
    return results

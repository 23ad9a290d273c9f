"""Importing uploaded files one by one, each with its own result (files never block each other)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from replay_core.ingest.pipeline import FileRefused, ImportRejected, import_bytes
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
    account: dict = field(default_factory=dict)  # the pipeline's per-file account: records, used, ignored by kind, steps
    warnings: list[str] = field(default_factory=list)

    def row(self) -> dict:
        acc = self.account
        ignored = acc.get("ignored") or {}
        return {
            "File": self.file,
            "Result": self.outcome,
            "Format": self.format,
            "Records": f"{acc['used']} of {acc['records']} {acc['unit']} used" if acc else "",
            "Ignored": ", ".join(f"{k} ×{n}" for k, n in ignored.items()) if ignored else "",
            "Runs": len(self.sessions),
            "Steps": self.steps,
            "Duplicates": self.duplicates,
            "Redacted": self.redacted,
            "Errors": len(self.errors),
        }


def import_one(
    store: Store, name: str, data: bytes, *, fmt: str = "auto", skip_bad: bool = False, actor: Actor | None = None
) -> FileResult:
    try:
        report = import_bytes(store, data, name, fmt=fmt, skip_bad=skip_bad, actor=actor)
    except PermissionDenied as exc:
        return FileResult(name, f"Not imported: {exc}")
    except ImportRejected as exc:
        n = len(exc.errors)
        return FileResult(
            name, f"Refused: {n} bad record{'s' if n != 1 else ''}, nothing imported", errors=[str(e) for e in exc.errors]
        )
    except FileRefused as exc:  # no reader accounts for the file: the reason, the readers tried, what it looks like
        return FileResult(name, f"Not imported: {exc.reason}", errors=[str(exc)])
    except ValueError as exc:  # a format name that does not exist
        return FileResult(name, f"Not imported: {exc}")
    skipped = len(report.errors)
    outcome = "Imported" + (f", {skipped} bad record{'s' if skipped != 1 else ''} skipped" if skipped else "")
    if report.steps == 0 and report.duplicates:
        outcome = "Already imported: every step was a duplicate"
    if report.warnings:
        outcome += "; the reader ignored most of the file"
    return FileResult(
        name,
        outcome,
        report.files[0]["format"],
        report.sessions,
        report.steps,
        report.duplicates,
        report.redacted,
        [str(e) for e in report.errors],
        report.files[0],
        report.warnings,
    )


def import_all(
    store: Store,
    files: list[tuple[str, bytes]],
    *,
    fmt: str = "auto",
    skip_bad: bool = False,
    progress: Callable[[int, str], None] | None = None,
    actor: Actor | None = None,
) -> list[FileResult]:
    results = []
    for i, (name, data) in enumerate(files):
        if progress:
            progress(i, name)
        results.append(import_one(store, name, data, fmt=fmt, skip_bad=skip_bad, actor=actor))
    return results

"""Checks every reader's tests make: re-importing a file changes nothing, and the reader claims no file
of another format's fixtures (its sniff stays off them)."""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES

from replay_core.ingest.pipeline import import_file


def reimport_changes_nothing(store, path: Path) -> None:
    first = import_file(store, path)
    before = {sid: (store.get_session(sid), store.load_steps(sid)) for sid in first.sessions}
    again = import_file(store, path)
    assert again.steps == 0 and again.duplicates == first.steps
    assert {sid: (store.get_session(sid), store.load_steps(sid)) for sid in again.sessions} == before


def claims_no_other_fixture(fmt, own: str) -> None:
    """`own`: the fixtures folder of the reader's own files."""
    for path in FIXTURES.rglob("*"):
        if path.is_file() and path.parent.name != own:
            assert not fmt.sniff(path.read_bytes()[:65536], path.name), path

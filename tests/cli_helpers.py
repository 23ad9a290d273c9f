"""`agent-replay …` called in this process as the program calls it: for tests of what a command does,
where a process of its own would only add its start (a second or more each)."""

from __future__ import annotations

import runpy
import sys
from collections.abc import Callable
from typing import NamedTuple

from typer.testing import CliRunner

import replay_core.cli as cli_module


class Ran(NamedTuple):
    """What the command did, as a process's result reads: its exit code and what it printed."""

    returncode: int
    stdout: str
    stderr: str


def run_main(monkeypatch, args, env: dict[str, str | None]) -> Ran:
    """The command's `main` (Typer's app, and its one-line errors) with `args`, its streams captured, `env`
    set for it (None: unset). An exception it lets out fails the test, as a traceback would in the process."""
    return _ran(monkeypatch, args, env, cli_module.main)


def run_program(monkeypatch, args, env: dict[str, str | None]) -> Ran:
    """`python -m replay_core.cli …` as run_main runs `main`: the package's `__main__`, which answers a plain
    `stats` on a SQLite file before `main` is called (stats_fast_path), as the program and the console script do."""
    return _ran(monkeypatch, args, env, lambda: runpy.run_module("replay_core.cli", run_name="__main__"))


def _ran(monkeypatch, args, env: dict[str, str | None], start: Callable[[], object]) -> Ran:
    monkeypatch.setattr(sys, "argv", ["agent-replay", *args])
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # Typer's app installs its own; put back after the test
    with CliRunner().isolation(env=env) as (stdout, stderr, _):
        try:
            start()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        sys.stdout.flush()
        sys.stderr.flush()
        return Ran(code, stdout.getvalue().decode(), stderr.getvalue().decode())

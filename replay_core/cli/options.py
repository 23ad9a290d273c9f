"""What the command groups share: the options they take alike, the consoles they print to, and the
way they report bad input (one line on stderr, exit code 1) and open the database."""

from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from ..storage.actor import local
from .output import make_console

if TYPE_CHECKING:
    from ..storage.store import Store

out = make_console(soft_wrap=True)
err = make_console(stderr=True, soft_wrap=True)  # messages name files: folded at the width, a path would break

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db", help="Database URL or SQLite path (default: AGENT_REPLAY_DB_URL, else agent_replay.db in the data directory)."
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
WideOption = Annotated[bool, typer.Option("--wide", help="Every column (the default table fits an 80-column terminal).")]
RunsOption = Annotated[
    list[str] | None, typer.Option("--runs", "--sessions", help="Run ids (repeat the option, or comma-separated).")
]
FromFilterOption = Annotated[
    str | None,
    typer.Option(
        "--from-filter", help="The runs a filter matches: 'status=failed model=gpt-4o agent=… workflow=… since=7d search=…'."
    ),
]
StatusOption = Annotated[str | None, typer.Option("--status", help="Runs with this status.")]
WorkflowOption = Annotated[str | None, typer.Option("--workflow", help="Runs of this workflow.")]
SinceOption = Annotated[str | None, typer.Option("--since", help="Runs started since: 7d, 12h, a date or an ISO time.")]
SearchOption = Annotated[str | None, typer.Option("--search", help="Runs whose name or steps hold this text.")]
ExpectedOption = Annotated[
    str | None, typer.Option("--expected", help="What counts as right for these cases (default: the original's final answer).")
]


class CliError(Exception):
    """Bad input: reported as one line, never a traceback."""


def fail(message: str) -> NoReturn:
    raise CliError(message)


def open_store(db: str | None) -> "Store":
    from ..storage.store import Store

    try:
        return Store(db)
    except Exception as exc:  # connection refused, bad URL, unreadable file
        raise CliError(f"cannot open database: {str(exc).splitlines()[0]}") from None


def cli_actor():
    """Who the CLI acts as: the local user, an editor unless AGENT_REPLAY_CLI_ROLE says otherwise."""
    try:
        return local("cli")
    except ValueError as exc:
        raise CliError(str(exc)) from None


def progress_bar(enabled: bool):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=not enabled,
        transient=True,
    )

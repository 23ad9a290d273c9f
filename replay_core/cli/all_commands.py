"""The `agent-replay` Typer app: every command group's commands in one list, and `--version`."""

from typing import Annotated

import typer

from . import admin, experiments, mcp, media, monitors, runs, serve, team, understand, whatif
from .options import guard_commands

app = typer.Typer(help="Record, import, inspect, replay and compare AI agent runs.", no_args_is_help=True, add_completion=False)
for group in (serve, runs, understand, whatif, experiments, media, admin, team, monitors, mcp):
    app.add_typer(group.commands)
guard_commands(app)


def _print_version(asked: bool) -> None:
    if asked:
        from .. import __version__

        print(f"agent-replay {__version__}")
        raise typer.Exit()


@app.callback()
def _top_level(
    version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", callback=_print_version, is_eager=True)
    ] = False,
) -> None:
    pass

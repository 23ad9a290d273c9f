"""`agent-replay`: a thin command line over the library, a module per command group.

Every command is a few lines that call replay_core and print: a table for people, or JSON with
--json for scripts. Bad input is one line on stderr and exit code 1.

    serve        serve (the app: pages and HTTP API)
    runs         import, watch, export, sessions, show
    understand   stats, explain, compare
    whatif       replay, dataset …
    experiments  experiment …
    media        video
    admin        db …, demo, retention, deliver-spool, audit
    team         queue …, share
    mcp          mcp (the MCP server over stdio)
    monitors     monitor add|list|show|check|history|mute|ack
    all_commands the Typer app made of them; options and output: what they share

Importing this package imports nothing heavy, so that `python -m replay_core.cli stats` is answered
by stats_fast_path before Typer, rich's console and the Store load; `app` is built on first use.
"""

import sys
from typing import Any


def __getattr__(name: str):
    if name == "app":
        from .all_commands import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _plain_stats(args: list[str]) -> bool:
    """Run `stats` with its options as given (strings and one flag), parsed by the command's own
    parser but without Typer's value coercion, which imports pydantic and builds a validator per
    option: a sixth of the command's time, against a 0.4 s budget. False, having run
    nothing, for anything else or anything unusual (help, an unknown or malformed option), which
    Typer then handles as for every command."""
    from .stats_fast_path import known_cli_role

    if args[:1] != ["stats"] or any(a in ("--help", "-h") or a.startswith("--help=") for a in args) or not known_cli_role():
        return False
    from typer.main import get_group

    from .all_commands import app
    from .understand import stats_cmd

    command = get_group(app).commands["stats"]
    try:
        given, rest, _ = command.make_parser(command.context_class(command)).parse_args(args[1:])
    except Exception:  # Typer reports it, in its words
        return False
    if rest:
        return False
    options: dict[str, Any] = {p.name: given.get(p.name, p.default) for p in command.params}  # as parsed, not coerced
    stats_cmd(**options)
    return True


def main() -> None:
    from ..storage.actor import PermissionDenied
    from .all_commands import app
    from .options import CliError, err

    try:
        if not _plain_stats(sys.argv[1:]):  # run as a program, a plain `stats` on a SQLite file was answered by stats_fast_path
            app()
    except CliError as exc:
        err.print(f"error: {exc}")
        sys.exit(1)
    except PermissionDenied as exc:
        err.print(f"error: {exc} (the CLI acts as {exc.actor.role}: AGENT_REPLAY_CLI_ROLE)")
        sys.exit(1)

"""A plain `stats` on a SQLite file, answered before the imports of Typer, rich's console and the
Store (`python -m replay_core.cli` and the console script run this first): those imports were most
of the command's budget of 0.4 s."""

from typing import Any

from ..storage.actor import cli_role
from .output import show_stats

STATS_VALUES = ("--since", "--until", "--by", "--db")  # `stats`' options that take a value; --json is its flag


def stats_args(args: list[str]) -> dict | None:
    """`stats`' options when each is given plainly and once (`--by model`, `--by=model`, `--json`);
    None for anything else, which Typer parses and reports in its words."""
    given: dict[str, Any] = {}
    rest = iter(args)
    for arg in rest:
        name, eq, text = arg.partition("=")
        value: str | bool | None = text
        if arg == "--json":
            value = True
        elif name not in STATS_VALUES:
            return None
        elif not eq:
            value = next(rest, None)
            if value is None or value.startswith("-"):
                return None
        if name[2:] in given:
            return None
        given[name[2:]] = value
    return given


def known_cli_role() -> bool:
    """Whether AGENT_REPLAY_CLI_ROLE names a role (else the command's own way reports it)."""
    try:
        cli_role()
    except ValueError:
        return False
    return True


def fast_stats(args: list[str]) -> bool:
    """`stats` without a time filter on a SQLite file, read by storage.plain (sqlite3, no SQLAlchemy)
    and printed by the same code as the command; False, having printed nothing, wherever the
    command itself must answer (another command, help, an error, PostgreSQL, an old schema, a run to expire…)."""
    given = stats_args(args[1:]) if args[:1] == ["stats"] else None
    if given is None or given.get("since") or given.get("until") or not known_cli_role():
        return False
    from ..storage.plain import open_reader
    from ..understand.headline import DIMENSIONS, headline

    by = given.get("by")
    if by is not None and by not in DIMENSIONS:
        return False
    try:
        reader = open_reader(given.get("db"))
        if reader is None:
            return False
        with reader:
            items = headline(reader, None, by)
    except Exception:  # whatever it is, the Store's way reports it (or finds it fine)
        return False
    show_stats(items, by, given.get("json", False))
    return True

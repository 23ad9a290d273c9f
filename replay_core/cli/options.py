"""What the command groups share: the options they take alike, the consoles they print to, and the
way they report bad input (one line on stderr, exit code 1) and open the database."""

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from ..storage import actor as roles
from ..storage.actor import Actor, PermissionDenied, local
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


def cli_actor() -> Actor:
    """Who the CLI acts as: the local user, an editor unless AGENT_REPLAY_CLI_ROLE says otherwise."""
    try:
        return local("cli")
    except ValueError as exc:
        raise CliError(str(exc)) from None


# Every command and the action the CLI's role must allow for it to run at all; a command missing
# here stops `guard_commands` (tests/test_cli_roles.py), so none runs unchecked.
COMMAND_ACTIONS: dict[str, str] = {
    "serve": roles.READ,
    "import": roles.IMPORT,
    "watch": roles.IMPORT,
    "export": roles.READ,
    "sessions": roles.READ,
    "show": roles.READ,
    "stats": roles.READ,
    "explain": roles.READ,
    "thread": roles.READ,
    "compare": roles.READ,
    "video": roles.READ,
    "replay": roles.REPLAY,
    "dataset create": roles.INGEST,
    "dataset add": roles.INGEST,
    "dataset import": roles.INGEST,
    "dataset list": roles.READ,
    "dataset show": roles.READ,
    "dataset export": roles.READ,
    "experiment run": roles.REPLAY,
    "experiment resume": roles.REPLAY,
    "experiment stop": roles.REPLAY,
    "experiment show": roles.READ,
    "experiment list": roles.READ,
    "experiment compare": roles.READ,
    "dataset from-queue": roles.INGEST,
    "experiment schedule add": roles.REPLAY,  # each run spends money
    "experiment schedule run-due": roles.REPLAY,
    "experiment schedule list": roles.READ,
    "experiment schedule history": roles.READ,
    "demo": roles.IMPORT,
    "db upgrade": roles.MAINTAIN,
    "db rebuild-rollups": roles.MAINTAIN,
    "deliver-spool": roles.INGEST,
    "retention": roles.DELETE,
    "audit": roles.READ_AUDIT,
    "queue create": roles.MANAGE_QUEUES,
    "queue delete": roles.MANAGE_QUEUES,
    "queue list": roles.READ,
    "queue show": roles.READ,
    "queue export": roles.READ,
    "share": roles.SHARE,
    "mcp": roles.READ,  # each tool checks the role its own action needs
    "monitor add": roles.MANAGE_MONITORS,
    "monitor check": roles.MANAGE_MONITORS,  # it opens and resolves alerts and sends them
    "monitor mute": roles.MANAGE_MONITORS,
    "monitor ack": roles.MANAGE_MONITORS,
    "monitor webhook": roles.MANAGE_MONITORS,
    "monitor list": roles.READ,
    "monitor show": roles.READ,
    "monitor history": roles.READ,
    "release compare": roles.READ,
}


def guard_commands(app: typer.Typer, prefix: str = "") -> None:
    """Make every command of `app` (and of its groups) first check the CLI's role against
    COMMAND_ACTIONS: an unknown AGENT_REPLAY_CLI_ROLE or a role short of the action stops it before
    it opens anything but the audit log, where the refusal is written (the database the command names)."""
    for info in app.registered_commands:
        assert info.callback is not None
        name = prefix + (info.name or info.callback.__name__)
        if name not in COMMAND_ACTIONS:
            raise KeyError(f"the command {name!r} has no action in COMMAND_ACTIONS")
        info.callback = _checked(info.callback, name, COMMAND_ACTIONS[name])
    for group in app.registered_groups:
        assert group.typer_instance is not None
        guard_commands(group.typer_instance, prefix + (f"{group.name} " if group.name else ""))


def _checked(command: Callable[..., Any], name: str, action: str) -> Callable[..., Any]:
    if getattr(command, "cli_action", None):  # guarded already (the app built twice in one process)
        return command

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        actor = cli_actor()
        if not actor.may(action):
            if "db" in kwargs:
                open_store(kwargs["db"]).authorize(actor, action, f"cli: {name}")  # logs the refusal and raises
            raise PermissionDenied(actor, action)
        return command(*args, **kwargs)

    vars(run)["cli_action"] = action
    return run


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

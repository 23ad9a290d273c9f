"""Keeping the database: schema upgrades and rollups (db), the demo runs, retention, the audit
log, and delivering what recorders spooled while their destination was down."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from .options import DbOption, JsonOption, cli_actor, err, fail, open_store, out
from .output import fmt, print_json

if TYPE_CHECKING:
    from ..storage.store import Store

commands = typer.Typer()
db_app = typer.Typer(help="Database maintenance.", no_args_is_help=True)
commands.add_typer(db_app, name="db")


@commands.command("demo")
def demo_cmd(
    db: DbOption = None,
    force: Annotated[bool, typer.Option("--force", help="Load even when the database already has sessions.")] = False,
) -> None:
    """Load the demo runs (into an empty database unless --force)."""
    if not load_demo_runs(open_store(db), force=force):
        out.print("database already has sessions; demo not loaded (use --force)")


def load_demo_runs(store: "Store", *, force: bool) -> bool:
    """Load the demo runs (into an empty database unless `force`), saying how many; False where the database had runs."""
    from ..demo import load_demo
    from ..storage.actor import IMPORT

    actor = store.authorize(cli_actor(), IMPORT, "demo")
    try:
        report = load_demo(store, only_if_empty=not force)
    except FileNotFoundError as exc:  # an install without the demo runs
        fail(str(exc))
    if report is not None:
        detail = {"sessions": len(report.sessions), "steps": report.steps, "force": force}
        store.record_audit(actor, IMPORT, target="demo", detail=detail)
        out.print(f"loaded {len(report.sessions)} demo sessions, {report.steps} steps")
    return report is not None


@db_app.command("upgrade")
def db_upgrade(db: DbOption = None) -> None:
    """Apply schema migrations (also done automatically on start)."""
    upgraded(db)


def upgraded(db: str | None) -> "Store":
    """The database, opened (which migrates it to the newest schema) and said so."""
    store = open_store(db)
    out.print(f"database at newest schema: {store.engine.url.render_as_string(hide_password=True)}")
    return store


@db_app.command("rebuild-rollups")
def db_rebuild_rollups(db: DbOption = None) -> None:
    """Recompute every run's rollups (what analytics and lists count) from its stored steps."""
    runs = open_store(db).rebuild_rollups()
    out.print(f"rollups rebuilt for {runs:,} runs")


@commands.command("deliver-spool")
def deliver_spool_cmd(
    to: Annotated[
        str | None,
        typer.Option(
            "--to",
            help="Where the recorder was sending: a database URL or the app's http(s) URL (default: the recorder's own default).",
        ),
    ] = None,
    token: Annotated[
        str | None, typer.Option("--token", help="API token for an http(s) destination (default: AGENT_REPLAY_TOKEN).")
    ] = None,
    spool_dir: Annotated[
        Path | None,
        typer.Option("--spool-dir", help="Spool folder (default: AGENT_REPLAY_SPOOL_DIR, else ~/.cache/agent-replay/spool)."),
    ] = None,
) -> None:
    """Send what recorders kept in their local spool (their destination was down) to that destination now."""
    from ..sdk.recorder import Recorder

    recorder = Recorder(to, token=token, spool_dir=str(spool_dir) if spool_dir else None)
    dead_letters = recorder.spool.rejected_path
    had_events = recorder.spool.pending  # spools left by earlier recorders for this destination are adopted on start
    before = recorder.spool.rejected_count()
    delivered = recorder.close(settle=0)
    reasons = recorder.spool.rejected_reasons(skip=before)
    for reason in reasons:
        err.print(f"refused: {reason}")
    if reasons:
        err.print(f"{len(reasons)} events refused by the destination, set aside in {dead_letters}")
    elif before:
        err.print(f"{before} events refused earlier are set aside in {dead_letters}")
    if not delivered:
        fail(f"the destination is still unreachable; events stay spooled in {recorder.spool.path.parent}")
    out.print("spool delivered: nothing left to send" if had_events else "no spooled events for this destination")


@commands.command("retention")
def retention_cmd(
    days: Annotated[float, typer.Option("--days", help="Delete runs that started more than this many days ago.")],
    keep_annotated: Annotated[bool, typer.Option("--keep-annotated", help="Keep runs that have review notes.")] = False,
    db: DbOption = None,
) -> None:
    """Delete old runs with everything attached to them."""
    if days <= 0:
        fail("--days must be more than 0")
    n = open_store(db).delete_older_than(days, keep_annotated=keep_annotated, actor=cli_actor())
    out.print(f"deleted {n} sessions older than {days:g} days")


@commands.command("audit")
def audit_cmd(
    limit: Annotated[int, typer.Option("--limit", help="How many lines, newest first.")] = 100,
    action: Annotated[
        list[str] | None,
        typer.Option("--action", help="Only this action (import, replay, delete, replace, sign_in…); repeatable."),
    ] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """The audit log: who imported, replayed, deleted, replaced or signed in, when and from where (editors only)."""
    from ..team.audit import as_row, entries

    rows = [as_row(e) for e in entries(open_store(db), cli_actor(), limit=limit, actions=action or ())]
    if json:
        print_json({"entries": rows})
        return
    table = Table("when (UTC)", "who", "role", "from", "action", "outcome", "target")
    for r in rows:
        table.add_row(
            r["at"][:19].replace("T", " "), r["who"], r["role"], r["origin"], r["action"], r["outcome"], fmt(r["target"])
        )
    out.print(table)
    out.print(f"{len(rows)} lines" + (" (newest first; --limit for more)" if len(rows) == limit else ""))

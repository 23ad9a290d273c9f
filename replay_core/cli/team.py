"""Working as a team: review queues (queue) and read-only share links (share)."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from .options import (
    DbOption,
    JsonOption,
    RunsOption,
    SearchOption,
    SinceOption,
    StatusOption,
    WorkflowOption,
    cli_actor,
    err,
    fail,
    open_store,
    out,
)
from .output import fmt, print_json

if TYPE_CHECKING:
    from ..storage.store import SessionFilter, Store

commands = typer.Typer()
queue_app = typer.Typer(help="Review queues: a set of runs to review one at a time, with a rubric.", no_args_is_help=True)
commands.add_typer(queue_app, name="queue")


def _queue_filter(runs, status, model, agent, workflow, since, search) -> tuple["SessionFilter | None", list[str] | None]:
    from ..events import SessionStatus
    from ..storage.store import SessionFilter
    from ..whatif.dataset import DatasetError, parse_since

    ids = [r.strip() for item in runs or [] for r in item.split(",") if r.strip()]
    if ids:
        return None, ids
    if not any((status, model, agent, workflow, since, search)):
        fail("name the runs (--runs ID …) or a filter (--status, --model, --agent, --workflow, --since, --search)")
    if status is not None and status not in set(SessionStatus):
        fail(f"--status: expected one of {', '.join(SessionStatus)}, got {status!r}")
    try:
        when = parse_since(since) if since else None
    except DatasetError as exc:
        fail(str(exc))
    return SessionFilter(status=status, model=model, agent_id=agent, workflow=workflow, since=when, text=search), None


def _queue_id(store: "Store", value: int) -> dict:
    from ..team import queues

    try:
        return queues.get(store, value)
    except queues.QueueError as exc:
        fail(str(exc))


@queue_app.command("create")
def queue_create(
    name: Annotated[str, typer.Argument(help='What the queue is for, e.g. "failed checkout runs this week".')],
    runs: RunsOption = None,
    status: StatusOption = None,
    model: Annotated[str | None, typer.Option("--model", help="Runs of this model.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Runs of this agent_id.")] = None,
    workflow: WorkflowOption = None,
    since: SinceOption = None,
    search: SearchOption = None,
    rubric: Annotated[
        Path | None, typer.Option("--rubric", help="Rubric file (JSON, or TOML): verdicts, criteria, note, should_have.")
    ] = None,
    reviews_per_item: Annotated[
        int, typer.Option("--reviews-per-item", help="Verdicts wanted per run, from different reviewers.")
    ] = 1,
    assign: Annotated[
        list[str] | None, typer.Option("--assign", help="A reviewer's name (repeat; none: open to every reviewer).")
    ] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Make a review queue of the runs a filter matches now (or of --runs); editors only."""
    from ..team import queues

    flt, ids = _queue_filter(runs, status, model, agent, workflow, since, search)
    store = open_store(db)
    try:
        made = queues.create(
            store,
            name,
            flt=flt,
            ids=ids,
            rubric=queues.load_rubric(rubric) if rubric else None,
            reviews_per_item=reviews_per_item,
            assignees=[a.strip() for x in assign or [] for a in x.split(",") if a.strip()],
            actor=cli_actor(),
        )
    except queues.QueueError as exc:
        fail(str(exc))
    if json:
        print_json(made)
        return
    out.print(f"queue {made['id']} ({made['name']}): {made['items']} runs to review")


@queue_app.command("list")
def queue_list(db: DbOption = None, json: JsonOption = False) -> None:
    """Queues with their progress."""
    from ..team import queues

    rows = [
        {
            k: q[k]
            for k in (
                "id",
                "name",
                "items",
                "items_done",
                "reviews",
                "needed",
                "percent",
                "reviews_per_item",
                "assignees",
                "created_by",
                "created_at",
            )
        }
        for q in queues.list_queues(open_store(db))
    ]
    if json:
        print_json(rows)
        return
    table = Table("id", "name", "runs", "runs done", "reviews", "assigned to", "created")
    for q in rows:
        table.add_row(
            str(q["id"]),
            q["name"],
            str(q["items"]),
            str(q["items_done"]),
            f"{q['reviews']} of {q['needed']}",
            ", ".join(q["assignees"] or []) or "anyone",
            fmt(q["created_at"]),
        )
    out.print(table)


@queue_app.command("show")
def queue_show(queue: Annotated[int, typer.Argument(help="Queue id.")], db: DbOption = None, json: JsonOption = False) -> None:
    """A queue's runs with their verdicts, per reviewer, and how often reviewers agreed."""
    from ..team import queues

    store = open_store(db)
    _queue_id(store, queue)
    res = queues.results(store, queue)
    q = res["queue"]
    progress = {k: q[k] for k in ("items", "items_done", "reviews", "needed", "percent", "done")}
    if json:
        print_json(
            {
                "id": q["id"],
                "name": q["name"],
                "rubric": q["rubric"],
                "reviews_per_item": q["reviews_per_item"],
                "assignees": q["assignees"],
                "made_from": q["made_from"],
                "progress": progress,
                "items": res["items"],
                "reviewers": res["reviewers"],
                "agreement": res["agreement"],
            }
        )
        return
    out.print(
        f"queue {q['id']}: {q['name']} — {q['items_done']} of {q['items']} runs done, {q['reviews']} of {q['needed']} reviews"
    )
    table = Table("#", "run", "status", "verdicts", "agreement", "held by")
    for it in res["items"]:
        verdicts = ", ".join(f"{v} ×{n}" for v, n in it["verdicts"].items()) or "—"
        table.add_row(
            str(it["position"]),
            it["session_id"],
            it["status"] or "run deleted",
            verdicts,
            "—" if it["agreement"] is None else f"{it['agreement']:.0%}",
            fmt(it["held_by"]),
        )
    out.print(table)
    if res["agreement"]["items"]:
        out.print(f"agreement: {res['agreement']['mean']:.0%} of reviewer pairs agreed, over {res['agreement']['items']} runs")


@queue_app.command("export")
def queue_export(
    queue: Annotated[int, typer.Argument(help="Queue id.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="CSV file to write.")],
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """The queue's reviews as CSV: one row per review, a column per criterion."""
    from ..team import queues

    store = open_store(db)
    _queue_id(store, queue)
    res = queues.results(store, queue)
    text = queues.to_csv(res)
    output.write_text(text, encoding="utf-8")
    rows = text.count("\n") - 1
    if json:
        print_json({"id": queue, "file": str(output), "rows": rows})
    else:
        err.print(f"wrote {rows} rows to {output}")


@queue_app.command("delete")
def queue_delete(queue: Annotated[int, typer.Argument(help="Queue id.")], db: DbOption = None) -> None:
    """Delete a queue and its reviews (editors only); the runs stay."""
    from ..team import queues

    if not queues.delete(open_store(db), queue, actor=cli_actor()):
        fail(f"no queue {queue}")
    out.print(f"queue {queue} deleted")


@commands.command("share")
def share_cmd(
    session: Annotated[str | None, typer.Argument(help="The run to share.")] = None,
    compare: Annotated[str | None, typer.Option("--compare", help="Share the comparison of SESSION with this run.")] = None,
    queue: Annotated[int | None, typer.Option("--queue", help="Share this queue's results instead of a run.")] = None,
    expires: Annotated[str, typer.Option("--expires", help="How long the link opens: 30m, 12h, 7d, 2w.")] = "7d",
    list_: Annotated[bool, typer.Option("--list", help="List the links made (never their tokens).")] = False,
    revoke: Annotated[int | None, typer.Option("--revoke", help="Revoke the link with this id.")] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """A read-only link to one run, a comparison or a queue's results, for someone without an account (editors only)."""
    from ..team import shares

    store = open_store(db)
    if list_:
        rows = [
            {k: r[k] for k in ("id", "kind", "target", "state", "created_by", "created_at", "expires_at", "revoked_at", "opened")}
            for r in shares.list_links(store, actor=cli_actor())
        ]
        if json:
            print_json(rows)
            return
        table = Table("id", "what", "state", "made by", "expires", "opened")
        for r in rows:
            table.add_row(
                str(r["id"]),
                f"{r['kind']} {' vs '.join(str(v) for v in r['target'].values())}",
                r["state"],
                r["created_by"],
                fmt(r["expires_at"]),
                str(r["opened"]),
            )
        out.print(table)
        return
    if revoke is not None:
        if not shares.revoke(store, revoke, actor=cli_actor()):
            fail(f"no link {revoke} that still opens")
        if json:
            print_json({"id": revoke, "revoked": True})
        else:
            out.print(f"link {revoke} revoked")
        return
    if (session is None) == (queue is None):
        fail("name a run (SESSION, with --compare OTHER for a comparison) or --queue ID; --list and --revoke ID manage links")
    try:
        kind = shares.QUEUE if queue is not None else shares.COMPARE if compare else shares.RUN
        made = shares.make(
            store, kind, session=session, other=compare, queue=queue, expires=shares.parse_expiry(expires), actor=cli_actor()
        )
    except shares.ShareError as exc:
        fail(str(exc))
    if json:
        print_json({k: made[k] for k in ("id", "token", "url", "expires_at", "kind", "target")})
        return
    out.print(made["url"])
    err.print(f"link {made['id']}: opens without sign-in until {fmt(made['expires_at'])} UTC; the token is shown only now")

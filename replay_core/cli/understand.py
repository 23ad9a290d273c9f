"""Understanding runs: headline metrics (stats), why one failed (explain), where two differ (compare)."""

from typing import Annotated

import typer
from rich.table import Table

from .options import DbOption, JsonOption, fail, open_store, out
from .output import fmt, print_json, show_stats

commands = typer.Typer()


@commands.command("stats")
def stats_cmd(
    since: Annotated[str | None, typer.Option("--since", help="From this date (2026-05-01) or ISO date-time.")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Up to this date (included) or ISO date-time.")] = None,
    by: Annotated[
        str | None,
        typer.Option(
            "--by", help="Group by: day, hour, model, agent, workflow, environment, agent_version, tag, status, user, thread."
        ),
    ] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Headline run metrics, optionally per group. p50_ms / p95_ms are run durations."""
    from ..storage.store import SessionFilter
    from ..understand.headline import DIMENSIONS, headline

    if by is not None and by not in DIMENSIONS:
        fail(f"--by: unknown dimension {by!r}; expected one of {', '.join(DIMENSIONS)}")
    flt = SessionFilter()
    if since or until:  # parsed as the API parses them; server.api is a tenth of a second to import, so only then
        from ..storage.filter_params import session_filter

        try:
            flt = session_filter({"since": since or "", "until": until or ""})
        except ValueError as exc:
            fail(f"--{exc}")
    store = open_store(db)
    store.expire_idle()
    show_stats(headline(store, flt, by), by, json, out)


@commands.command("explain")
def explain_cmd(
    session: Annotated[str, typer.Argument(help="Session id of a failed, incomplete or unknown-outcome run.")],
    json: JsonOption = False,
    replays: Annotated[bool, typer.Option("--replays", help="Also compare with successful replays.")] = False,
    db: DbOption = None,
) -> None:
    """Why did this run fail? Turning point, causal chain and contradictions, from what is recorded (no model)."""
    from ..understand.explain import ExplainError, explain

    store = open_store(db)
    store.expire_idle()  # a run idle past the limit is explained as incomplete
    try:
        result = explain(store, session, include_replays=replays)
    except ExplainError as exc:
        fail(str(exc))
    if json:
        print_json(result.to_dict())
        return
    out.print(f"{session}  {result.status}" + (f": {result.outcome}" if result.outcome else ""))
    out.print(result.cause_line())
    tp = result.turning_point
    if tp:
        out.print(f"\nturning point: step {fmt(tp.seq)} against step {fmt(tp.compared_seq)} of {tp.compared_with} ({tp.kind})")
        out.print(f"  {tp.summary}")
    out.print("\ncausal chain:")
    for link in result.chain:
        out.print(f"  step {link.seq:>5}  [{link.kind}] {link.summary}")
    if result.contradictions:
        out.print("\ncontradictions:")
        for c in result.contradictions:
            out.print(f"  step {c.seq} vs step {c.earlier_seq} ({c.resource}): {c.summary}")
    for note in result.notes:
        out.print(f"\nnote: {note}")


@commands.command("compare")
def compare_cmd(
    a: Annotated[str, typer.Argument(help="Session A (e.g. the original).")],
    b: Annotated[str, typer.Argument(help="Session B (e.g. a replay).")],
    include: Annotated[
        list[str] | None, typer.Option("--include", help="Also compare: ids, timing, tokens, cost, model.")
    ] = None,
    whole: Annotated[
        bool, typer.Option("--whole", help="Compare a replay with its whole source, not only the replayed range.")
    ] = False,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Align two runs step by step and name the first step where they differ."""
    from ..understand.compare import compare

    store = open_store(db)
    try:
        result = compare(store, a, b, include=include or (), whole=whole)
    except KeyError as exc:
        fail(f"no such session: {exc.args[0]}")
    except ValueError as exc:
        fail(f"--include: {exc}")
    if json:
        print_json(result.to_dict())
        return
    div = result.first_divergence
    out.print(f"first divergence ({div.kind}): {div.summary}" if div else "no divergence: same steps, same outcome")
    table = Table("A seq", "", "B seq", "type", "tool", "difference")
    for row in result.rows:
        mark = "=" if row.same else ("≠" if row.paired else ("<" if row.b is None else ">"))
        table.add_row(
            fmt(row.a.seq if row.a else None),
            mark,
            fmt(row.b.seq if row.b else None),
            row.step.type,
            fmt(row.step.tool_name),
            row.kind or "",
        )
    out.print(table)
    totals = Table("", "A", "B")
    for key in result.totals["a"]:
        totals.add_row(key, fmt(result.totals["a"][key]), fmt(result.totals["b"][key]))
    out.print(totals)


@commands.command("thread")
def thread_cmd(
    thread_id: Annotated[str, typer.Argument(help="The conversation's thread_id (runs list: --thread; OTel session.id).")],
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """A conversation's runs in order, each with its totals, and the thread's totals."""
    from ..understand.thread import open_thread

    thread = open_thread(open_store(db), thread_id)
    if thread is None:
        fail(f"no run has thread_id {thread_id!r}")
    if json:
        print_json(thread.to_json())
        return
    table = Table("#", "run", "status", "started", "steps", "tokens", "cost $", "user")
    for i, run in enumerate(thread.runs, 1):
        tokens = run["tokens_in"] + run["tokens_out"]
        row = (i, run["id"], run["status"], run["started_at"], run["steps"], f"{tokens:,}", run["cost_usd"], run["user_id"])
        table.add_row(*map(fmt, row))
    out.print(table)
    t = thread.totals()
    cost = "unknown" if t["cost_usd"] is None else f"${t['cost_usd']:.4f}"
    unknown = f" ({t['runs_cost_unknown']} runs without a known cost)" if t["runs_cost_unknown"] and cost != "unknown" else ""
    older = " (the latest runs only)" if thread.more else ""
    out.print(
        f"{t['runs']} runs{older}: {t['succeeded']} succeeded, {t['failed']} failed; {t['steps']:,} steps, "
        f"{t['tokens_in'] + t['tokens_out']:,} tokens, cost {cost}{unknown}"
    )

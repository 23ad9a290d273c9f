"""The runs themselves: import trace files, follow them as agents write (watch), list them
(sessions), read one (show), and export them."""

import sys
from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.table import Table

from .options import DbOption, JsonOption, SearchOption, WideOption, cli_actor, err, fail, open_store, out, progress_bar
from .output import AmbiguousPrefix, fmt, print_json, readable_table, resolve_prefix, unique_prefixes, when

commands = typer.Typer()


def _check_format(name: str) -> None:
    """--format: auto, or a reader that exists (else one line naming the known ones)."""
    from ..ingest.formats import get_format

    if name != "auto":
        try:
            get_format(name)
        except ValueError as exc:
            fail(f"--format: {exc}")


@commands.command("import")
def import_cmd(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders (read recursively) to import.")],
    format: Annotated[str, typer.Option("--format", help="auto, or a format name (forces that reader).")] = "auto",
    db: DbOption = None,
    skip_bad: Annotated[
        bool, typer.Option("--skip-bad", help="Import the good records of a file with bad ones, reporting each bad one.")
    ] = False,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="Let the files change the end, status, name and outcome of runs "
            "that already ended (otherwise those are kept and each run is reported).",
        ),
    ] = False,
    json: JsonOption = False,
) -> None:
    """Import trace files (format detected from content); every file is accounted for or refused."""
    from ..ingest.pipeline import ImportRejected, IngestReport, files_under, import_bytes
    from ..storage.store import WriteRefused

    _check_format(format)
    store = open_store(db)
    actor = cli_actor()
    total = IngestReport()
    refused: list[str] = []
    files = list(files_under(paths))
    progress = progress_bar(enabled=not json and sys.stderr.isatty())
    with progress:
        task = progress.add_task("importing", total=len(files))
        records = progress.add_task("records read", total=None)
        for path in files:
            progress.update(task, description=f"importing {path.name}")
            progress.reset(records)
            try:
                data = path.read_bytes()
            except OSError as exc:
                refused.append(f"{path}: {exc.strerror or exc}")
                continue
            try:
                report = import_bytes(
                    store,
                    data,
                    str(path),
                    fmt=format,
                    skip_bad=skip_bad,
                    replace=replace,
                    progress=lambda n: progress.update(records, completed=n),
                    actor=actor,
                )
            except ImportRejected as exc:
                refused += [str(e) for e in exc.errors[:20]]
                if len(exc.errors) > 20:
                    refused.append(f"… and {len(exc.errors) - 20} more bad records")
                refused.append(f"{path}: refused, nothing stored ({len(exc.errors)} bad records; --skip-bad imports the rest)")
                continue
            except WriteRefused as exc:
                refused.append(f"{path}: {exc.reason}; nothing stored")
                continue
            except ValueError as exc:  # FileRefused: no reader accounts for the file
                refused.append(str(exc))
                continue
            total.add(report)
            progress.advance(task)
    result = total.to_dict()
    result["refused"] = refused
    result["warnings"] = total.warnings
    result["errors"] += refused
    if json:
        print_json(result)
    else:
        out.print(
            f"imported {len(total.sessions)} sessions, {total.steps} steps "
            f"({total.duplicates} duplicates skipped, {total.redacted} values redacted)"
        )
        for f in total.files:
            out.print(_file_line(f))
        for line in total.warnings:
            err.print(f"warning: {line}")
        for line in total.conflicts:
            err.print(f"kept: {line}")
        for line in result["errors"]:
            err.print(line)
    if refused:
        raise typer.Exit(1)


def _file_line(f: dict) -> str:
    """`path: swe_agent, 49 of 49 list items used, 3 ignored (type=progress 3), 120 steps (12 new)`."""
    text = f"  {f['file']}: {f['format']}, {f['used']} of {f['records']} {f['unit']} used"
    if f["ignored"]:
        kinds = ", ".join(f"{k} {n}" for k, n in list(f["ignored"].items())[:4])
        text += f", {sum(f['ignored'].values())} ignored ({kinds}{'…' if len(f['ignored']) > 4 else ''})"
    if f["bad"]:
        text += f", {f['bad']} bad skipped"
    return text + f", {f['steps']} steps ({f['stored']} new)"


@commands.command("watch")
def watch_cmd(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders (followed recursively) that agents are writing.")],
    format: Annotated[str, typer.Option("--format", help="auto, or a format name.")] = "auto",
    since: Annotated[str | None, typer.Option("--since", help="Only files changed within this long, e.g. 30m, 2h, 1d.")] = None,
    interval: Annotated[float, typer.Option("--interval", help="Seconds between polls.")] = 1.0,
    once: Annotated[bool, typer.Option("--once", help="Poll once and exit.")] = False,
    skip_bad: Annotated[bool, typer.Option("--skip-bad", help="Import the good lines of a chunk with bad ones.")] = False,
    db: DbOption = None,
) -> None:
    """Follow agents' log files as they are written: new lines are imported as they appear (restart-safe)."""
    from ..ingest.watch import Watcher, parse_duration

    _check_format(format)
    try:
        window = parse_duration(since) if since else None
    except ValueError as exc:
        fail(f"--since: {exc}")
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        fail(f"no such file or folder: {', '.join(missing)}")
    store = open_store(db)
    watcher = Watcher(store, paths, fmt=format, since=window, skip_bad=skip_bad)

    def said(found) -> None:
        if found.steps:
            out.print(f"{found.steps} new steps from {found.files} files ({len(found.sessions)} runs)")
        for problem in found.problems:
            err.print(problem)

    if not once:
        err.print(f"watching {', '.join(map(str, paths))} every {interval:g}s (Ctrl-C stops)")
    try:
        watcher.run(interval=interval, polls=1 if once else None, report=said)
    except KeyboardInterrupt:
        pass


@commands.command("export")
def export_cmd(
    sessions: Annotated[list[str] | None, typer.Argument(help="Session ids.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Export every session.")] = False,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="File to write (default: stdout).")] = None,
    format: Annotated[str, typer.Option("--format", help="native (JSONL), or otlp-json (OpenTelemetry GenAI spans).")] = "native",
    db: DbOption = None,
) -> None:
    """Export sessions as native JSONL, or as OTLP/JSON for OpenTelemetry tools."""
    from ..ingest.formats import native, otlp_export

    writers = {"native": native.write, "otlp-json": otlp_export.write}
    if format not in writers:
        fail(f"--format: unknown export format {format!r}; known: {', '.join(writers)}")
    store = open_store(db)
    ids = store.session_ids() if all_ else list(sessions or [])
    if not ids:
        fail("name sessions to export, or --all")
    missing = [sid for sid in ids if store.get_session(sid) is None]
    if missing:
        fail(f"no such session: {', '.join(missing)}")
    if output:
        with output.open("wb") as fp:
            n = writers[format](store.export_events(ids), fp)
        err.print(f"wrote {n} events of {len(ids)} sessions to {output}")
    else:
        writers[format](store.export_events(ids), sys.stdout.buffer)


def session_summary_row(row: dict, cycles: int | None = None) -> dict:
    keys = (
        "id",
        "name",
        "status",
        "model",
        "agent_id",
        "workflow",
        "environment",
        "agent_version",
        "user_id",
        "thread_id",
        "source",
        "started_at",
        "ended_at",
        "steps",
        "tokens_in",
        "tokens_out",
        "cost_usd",
        "totals_source",
        "errors",
        "tags",
        "replay_of",
    )
    out = {k: row.get(k) for k in keys}
    if cycles is not None:
        out["cycles"] = cycles
    return out


@commands.command("sessions")
def sessions_cmd(
    status: Annotated[
        str | None, typer.Option(help="running, succeeded, failed, incomplete, unknown (ended, outcome not recorded)")
    ] = None,
    model: Annotated[str | None, typer.Option()] = None,
    agent: Annotated[str | None, typer.Option(help="agent_id")] = None,
    user: Annotated[str | None, typer.Option("--user", help="Runs of this user (user_id).")] = None,
    thread: Annotated[str | None, typer.Option("--thread", help="Runs of this conversation (thread_id).")] = None,
    limit: Annotated[int, typer.Option()] = 50,
    search: SearchOption = None,
    replays: Annotated[bool, typer.Option("--replays", help="Also list what-if replays and experiments' runs.")] = False,
    db: DbOption = None,
    json: JsonOption = False,
    wide: WideOption = False,
) -> None:
    """List sessions, newest first (original runs only, unless --replays; with --search, each with its first matching step)."""
    from ..events import SessionStatus
    from ..storage.store import SessionFilter
    from ..understand.timeline import count_cycles

    if status is not None and status not in set(SessionStatus):
        fail(f"--status: expected one of {', '.join(SessionStatus)}, got {status!r}")
    store = open_store(db)
    store.expire_idle()
    rows = store.list_sessions(
        SessionFilter(
            status=status,
            model=model,
            agent_id=agent,
            user_id=user,
            thread_id=thread,
            text=search,
            include_replays=replays,
            experiments=replays,
        ),
        limit=limit,
    )
    cycles = count_cycles(store, [r["id"] for r in rows])
    items = [session_summary_row(r, cycles.get(r["id"], 0)) for r in rows]
    matches = store.search_matches([r["id"] for r in rows], search) if search else {}
    if search:
        for item in items:
            item["match"] = matches.get(item["id"])
    if json:
        print_json(items)
        return
    out.print(_sessions_table(store, items, wide=wide, search=bool(search)))


SESSION_FIXED = ("run", "status", "started", "steps", "cycles", "tokens", "cost $")
RUN_PREFIX = 8  # characters of a run id shown at least (more where another id starts the same)


def all_run_ids(store) -> list[str]:
    from ..storage.store import SessionFilter

    return store.session_ids(SessionFilter(include_replays=True, experiments=True))


def resolve_run(store, given: str) -> str:
    """The run `given` names: its id, or a prefix of one id only (as `sessions` shows them)."""
    if store.get_session(given) is not None:
        return given
    ids = [i for i in all_run_ids(store) if i.startswith(given)]
    if not ids:
        fail(f"no such session: {given}")
    try:
        return resolve_prefix(given, ids, "run")
    except AmbiguousPrefix as exc:
        fail(str(exc))


def _sessions_table(store, items: list[dict], *, wide: bool, search: bool):
    """The run (its id, shortened to a prefix `show` takes), its name, status, start, steps, cost; --wide shows
    whole ids and adds model, agent, cycles and tokens."""
    short = {} if wide else unique_prefixes(all_run_ids(store), RUN_PREFIX)
    extra = ["model", "agent", "cycles", "tokens"] if wide else []
    match = ["match"] if search else []
    table = readable_table("run", "name", "status", "started", "steps", *extra, "cost $", *match, fixed=SESSION_FIXED)
    for r in items:
        more = [fmt(r["model"]), fmt(r["agent_id"]), str(r["cycles"]), f"{r['tokens_in'] + r['tokens_out']:,}"] if wide else []
        table.add_row(
            short.get(r["id"], r["id"]),
            fmt(r["name"]),
            r["status"],
            _minute(r["started_at"]),
            f"{r['steps']:,}",
            *more,
            "—" if r["cost_usd"] is None else f"{r['cost_usd']:.4f}",
            *([_match_cell(r["match"])] if search else []),
        )
    return table


def _minute(value) -> str:
    return "not recorded" if value is None else value.strftime("%b %d %H:%M")


def _match_cell(match: dict | None):
    """The matched step as plain text (never rich markup: the snippet is stored text), or how the run matched."""
    from rich.text import Text

    from ..storage.search import plain

    return Text(f"step {match['seq']}: {plain(match['snippet'])}" if match else "(its name)")


@commands.command("show")
def show_cmd(
    session: Annotated[str, typer.Argument(help="Session id, or the start of one that no other id starts with.")],
    step: Annotated[int | None, typer.Option("--step", help="Also show the state at this step (seq).")] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """A session: its steps, cycles, gaps, and optionally the state at one step."""
    from ..understand.snapshot import state_at
    from ..understand.timeline import open_timeline

    store = open_store(db)
    store.expire_idle()
    session = resolve_run(store, session)
    try:
        tl = open_timeline(store, session)
    except KeyError:
        fail(f"no such session: {session}")
    if step is not None and not tl.steps:
        fail(f"--step: session {session} has no steps")
    if step is not None and tl.step_at_seq(step) is None:
        fail(f"--step: session {session} has no step {step} (steps run {tl.steps[0].seq}–{tl.steps[-1].seq})")
    snap = state_at(tl, step, store) if step is not None else None
    if json:
        body = {
            "session": session_summary_row(tl.session, len(tl.cycles))
            | {k: tl.session.get(k) for k in ("outcome", "error_class", "cost_estimated")},
            "summary": tl.summary(),
            "steps": [s.to_json_dict() | {"cycle": c} for s, c in zip(tl.steps, tl.cycle_index, strict=True)],
            "cycles": [c.to_dict() for c in tl.cycles],
            "gaps": [g.to_dict() for g in tl.gaps],
        }
        if snap:
            body["state"] = snap.to_dict()
        print_json(body)
        return
    s = tl.session
    out.print(f"{s['id']}  {s.get('name') or ''}")
    out.print(
        f"status {s['status']}  model {fmt(s.get('model'))}  agent {fmt(s.get('agent_id'))}  started {when(s.get('started_at'))}"
    )
    source = {"source": " (the source's run totals)", "steps+source": " (steps, and the source's run totals)"}.get(
        s.get("totals_source") or "", ""
    )
    estimated = " (estimated from list prices)" if s.get("cost_estimated") and s.get("cost_usd") is not None else ""
    out.print(f"tokens {s['tokens_in']:,} in / {s['tokens_out']:,} out  cost {fmt(s.get('cost_usd'))}{estimated}{source}")
    out.print(tl.summary())
    table = Table("seq", "cycle", "type", "status", "tool", "content")
    gap_after = {g.first_missing - 1: g for g in tl.gaps}
    for st, cyc in zip(tl.steps, tl.cycle_index, strict=True):
        text = (st.content or (orjson.dumps(st.tool_args).decode() if st.tool_args is not None else "")).replace("\n", " ")
        table.add_row(str(st.seq), fmt(cyc), st.type, st.status, fmt(st.tool_name), text[:100])
        if st.seq in gap_after:
            table.add_row("…", "", "", "", "", gap_after[st.seq].label)
    out.print(table)
    if snap:
        out.print(f"\nstate at step {snap.step.seq} (cycle {fmt(snap.cycle)}):")
        out.print(f"totals: {snap.totals}")
        if snap.state:
            out.print(f"source state: {snap.state}")
        out.print(f"context ({snap.context_source}): {snap.agent.note()}")
        for message, origin in zip(snap.context, snap.agent.origins, strict=True):
            out.print(
                f"-- {message.get('role')} "
                f"({origin['source']} {'at' if origin['source'] == 'recorded' else 'from'} step {origin['seq']})"
            )
            out.print(orjson.dumps(message, option=orjson.OPT_INDENT_2).decode())
        if snap.agent.recorded is not None:
            out.print("recorded context (not chat messages; not sent by a replay):")
            out.print(orjson.dumps(snap.agent.recorded, option=orjson.OPT_INDENT_2, default=str).decode())

"""`agent-replay`: a thin command line over the library.

Every command is a few lines that call replay_core and print: a table for people, or
JSON with --json for scripts. Bad input is one line on stderr and exit code 1.

A plain `stats` on a SQLite file is answered by the part above the imports of Typer, rich's
console and the Store (`_fast_stats`): those imports were most of its 0.4 s budget (issue 16).
"""
# ruff: noqa: E402  (the imports below the fast `stats` are where they are on purpose)

import sys
from typing import Any

import orjson


def print_json(value: Any) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str).decode() + "\n")


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4f}"
    if hasattr(value, "strftime"):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def _console(**options):
    from rich.console import Console

    return Console(highlight=False, markup=False, **options)


STATS_HEADINGS = {"success_rate": "success", "p50_ms": "p50 run s", "p95_ms": "p95 run s", "tokens_in": "tokens in",
                  "tokens_out": "tokens out", "cost_usd": "cost $", "retry_rate": "retry", "tool_failure_rate": "tool fail",
                  "fallback_rate": "fallback"}
STATS_VALUES = ("--since", "--until", "--by", "--db")  # `stats`' options that take a value; --json is its flag


def _stat(name: str, value: Any) -> str:
    if value is None:
        return "—"
    if name.endswith("_rate"):
        return f"{value:.1%}"
    if name.endswith("_ms"):
        return f"{value / 1000:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return _fmt(value)


def _show_stats(items: list[dict], by: str | None, json: bool, console=None) -> None:
    """`stats`' output; the console is made only for a table or "no runs" (rich's import: half of a fast `stats --json`)."""
    if json:
        print_json(items if by else items[0])
        return
    console = console or _console(soft_wrap=True)
    if not items:
        console.print("no runs")
        return
    from rich.table import Table

    if by is None:  # one group: a metric a line
        table = Table("metric", "value")
        for k, v in items[0].items():
            table.add_row(STATS_HEADINGS.get(k, k), _stat(k, v))
    else:
        table = Table(*(STATS_HEADINGS.get(k, k) for k in items[0]))
        for item in items:
            table.add_row(*(_stat(k, v) for k, v in item.items()))
    console.print(table)


def _stats_args(args: list[str]) -> dict | None:
    """`stats`' options when each is given plainly and once (`--by model`, `--by=model`, `--json`);
    None for anything else, which Typer parses and reports in its words."""
    given: dict[str, Any] = {}
    rest = iter(args)
    for arg in rest:
        name, eq, value = arg.partition("=")
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


def _fast_stats(args: list[str]) -> bool:
    """`stats` without a time filter on a SQLite file, read by storage.plain (sqlite3, no SQLAlchemy)
    and printed by the same code as the command; False, having printed nothing, wherever the
    command itself must answer (another command, help, an error, PostgreSQL, an old schema, a run to expire…)."""
    given = _stats_args(args[1:]) if args[:1] == ["stats"] else None
    if given is None or given.get("since") or given.get("until"):
        return False
    from .storage.plain import open_reader
    from .understand.headline import DIMENSIONS, headline

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
    _show_stats(items, by, given.get("json", False))
    return True


if __name__ == "__main__" and _fast_stats(sys.argv[1:]):
    sys.exit()

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from .storage.actor import PermissionDenied, local
from .storage.store import SessionFilter, Store

app = typer.Typer(help="Record, import, inspect, replay and compare AI agent runs.", no_args_is_help=True, add_completion=False)
db_app = typer.Typer(help="Database maintenance.", no_args_is_help=True)
app.add_typer(db_app, name="db")

out = _console(soft_wrap=True)
err = _console(stderr=True, soft_wrap=True)  # messages name files: folded at the width, a path would break

DbOption = Annotated[str | None, typer.Option("--db", help="Database URL or SQLite path (default: AGENT_REPLAY_DB_URL, else data/agent_replay.db).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
RunsOption = Annotated[list[str] | None, typer.Option("--runs", "--sessions", help="Run ids (repeat the option, or comma-separated).")]
FromFilterOption = Annotated[str | None, typer.Option("--from-filter", help="The runs a filter matches: 'status=failed model=gpt-4o agent=… workflow=… since=7d search=…'.")]
StatusOption = Annotated[str | None, typer.Option("--status", help="Runs with this status.")]
WorkflowOption = Annotated[str | None, typer.Option("--workflow", help="Runs of this workflow.")]
SinceOption = Annotated[str | None, typer.Option("--since", help="Runs started since: 7d, 12h, a date or an ISO time.")]
SearchOption = Annotated[str | None, typer.Option("--search", help="Runs whose name or steps hold this text.")]
ExpectedOption = Annotated[str | None, typer.Option("--expected", help="What counts as right for these cases (default: the original's final answer).")]


class CliError(Exception):
    """Bad input: reported as one line, never a traceback."""


def fail(message: str) -> None:
    raise CliError(message)


def open_store(db: str | None) -> Store:
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


def _when(value: Any) -> str:
    return "time not recorded" if value is None else _fmt(value)


# ---------------------------------------------------------------------------- import / export


def _check_format(name: str) -> None:
    """--format: auto, or a reader that exists (else one line naming the known ones)."""
    from .ingest.formats import get_format

    if name != "auto":
        try:
            get_format(name)
        except ValueError as exc:
            fail(f"--format: {exc}")


@app.command("import")
def import_cmd(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders (read recursively) to import.")],
    format: Annotated[str, typer.Option("--format", help="auto, or a format name (forces that reader).")] = "auto",
    db: DbOption = None,
    skip_bad: Annotated[bool, typer.Option("--skip-bad", help="Import the good records of a file with bad ones, reporting each bad one.")] = False,
    replace: Annotated[bool, typer.Option("--replace", help="Let the files change the end, status, name and outcome of runs "
                                          "that already ended (otherwise those are kept and each run is reported).")] = False,
    json: JsonOption = False,
) -> None:
    """Import trace files (format detected from content); every file is accounted for or refused."""
    from .ingest.pipeline import ImportRejected, IngestReport, files_under, import_bytes
    from .storage.store import WriteRefused

    _check_format(format)
    store = open_store(db)
    actor = cli_actor()
    total = IngestReport()
    refused: list[str] = []
    files = list(files_under(paths))
    progress = _progress(enabled=not json and sys.stderr.isatty())
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
                report = import_bytes(store, data, str(path), fmt=format, skip_bad=skip_bad, replace=replace,
                                      progress=lambda n: progress.update(records, completed=n), actor=actor)
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


@app.command("watch")
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
    from .ingest.watch import Watcher, parse_duration

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


def _progress(enabled: bool):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, disable=not enabled, transient=True,
    )


@app.command("export")
def export_cmd(
    sessions: Annotated[list[str] | None, typer.Argument(help="Session ids.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Export every session.")] = False,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="File to write (default: stdout).")] = None,
    format: Annotated[str, typer.Option("--format", help="native (JSONL), or otlp-json (OpenTelemetry GenAI spans).")] = "native",
    db: DbOption = None,
) -> None:
    """Export sessions as native JSONL, or as OTLP/JSON for OpenTelemetry tools."""
    from .ingest.formats import native, otlp_export

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


# ---------------------------------------------------------------------------- reading


def session_summary_row(row: dict, cycles: int | None = None) -> dict:
    keys = ("id", "name", "status", "model", "agent_id", "workflow", "environment", "agent_version", "source",
            "started_at", "ended_at", "steps", "tokens_in", "tokens_out", "cost_usd", "totals_source", "errors", "tags", "replay_of")
    out = {k: row.get(k) for k in keys}
    if cycles is not None:
        out["cycles"] = cycles
    return out


@app.command("sessions")
def sessions_cmd(
    status: Annotated[str | None, typer.Option(help="running, succeeded, failed, incomplete, unknown (ended, outcome not recorded)")] = None,
    model: Annotated[str | None, typer.Option()] = None,
    agent: Annotated[str | None, typer.Option(help="agent_id")] = None,
    limit: Annotated[int, typer.Option()] = 50,
    search: SearchOption = None,
    replays: Annotated[bool, typer.Option("--replays", help="Also list what-if replays and experiments' runs.")] = False,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """List sessions, newest first (original runs only, unless --replays; with --search, each with its first matching step)."""
    from .events import SessionStatus
    from .understand.timeline import count_cycles

    if status is not None and status not in set(SessionStatus):
        fail(f"--status: expected one of {', '.join(SessionStatus)}, got {status!r}")
    store = open_store(db)
    store.expire_idle()
    rows = store.list_sessions(SessionFilter(status=status, model=model, agent_id=agent, text=search, include_replays=replays,
                                             experiments=replays), limit=limit)
    cycles = count_cycles(store, [r["id"] for r in rows])
    items = [session_summary_row(r, cycles.get(r["id"], 0)) for r in rows]
    matches = store.search_matches([r["id"] for r in rows], search) if search else {}
    if search:
        for item in items:
            item["match"] = matches.get(item["id"])
    if json:
        print_json(items)
        return
    table = Table("id", "name", "status", "model", "agent", "started", "steps", "cycles", "tokens", "cost $", *(["match"] if search else []))
    for r in items:
        table.add_row(r["id"], _fmt(r["name"]), r["status"], _fmt(r["model"]), _fmt(r["agent_id"]), _when(r["started_at"]),
                      str(r["steps"]), str(r["cycles"]), str(r["tokens_in"] + r["tokens_out"]), _fmt(r["cost_usd"]),
                      *([_match_cell(r["match"])] if search else []))
    out.print(table)


def _match_cell(match: dict | None):
    """The matched step as plain text (never rich markup: the snippet is stored text), or how the run matched."""
    from rich.text import Text

    from .storage.search import plain

    return Text(f"step {match['seq']}: {plain(match['snippet'])}" if match else "(its name)")


@app.command("show")
def show_cmd(
    session: Annotated[str, typer.Argument(help="Session id.")],
    step: Annotated[int | None, typer.Option("--step", help="Also show the state at this step (seq).")] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """A session: its steps, cycles, gaps, and optionally the state at one step."""
    from .understand.snapshot import state_at
    from .understand.timeline import open_timeline

    store = open_store(db)
    store.expire_idle()
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
            "session": session_summary_row(tl.session, len(tl.cycles)) | {"outcome": tl.session.get("outcome"), "error_class": tl.session.get("error_class")},
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
    out.print(f"status {s['status']}  model {_fmt(s.get('model'))}  agent {_fmt(s.get('agent_id'))}  started {_when(s.get('started_at'))}")
    source = {"source": " (the source's run totals)", "steps+source": " (steps, and the source's run totals)"}.get(s.get("totals_source"), "")
    out.print(f"tokens {s['tokens_in']:,} in / {s['tokens_out']:,} out  cost {_fmt(s.get('cost_usd'))}{source}")
    out.print(tl.summary())
    table = Table("seq", "cycle", "type", "status", "tool", "content")
    gap_after = {g.first_missing - 1: g for g in tl.gaps}
    for st, cyc in zip(tl.steps, tl.cycle_index, strict=True):
        text = (st.content or (orjson.dumps(st.tool_args).decode() if st.tool_args is not None else "")).replace("\n", " ")
        table.add_row(str(st.seq), _fmt(cyc), st.type, st.status, _fmt(st.tool_name), text[:100])
        if st.seq in gap_after:
            table.add_row("…", "", "", "", "", gap_after[st.seq].label)
    out.print(table)
    if snap:
        out.print(f"\nstate at step {snap.step.seq} (cycle {_fmt(snap.cycle)}):")
        out.print(f"totals: {snap.totals}")
        if snap.state:
            out.print(f"source state: {snap.state}")
        out.print(f"context ({snap.context_source}): {snap.agent.note()}")
        for message, origin in zip(snap.context, snap.agent.origins, strict=True):
            out.print(f"-- {message.get('role')} ({origin['source']} {'at' if origin['source'] == 'recorded' else 'from'} step {origin['seq']})")
            out.print(orjson.dumps(message, option=orjson.OPT_INDENT_2).decode())
        if snap.agent.recorded is not None:
            out.print("recorded context (not chat messages; not sent by a replay):")
            out.print(orjson.dumps(snap.agent.recorded, option=orjson.OPT_INDENT_2, default=str).decode())


@app.command("stats")
def stats_cmd(
    since: Annotated[str | None, typer.Option("--since", help="From this date (2026-05-01) or ISO date-time.")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Up to this date (included) or ISO date-time.")] = None,
    by: Annotated[str | None, typer.Option("--by", help="Group by: day, hour, model, agent, workflow, environment, agent_version, tag, status.")] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Headline run metrics, optionally per group. p50_ms / p95_ms are run durations."""
    from .understand.headline import DIMENSIONS, headline

    if by is not None and by not in DIMENSIONS:
        fail(f"--by: unknown dimension {by!r}; expected one of {', '.join(DIMENSIONS)}")
    flt = SessionFilter()
    if since or until:  # parsed as the API parses them; server.api is a tenth of a second to import, so only then
        from .server.api import session_filter

        try:
            flt = session_filter({"since": since or "", "until": until or ""})
        except ValueError as exc:
            fail(f"--{exc}")
    store = open_store(db)
    store.expire_idle()
    _show_stats(headline(store, flt, by), by, json, out)


# ---------------------------------------------------------------------------- replay / compare


@app.command("replay")
def replay_cmd(
    session: Annotated[str, typer.Argument(help="Session id to replay.")],
    model: Annotated[list[str], typer.Option("--model", help="litellm model string (e.g. openai/gpt-4o-mini) or 'recorded'; repeat to fan out.")],
    from_step: Annotated[int | None, typer.Option("--from", help="First step (seq) to replay (default: the first).")] = None,
    to_step: Annotated[int | None, typer.Option("--to", help="Last step (seq) to replay (default: the last).")] = None,
    fallback_model: Annotated[str | None, typer.Option("--fallback-model", help="With --model recorded: the live model asked where the recording has no answer.")] = None,
    api_base: Annotated[str | None, typer.Option("--api-base", help="OpenAI-compatible server (vLLM, Ollama, LM Studio), e.g. http://127.0.0.1:11434/v1.")] = None,
    api_key_env: Annotated[str | None, typer.Option("--api-key-env", help="NAME of the environment variable holding the API key.")] = None,
    temperature: Annotated[float | None, typer.Option("--temperature")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens")] = None,
    param: Annotated[list[str] | None, typer.Option("--param", help="Another litellm parameter as NAME=VALUE (VALUE read as JSON when it parses); repeatable.")] = None,
    tool_mode: Annotated[str, typer.Option("--tool-mode", help="recorded: answer tool calls from the recording; none: offer the model no tools.")] = "recorded",
    system_prompt: Annotated[Path | None, typer.Option("--system-prompt", help="File with the system prompt to use.")] = None,
    system_mode: Annotated[str, typer.Option("--system-mode", help="replace the original system prompt, or append to it.")] = "replace",
    max_steps: Annotated[int | None, typer.Option("--max-steps", help="Budget: steps (default: twice the range plus 20).")] = None,
    max_cost: Annotated[float | None, typer.Option("--max-cost", help="Budget: USD of known cost.")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Budget: seconds per replay.")] = 600.0,
    call_timeout: Annotated[float, typer.Option("--call-timeout", help="Seconds one model call may take.")] = 60.0,
    workers: Annotated[int, typer.Option("--workers", help="Replays run at once.")] = 4,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Re-run steps --from..--to of a session with other models (what-if), and compare each replay with it."""
    from .whatif.replay import ReplayError, estimate, replay_many
    from .whatif.replay_config import Budget, ConfigError, configs_for, parse_params

    store = open_store(db)
    try:
        prompt = system_prompt.read_text() if system_prompt else None
    except OSError as exc:
        fail(f"--system-prompt: cannot read {system_prompt}: {exc.strerror or exc}")
    try:
        configs = configs_for(
            model, fallback_model=fallback_model, api_base=api_base, api_key_env=api_key_env, temperature=temperature,
            max_tokens=max_tokens, system_prompt=prompt, system_mode=system_mode, params=parse_params(param or []),
            tool_mode=tool_mode, request_timeout_s=call_timeout,
            budget=Budget(max_steps=max_steps, max_cost_usd=max_cost, timeout_s=timeout),
        )
        estimates = estimate(store, session, from_step, to_step, configs)
        if not json:
            for e in estimates:
                cost = "unknown cost" if e.cost_usd is None else f"~${e.cost_usd:.4f}"
                out.print(f"estimate {e.model}: {e.turns} model turns, ~{e.tokens_in:,} tokens in, ~{e.tokens_out:,} out, {cost}")
        results = replay_many(store, session, from_step, to_step, configs, max_workers=workers, actor=cli_actor())
    except (ReplayError, ConfigError) as exc:
        fail(str(exc))
    if json:
        print_json({"source": session, "estimate": [e.to_dict() for e in estimates], "replays": [r.to_dict() for r in results]})
    else:
        for r in results:
            cost = "unknown" if r.cost_usd is None else f"${r.cost_usd:.4f}"
            out.print(f"\n{r.model} → {r.session}")
            out.print(f"  {r.status} ({r.outcome}: {r.message}); {r.steps} steps, {r.tokens_in:,} tokens in, {r.tokens_out:,} out, cost {cost}")
            out.print(f"  first divergence: {r.first_divergence['summary'] if r.first_divergence else 'none'}")
    if results and all(r.outcome in REPLAY_FAILED for r in results):
        err.print(f"no replay ran: {', '.join(f'{r.model}: {r.error_class or r.outcome}' for r in results)}")
        raise typer.Exit(1)


REPLAY_FAILED = ("provider_error", "error")  # outcomes of a replay that could not run (the others ran, whatever they found)


@app.command("explain")
def explain_cmd(
    session: Annotated[str, typer.Argument(help="Session id of a failed, incomplete or unknown-outcome run.")],
    json: JsonOption = False,
    replays: Annotated[bool, typer.Option("--replays", help="Also compare with successful replays.")] = False,
    db: DbOption = None,
) -> None:
    """Why did this run fail? Turning point, causal chain and contradictions, from what is recorded (no model)."""
    from .understand.explain import ExplainError, explain

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
        out.print(f"\nturning point: step {_fmt(tp.seq)} against step {_fmt(tp.compared_seq)} of {tp.compared_with} ({tp.kind})")
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


@app.command("compare")
def compare_cmd(
    a: Annotated[str, typer.Argument(help="Session A (e.g. the original).")],
    b: Annotated[str, typer.Argument(help="Session B (e.g. a replay).")],
    include: Annotated[list[str] | None, typer.Option("--include", help="Also compare: ids, timing, tokens, cost, model.")] = None,
    whole: Annotated[bool, typer.Option("--whole", help="Compare a replay with its whole source, not only the replayed range.")] = False,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Align two runs step by step and name the first step where they differ."""
    from .understand.compare import compare

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
        step = row.a or row.b
        table.add_row(_fmt(row.a.seq if row.a else None), mark, _fmt(row.b.seq if row.b else None), step.type,
                      _fmt(step.tool_name), row.kind or "")
    out.print(table)
    totals = Table("", "A", "B")
    for key in result.totals["a"]:
        totals.add_row(key, _fmt(result.totals["a"][key]), _fmt(result.totals["b"][key]))
    out.print(totals)


@app.command("video")
def video_cmd(
    session: Annotated[str, typer.Argument(help="The run to film.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="run.mp4, run.webm or run.gif")],
    fps: Annotated[float, typer.Option("--fps", help="Frames per second.")] = 2.0,
    max_seconds: Annotated[float, typer.Option("--max-seconds", help="Cut longer videos here (a note says so).")] = 300,
    from_seq: Annotated[int | None, typer.Option("--from", help="First step (seq).")] = None,
    to_seq: Annotated[int | None, typer.Option("--to", help="Last step (seq).")] = None,
    compare_with: Annotated[str | None, typer.Option("--compare", help="Film this run beside the other, aligned, the first divergence marked.")] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """A video of a run's screenshots (or cards with the step's text where it has none), with a caption per step."""
    from .media import video

    store = open_store(db)
    try:
        if compare_with:
            from .understand.compare import compare

            try:
                result = compare(store, session, compare_with)
            except KeyError as exc:
                fail(f"no such session: {exc.args[0]}")
            div = result.first_divergence
            report = video.export_pair(store, session, compare_with, result.seq_pairs, output, fps=fps,
                                       max_seconds=max_seconds, first_divergence=div.row if div else None)
        else:
            report = video.export(store, session, output, fps=fps, max_seconds=max_seconds, from_seq=from_seq, to_seq=to_seq)
    except ValueError as exc:
        fail(str(exc))
    if json:
        print_json(report.__dict__)
        return
    cut = " (cut at --max-seconds; the last frame says so)" if report.truncated else ""
    out.print(f"wrote {report.path}: {report.steps} steps, {report.frames} frames, {report.seconds:.1f} s{cut}")


# ---------------------------------------------------------------------------- maintenance


@app.command("demo")
def demo_cmd(
    db: DbOption = None,
    force: Annotated[bool, typer.Option("--force", help="Load even when the database already has sessions.")] = False,
) -> None:
    """Load the demo runs (into an empty database unless --force)."""
    from .demo import load_demo

    store = open_store(db)
    report = load_demo(store, only_if_empty=not force)
    if report is None:
        out.print("database already has sessions; demo not loaded (use --force)")
    else:
        out.print(f"loaded {len(report.sessions)} demo sessions, {report.steps} steps")


@db_app.command("upgrade")
def db_upgrade(db: DbOption = None) -> None:
    """Apply schema migrations (also done automatically on start)."""
    store = open_store(db)
    out.print(f"database at newest schema: {store.engine.url.render_as_string(hide_password=True)}")


@db_app.command("rebuild-rollups")
def db_rebuild_rollups(db: DbOption = None) -> None:
    """Recompute every run's rollups (what analytics and lists count) from its stored steps."""
    runs = open_store(db).rebuild_rollups()
    out.print(f"rollups rebuilt for {runs:,} runs")


@app.command("deliver-spool")
def deliver_spool_cmd(
    to: Annotated[str | None, typer.Option("--to", help="Where the recorder was sending: a database URL or the app's http(s) URL "
                                            "(default: the recorder's own default).")] = None,
    token: Annotated[str | None, typer.Option("--token", help="API token for an http(s) destination (default: AGENT_REPLAY_TOKEN).")] = None,
    spool_dir: Annotated[Path | None, typer.Option("--spool-dir", help="Spool folder (default: AGENT_REPLAY_SPOOL_DIR, "
                                                    "else ~/.cache/agent-replay/spool).")] = None,
) -> None:
    """Send what recorders kept in their local spool (their destination was down) to that destination now."""
    from .sdk.recorder import Recorder

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


@app.command("retention")
def retention_cmd(
    days: Annotated[float, typer.Option("--days", help="Delete runs that started more than this many days ago.")],
    keep_annotated: Annotated[bool, typer.Option("--keep-annotated", help="Keep runs that have review notes.")] = False,
    db: DbOption = None,
) -> None:
    """Delete old runs with everything attached to them."""
    if days <= 0:
        fail("--days must be more than 0")
    n = open_store(db).delete_older_than(days, keep_annotated=keep_annotated)
    out.print(f"deleted {n} sessions older than {days:g} days")

# ---------------------------------------------------------------------------- datasets and experiments

dataset_app = typer.Typer(help="Datasets: named, versioned sets of recorded runs to run experiments on.", no_args_is_help=True)
experiment_app = typer.Typer(help="Experiments: replay every case of a dataset with every model, scored.", no_args_is_help=True)
app.add_typer(dataset_app, name="dataset")
app.add_typer(experiment_app, name="experiment")


def _cases(store: Store, runs, status, workflow, since, search, expected, from_filter=None):
    from .whatif import dataset as ds

    flt = None
    runs = [r.strip() for item in runs or [] for r in item.split(",") if r.strip()]
    if not runs:
        if from_filter:
            flt = ds.parse_filter(from_filter)
        elif not any((status, workflow, since, search)):
            fail("name the runs (--sessions ID …) or a filter (--from-filter 'status=… model=…', --status, --workflow, --since, --search)")
        else:
            flt = SessionFilter(status=status, workflow=workflow, since=ds.parse_since(since) if since else None, text=search)
    return ds.resolve(store, runs=runs, flt=flt, expected=expected)


def _print_dataset(made: dict, json: bool) -> None:
    if json:
        print_json({"id": made["id"], "name": made["name"], "version": made["version"], "cases": made["cases"]})
    else:
        out.print(f"dataset {made['name']} (id {made['id']}, version {made['version']}): {made['cases']} cases")


@dataset_app.command("create")
def dataset_create(
    name: Annotated[str, typer.Argument(help="Dataset name.")],
    runs: RunsOption = None, status: StatusOption = None, workflow: WorkflowOption = None, since: SinceOption = None,
    search: SearchOption = None, expected: ExpectedOption = None, from_filter: FromFilterOption = None,
    from_queue: Annotated[int | None, typer.Option("--from-queue", help="The runs of this review queue, judged by what its reviewers said they should have done.")] = None,
    match: Annotated[str, typer.Option("--match", help="How expected texts are matched: equals (normalised), contains, regex.")] = "equals",
    description: Annotated[str | None, typer.Option("--description")] = None,
    db: DbOption = None, json: JsonOption = False,
) -> None:
    """Make a dataset from run ids, a filter or a review queue."""
    from .whatif import dataset as ds

    store = open_store(db)
    try:
        if from_queue is not None:
            made = _dataset_from_queue(store, name, from_queue, expected, match, description)
        else:
            cases, made_from = _cases(store, runs, status, workflow, since, search, expected, from_filter)
            made = ds.create(store, name, cases, match=match, description=description, made_from=made_from)
    except ds.DatasetError as exc:
        fail(str(exc))
    _print_dataset(made, json)


def _dataset_from_queue(store: Store, name: str, queue_id: int, expected: str | None, match: str, description: str | None) -> dict:
    """A review queue's runs, each judged by what its reviewers said it should have done (else `expected`, else its outcome)."""
    from .team import queues
    from .whatif import dataset as ds

    try:
        ids, wanted = queues.dataset_cases(queues.results(store, queue_id))
    except queues.QueueError as exc:
        raise ds.DatasetError(str(exc)) from None
    if not ids:
        raise ds.DatasetError(f"queue {queue_id}: none of its runs is still stored")
    per_run = {sid: wanted.get(sid, expected) for sid in ids} if expected else wanted
    return ds.dataset_from_sessions(store, name, ids, expected=per_run, match=match, description=description,
                                    made_from={"queue": queue_id})


@dataset_app.command("add")
def dataset_add(
    name: Annotated[str, typer.Argument(help="Dataset name.")],
    runs: RunsOption = None, status: StatusOption = None, workflow: WorkflowOption = None, since: SinceOption = None,
    search: SearchOption = None, expected: ExpectedOption = None, from_filter: FromFilterOption = None,
    db: DbOption = None, json: JsonOption = False,
) -> None:
    """Add runs to a dataset (its next version); runs it holds already are skipped."""
    from .whatif import dataset as ds

    store = open_store(db)
    try:
        cases, made_from = _cases(store, runs, status, workflow, since, search, expected, from_filter)
        made = ds.add(store, name, cases, made_from=made_from)
    except ds.DatasetError as exc:
        fail(str(exc))
    if json:
        print_json({k: made[k] for k in ("id", "name", "version", "cases", "added")})
        return
    out.print(f"dataset {made['name']}: {made['added']} cases added, {made['cases']} in all (version {made['version']})")


@dataset_app.command("list")
def dataset_list(db: DbOption = None, json: JsonOption = False) -> None:
    """Datasets with their case counts."""
    rows = open_store(db).list_datasets()
    if json:
        print_json([{k: r[k] for k in ("id", "name", "version", "cases", "match", "description", "updated_at")} for r in rows])
        return
    table = Table("id", "name", "version", "cases", "match", "updated")
    for r in rows:
        table.add_row(str(r["id"]), r["name"], str(r["version"]), str(r["cases"]), r["match"], _fmt(r["updated_at"]))
    out.print(table)


@dataset_app.command("show")
def dataset_show(name: Annotated[str, typer.Argument()], db: DbOption = None, json: JsonOption = False) -> None:
    """A dataset's cases: run, status, what counts as right."""
    from .whatif import dataset as ds

    try:
        shown = ds.show(open_store(db), name)
    except ds.DatasetError as exc:
        fail(str(exc))
    if json:
        print_json(shown)
        return
    out.print(f"dataset {shown['name']} (id {shown['id']}, version {shown['version']}, match {shown['match']}): {len(shown['cases'])} cases")
    table = Table("run", "name", "status", "expected", "version")
    for c in shown["cases"]:
        table.add_row(c["session"], _fmt(c["name"]), "run deleted" if c["missing"] else _fmt(c["status"]),
                      c["expected"] if c["expected"] is not None else "(the original's final answer)", str(c["version"]))
    out.print(table)


@dataset_app.command("export")
def dataset_export(
    name: Annotated[str, typer.Argument()],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="File to write (default: stdout).")] = None,
    db: DbOption = None,
) -> None:
    """Write a dataset as JSON Lines (the runs themselves: `agent-replay export`)."""
    from .whatif import dataset as ds

    try:
        text = "".join(line + "\n" for line in ds.export_lines(open_store(db), name))
    except ds.DatasetError as exc:
        fail(str(exc))
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text)


@dataset_app.command("import")
def dataset_import(
    path: Annotated[Path, typer.Argument(help="A dataset's JSON Lines.")],
    name: Annotated[str | None, typer.Option("--name", help="Store it under another name.")] = None,
    db: DbOption = None, json: JsonOption = False,
) -> None:
    """Read a dataset written by `dataset export`; the runs must be in the database."""
    from .whatif import dataset as ds

    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        fail(f"{path}: {exc.strerror or exc}")
    try:
        made = ds.import_lines(open_store(db), lines, where=str(path), name=name)
    except ds.DatasetError as exc:
        fail(str(exc))
    _print_dataset(made, json)



def _print_results(summary: dict) -> None:
    out.print(f"experiment {summary['experiment']} on {summary['dataset']}: {summary['status']}"
              + (f" ({summary['message']})" if summary["message"] else ""))
    table = Table("variant", "cases", "passed", "pass rate", "95% interval (Wilson)", "cost $", "tokens in", "tokens out", "p50 ms", "p95 ms")
    for v in summary["variants"]:
        rate = "—" if v["pass_rate"] is None else f"{v['pass_rate']:.0%}"
        table.add_row(v["name"], str(v["cases"]), str(v["passed"]), rate, f"{v['ci'][0]:.0%}–{v['ci'][1]:.0%}",
                      "unknown" if v["cost_usd"] is None else f"{v['cost_usd']:.4f}", str(v["tokens_in"]), str(v["tokens_out"]),
                      _fmt(v["p50_ms"]), _fmt(v["p95_ms"]))
    out.print(table)
    for v in summary["variants"]:
        if v["refused"]:
            out.print(f"{v['name']}: {v['refused']} cases refused (not counted), e.g. {v['refusals'][0]['case']}: {v['refusals'][0]['reason']}")
        if v["tool_results"]["live"]:
            out.print(f"{v['name']}: {v['tool_results']['live']} tool answers from live functions, {v['tool_results']['recorded']} from the recording")
    for title, items in (("regressions (passed on the baseline, fail here)", summary["regressions"]),
                         ("improvements", summary["improvements"])):
        if items:
            out.print(f"{title}:")
            for r in items:
                out.print(f"  {r['case']} · {r['variant']}: {r['reason'] or ''} → agent-replay compare {r['baseline']} {r['session']}")


def _run_with_progress(store: Store, experiment_id: str, json: bool, **options) -> None:
    """Run on a worker thread; Ctrl-C stops launching cases (those in flight finish, `experiment resume` goes on)."""
    import threading

    from .whatif import experiment as ex

    stop = threading.Event()
    failure: list[BaseException] = []
    progress = _progress(enabled=not json and sys.stderr.isatty())
    with progress:
        tasks: dict[int, int] = {}

        def report(p: ex.Progress) -> None:
            names = store.get_experiment(experiment_id)["settings"]["names"] if not tasks else None
            for v, done in enumerate(p.done):
                if v not in tasks:
                    tasks[v] = progress.add_task(names[v] if names else f"variant {v}", total=p.total)
                progress.update(tasks[v], completed=done)

        def work() -> None:
            try:
                ex.run(store, experiment_id, stop=stop, on_progress=report, **options)
            except BaseException as exc:  # reported below, on the main thread
                failure.append(exc)

        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        while worker.is_alive():
            try:
                worker.join(0.2)
            except KeyboardInterrupt:
                stop.set()
                err.print("stopping: the cases in flight finish; `agent-replay experiment resume` runs the rest")
    if failure:
        if isinstance(failure[0], ValueError):
            fail(str(failure[0]))
        raise failure[0]


def _show(store: Store, experiment_id: str, json: bool) -> None:
    from .whatif.results import cli_shape, summarise

    summary = summarise(store, experiment_id)
    if json:
        print_json(cli_shape(summary))
    else:
        _print_results(summary)


@experiment_app.command("run")
def experiment_run(
    dataset: Annotated[str, typer.Argument(help="Dataset name.")],
    model: Annotated[list[str] | None, typer.Option("--model", help="A variant's litellm model (repeat; the first is the baseline).")] = None,
    variant: Annotated[list[str] | None, typer.Option("--variant", help='A variant as JSON replay settings, e.g. {"model": "openai/x", "temperature": 0.2} (repeatable).')] = None,
    start: Annotated[str, typer.Option("--from", help="first-model-turn, a step number, or a step kind per case: 'last user_message', 'first model_turn after first tool_error'.")] = "first-model-turn",
    step_type: Annotated[str | None, typer.Option("--from-step-type", help="Replay each case from its first step of this kind (tool_error, user_message, input, decision, …); a run without one is refused, counted.")] = None,
    tool: Annotated[list[str] | None, typer.Option("--tool", help="A live tool function, NAME=module:function (or module:TOOLS, a dict); repeatable.")] = None,
    tool_mode: Annotated[str, typer.Option("--tool-mode", help="recorded: the recording's tool answers, live functions only where it has none; live: the --tool functions first.")] = "recorded",
    scorer: Annotated[list[str] | None, typer.Option("--scorer", help="outcome, final_tool, tool_sequence, no_divergence, cost_ceiling, latency_ceiling, judge, or module:function (repeatable; default outcome).")] = None,
    scorer_option: Annotated[list[str] | None, typer.Option("--scorer-option", help="SCORER.NAME=VALUE, e.g. tool_sequence.threshold=0.9, judge.model=openai/gpt-4o-mini (repeatable).")] = None,
    api_base: Annotated[str | None, typer.Option("--api-base", help="OpenAI-compatible server for every variant.")] = None,
    api_key_env: Annotated[str | None, typer.Option("--api-key-env", help="NAME of the environment variable holding the API key.")] = None,
    temperature: Annotated[float | None, typer.Option("--temperature")] = None,
    param: Annotated[list[str] | None, typer.Option("--param", help="Another litellm parameter as NAME=VALUE; repeatable.")] = None,
    fallback_model: Annotated[str | None, typer.Option("--fallback-model", help="With --model recorded: the live model asked where the recording has no answer.")] = None,
    input_price: Annotated[float | None, typer.Option("--input-cost-per-token", help="USD per input token, for models litellm has no price for.")] = None,
    output_price: Annotated[float | None, typer.Option("--output-cost-per-token", help="USD per output token, likewise.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Replays at once.")] = 4,
    budget_usd: Annotated[float | None, typer.Option("--budget-usd", help="Dollar budget for the whole experiment.")] = None,
    budget_tokens: Annotated[int | None, typer.Option("--budget-tokens", help="Token budget for the whole experiment.")] = None,
    db: DbOption = None, json: JsonOption = False,
) -> None:
    """Replay every case of a dataset with every model, score each replay, and tabulate (estimate and budget checked first)."""
    from .whatif import experiment as ex
    from .whatif.replay_config import ConfigError, ReplayConfig, configs_for, parse_params

    store = open_store(db)
    try:
        shared = {"api_base": api_base, "api_key_env": api_key_env, "temperature": temperature, "params": parse_params(param or []),
                  "input_cost_per_token": input_price, "output_cost_per_token": output_price, "tool_mode": tool_mode}
        tools = ex.load_tools(tool or [])
        configs = configs_for(model, fallback_model=fallback_model, **shared) if model else []
        for text in variant or []:
            try:
                settings = orjson.loads(text)
            except orjson.JSONDecodeError:
                fail(f"--variant: not JSON: {text}")
            if not isinstance(settings, dict):
                fail("--variant: expected a JSON object")
            configs.append(ReplayConfig.from_json({**{k: v for k, v in shared.items() if v not in (None, {})}, **settings}))
        options: dict[str, dict] = {}
        for item in scorer_option or []:
            key, sep, value = item.partition("=")
            name, dot, option = key.partition(".")
            if not sep or not dot:
                fail(f"--scorer-option: expected SCORER.NAME=VALUE, got {item!r}")
            options.setdefault(name, {}).update(parse_params([f"{option}={value}"]))
        experiment_id, plan = ex.start(store, dataset, configs, start=step_type or start, scorers=scorer, scorer_options=options,
                                       concurrency=concurrency, budget_usd=budget_usd, budget_tokens=budget_tokens, tools=tools)
    except (ex.ExperimentError, ConfigError) as exc:
        fail(str(exc))
    if not json:
        for e in plan.estimates:
            cost = "unknown cost" if e.cost_usd is None else f"~${e.cost_usd:.4f}"
            out.print(f"estimate {e.model}: {len(plan.cases)} cases, ~{e.tokens_in:,} tokens in, ~{e.tokens_out:,} out, {cost}")
        if plan.unplayable:
            out.print(f"{len(plan.unplayable)} cases will be refused (not replayable from {plan.start.spec}), e.g. "
                      + "; ".join(f"{k}: {v}" for k, v in list(plan.unplayable.items())[:3]))
        out.print(f"experiment {experiment_id}")
    _run_with_progress(store, experiment_id, json, tools=tools)
    _show(store, experiment_id, json)


@experiment_app.command("resume")
def experiment_resume(
    experiment_id: Annotated[str, typer.Argument()],
    budget_usd: Annotated[float | None, typer.Option("--budget-usd", help="A new dollar budget for the whole experiment.")] = None,
    budget_tokens: Annotated[int | None, typer.Option("--budget-tokens")] = None,
    tool: Annotated[list[str] | None, typer.Option("--tool", help="The live tool functions the experiment was run with (as for run).")] = None,
    db: DbOption = None, json: JsonOption = False,
) -> None:
    """Run what an interrupted or budget-stopped experiment did not run (finished replays are never paid for again)."""
    from .whatif import experiment as ex

    store = open_store(db)
    if store.get_experiment(experiment_id) is None:
        fail(f"no experiment {experiment_id!r}")
    try:
        tools = ex.load_tools(tool or [])
    except ex.ExperimentError as exc:
        fail(str(exc))
    _run_with_progress(store, experiment_id, json, budget_usd=budget_usd, budget_tokens=budget_tokens, tools=tools)
    _show(store, experiment_id, json)


@experiment_app.command("show")
def experiment_show(
    experiment_id: Annotated[str, typer.Argument()],
    csv: Annotated[Path | None, typer.Option("--csv", help="Also write the cases × variants matrix as CSV here.")] = None,
    db: DbOption = None, json: JsonOption = False,
) -> None:
    """An experiment's results: per variant pass rate and interval, cost, latency; regressions first."""
    from .whatif.results import summarise, to_csv

    store = open_store(db)
    if store.get_experiment(experiment_id) is None:
        fail(f"no experiment {experiment_id!r}")
    if csv is not None:
        csv.write_text(to_csv(summarise(store, experiment_id)))
    _show(store, experiment_id, json)


@experiment_app.command("compare")
def experiment_compare(
    a: Annotated[str, typer.Argument(help="Experiment A (the one to compare against).")],
    b: Annotated[str, typer.Argument(help="Experiment B.")],
    by_position: Annotated[bool, typer.Option("--by-position", help="Pair variants by position, not by name.")] = False,
    db: DbOption = None, json: JsonOption = False,
) -> None:
    """Per variant and scorer: the cases B improved or regressed against A, with Wilson intervals; what is not comparable, named."""
    from .whatif.experiment_compare import CompareError, compare_experiments

    try:
        found = compare_experiments(open_store(db), a, b, by_position=by_position)
    except CompareError as exc:
        fail(str(exc))
    if json:
        print_json(found)
        return
    cases = found["cases"]
    out.print(f"{a} → {b}: {cases['compared']} cases in both" + "".join(f"; {len(cases[k])} {k.replace('_', ' ')}" for k in ("only_in_a", "only_in_b") if cases[k]))
    for note in found["notes"]:
        out.print(f"note: {note}")
    for key, items in found["not_comparable"].items():
        if items:
            out.print(f"not comparable, {key.replace('_', ' ')}: {', '.join(items)}")
    table = Table("variant", "scorer", "cases", "A pass", "A 95% (Wilson)", "B pass", "B 95% (Wilson)", "improved", "regressed")

    def pct(r: dict) -> str:
        return "—" if r["pass_rate"] is None else f"{r['pass_rate']:.0%}"

    def band(r: dict) -> str:
        return f"{r['ci'][0]:.0%}–{r['ci'][1]:.0%}"

    for v in found["variants"]:
        table.add_row(v["variant"], "(all)", str(v["cases"]), pct(v["a"]), band(v["a"]), pct(v["b"]), band(v["b"]),
                      str(len(v["improved"])), str(len(v["regressed"])))
        for sc in v["scorers"]:
            table.add_row("", sc["scorer"], str(v["cases"]), pct(sc["a"]), band(sc["a"]), pct(sc["b"]), band(sc["b"]),
                          str(len(sc["improved"])), str(len(sc["regressed"])))
    out.print(table)
    for v in found["variants"]:
        for title, items in (("regressed", v["regressed"]), ("improved", v["improved"])):
            for r in items:
                out.print(f"  {title} {r['case']} · {v['variant']}: agent-replay compare {r['a_session']} {r['b_session']}")
        if v["not_scored_on_both"]:
            out.print(f"  {v['variant']}: {len(v['not_scored_on_both'])} cases not scored on both (pending or refused)")


@experiment_app.command("list")
def experiment_list(db: DbOption = None, json: JsonOption = False) -> None:
    """Experiments, newest first."""
    rows = open_store(db).list_experiments()
    items = [{"experiment": r["id"], "dataset": r["dataset"], "status": r["status"], "variants": r["settings"]["names"],
              "runs_done": r["runs_done"], "created_at": r["created_at"], "message": r["message"]} for r in rows]
    if json:
        print_json(items)
        return
    table = Table("experiment", "dataset", "status", "variants", "runs done", "created")
    for r in items:
        table.add_row(r["experiment"], r["dataset"], r["status"], ", ".join(r["variants"]), str(r["runs_done"]), _fmt(r["created_at"]))
    out.print(table)


@app.command("audit")
def audit_cmd(
    limit: Annotated[int, typer.Option("--limit", help="How many lines, newest first.")] = 100,
    action: Annotated[list[str] | None, typer.Option("--action", help="Only this action (import, replay, delete, replace, sign_in…); repeatable.")] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """The audit log: who imported, replayed, deleted, replaced or signed in, when and from where (editors only)."""
    from .team.audit import as_row, entries

    rows = [as_row(e) for e in entries(open_store(db), cli_actor(), limit=limit, actions=action or ())]
    if json:
        print_json({"entries": rows})
        return
    table = Table("when (UTC)", "who", "role", "from", "action", "outcome", "target")
    for r in rows:
        table.add_row(r["at"][:19].replace("T", " "), r["who"], r["role"], r["origin"], r["action"], r["outcome"], _fmt(r["target"]))
    out.print(table)
    out.print(f"{len(rows)} lines" + (" (newest first; --limit for more)" if len(rows) == limit else ""))


# ---------------------------------------------------------------------------- review queues and share links

queue_app = typer.Typer(help="Review queues: a set of runs to review one at a time, with a rubric.", no_args_is_help=True)
app.add_typer(queue_app, name="queue")


def _queue_filter(runs, status, model, agent, workflow, since, search) -> tuple[SessionFilter | None, list[str] | None]:
    from .events import SessionStatus
    from .whatif.dataset import DatasetError, parse_since

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


def _queue_id(store: Store, value: int) -> dict:
    from .team import queues

    try:
        return queues.get(store, value)
    except queues.QueueError as exc:
        fail(str(exc))


@queue_app.command("create")
def queue_create(
    name: Annotated[str, typer.Argument(help="What the queue is for, e.g. \"failed checkout runs this week\".")],
    runs: RunsOption = None, status: StatusOption = None,
    model: Annotated[str | None, typer.Option("--model", help="Runs of this model.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Runs of this agent_id.")] = None,
    workflow: WorkflowOption = None, since: SinceOption = None, search: SearchOption = None,
    rubric: Annotated[Path | None, typer.Option("--rubric", help="Rubric file (JSON, or TOML): verdicts, criteria, note, should_have.")] = None,
    reviews_per_item: Annotated[int, typer.Option("--reviews-per-item", help="Verdicts wanted per run, from different reviewers.")] = 1,
    assign: Annotated[list[str] | None, typer.Option("--assign", help="A reviewer's name (repeat; none: open to every reviewer).")] = None,
    db: DbOption = None, json: JsonOption = False,
) -> None:
    """Make a review queue of the runs a filter matches now (or of --runs); editors only."""
    from .team import queues

    flt, ids = _queue_filter(runs, status, model, agent, workflow, since, search)
    store = open_store(db)
    try:
        made = queues.create(store, name, flt=flt, ids=ids, rubric=queues.load_rubric(rubric) if rubric else None,
                             reviews_per_item=reviews_per_item, assignees=[a.strip() for x in assign or [] for a in x.split(",") if a.strip()],
                             actor=cli_actor())
    except queues.QueueError as exc:
        fail(str(exc))
    if json:
        print_json(made)
        return
    out.print(f"queue {made['id']} ({made['name']}): {made['items']} runs to review")


@queue_app.command("list")
def queue_list(db: DbOption = None, json: JsonOption = False) -> None:
    """Queues with their progress."""
    from .team import queues

    rows = [{k: q[k] for k in ("id", "name", "items", "items_done", "reviews", "needed", "percent", "reviews_per_item", "assignees",
                               "created_by", "created_at")} for q in queues.list_queues(open_store(db))]
    if json:
        print_json(rows)
        return
    table = Table("id", "name", "runs", "runs done", "reviews", "assigned to", "created")
    for q in rows:
        table.add_row(str(q["id"]), q["name"], str(q["items"]), str(q["items_done"]), f"{q['reviews']} of {q['needed']}",
                      ", ".join(q["assignees"] or []) or "anyone", _fmt(q["created_at"]))
    out.print(table)


@queue_app.command("show")
def queue_show(queue: Annotated[int, typer.Argument(help="Queue id.")], db: DbOption = None, json: JsonOption = False) -> None:
    """A queue's runs with their verdicts, per reviewer, and how often reviewers agreed."""
    from .team import queues

    store = open_store(db)
    _queue_id(store, queue)
    res = queues.results(store, queue)
    q = res["queue"]
    progress = {k: q[k] for k in ("items", "items_done", "reviews", "needed", "percent", "done")}
    if json:
        print_json({"id": q["id"], "name": q["name"], "rubric": q["rubric"], "reviews_per_item": q["reviews_per_item"],
                    "assignees": q["assignees"], "made_from": q["made_from"], "progress": progress, "items": res["items"],
                    "reviewers": res["reviewers"], "agreement": res["agreement"]})
        return
    out.print(f"queue {q['id']}: {q['name']} — {q['items_done']} of {q['items']} runs done, {q['reviews']} of {q['needed']} reviews")
    table = Table("#", "run", "status", "verdicts", "agreement", "held by")
    for it in res["items"]:
        verdicts = ", ".join(f"{v} ×{n}" for v, n in it["verdicts"].items()) or "—"
        table.add_row(str(it["position"]), it["session_id"], it["status"] or "run deleted", verdicts,
                      "—" if it["agreement"] is None else f"{it['agreement']:.0%}", _fmt(it["held_by"]))
    out.print(table)
    if res["agreement"]["items"]:
        out.print(f"agreement: {res['agreement']['mean']:.0%} of reviewer pairs agreed, over {res['agreement']['items']} runs")


@queue_app.command("export")
def queue_export(
    queue: Annotated[int, typer.Argument(help="Queue id.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="CSV file to write.")],
    db: DbOption = None, json: JsonOption = False,
) -> None:
    """The queue's reviews as CSV: one row per review, a column per criterion."""
    from .team import queues

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
    from .team import queues

    if not queues.delete(open_store(db), queue, actor=cli_actor()):
        fail(f"no queue {queue}")
    out.print(f"queue {queue} deleted")


@app.command("share")
def share_cmd(
    session: Annotated[str | None, typer.Argument(help="The run to share.")] = None,
    compare: Annotated[str | None, typer.Option("--compare", help="Share the comparison of SESSION with this run.")] = None,
    queue: Annotated[int | None, typer.Option("--queue", help="Share this queue's results instead of a run.")] = None,
    expires: Annotated[str, typer.Option("--expires", help="How long the link opens: 30m, 12h, 7d, 2w.")] = "7d",
    list_: Annotated[bool, typer.Option("--list", help="List the links made (never their tokens).")] = False,
    revoke: Annotated[int | None, typer.Option("--revoke", help="Revoke the link with this id.")] = None,
    db: DbOption = None, json: JsonOption = False,
) -> None:
    """A read-only link to one run, a comparison or a queue's results, for someone without an account (editors only)."""
    from .team import shares

    store = open_store(db)
    if list_:
        rows = [{k: r[k] for k in ("id", "kind", "target", "state", "created_by", "created_at", "expires_at", "revoked_at", "opened")}
                for r in shares.list_links(store, actor=cli_actor())]
        if json:
            print_json(rows)
            return
        table = Table("id", "what", "state", "made by", "expires", "opened")
        for r in rows:
            table.add_row(str(r["id"]), f"{r['kind']} {' vs '.join(str(v) for v in r['target'].values())}", r["state"], r["created_by"],
                          _fmt(r["expires_at"]), str(r["opened"]))
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
        made = shares.make(store, kind, session=session, other=compare, queue=queue, expires=shares.parse_expiry(expires),
                           actor=cli_actor())
    except shares.ShareError as exc:
        fail(str(exc))
    if json:
        print_json({k: made[k] for k in ("id", "token", "url", "expires_at", "kind", "target")})
        return
    out.print(made["url"])
    err.print(f"link {made['id']}: opens without sign-in until {_fmt(made['expires_at'])} UTC; the token is shown only now")


def _plain_stats(args: list[str]) -> bool:
    """Run `stats` with its options as given (strings and one flag), parsed by the command's own
    parser but without Typer's value coercion, which imports pydantic and builds a validator per
    option: a sixth of the command's time, against a 0.4 s budget (issue 16). False, having run
    nothing, for anything else or anything unusual (help, an unknown or malformed option), which
    Typer then handles as for every command."""
    if args[:1] != ["stats"] or any(a in ("--help", "-h") or a.startswith("--help=") for a in args):
        return False
    from typer.main import get_command

    command = get_command(app).commands["stats"]
    try:
        given, rest, _ = command.make_parser(command.context_class(command)).parse_args(args[1:])
    except Exception:  # Typer reports it, in its words
        return False
    if rest:
        return False
    stats_cmd(**{p.name: given.get(p.name, p.default) for p in command.params})
    return True


def main() -> None:
    try:
        if not _plain_stats(sys.argv[1:]):  # run as a program, a plain `stats` on a SQLite file was `_fast_stats`' above
            app()
    except CliError as exc:
        err.print(f"error: {exc}")
        sys.exit(1)
    except PermissionDenied as exc:
        err.print(f"error: {exc} (the CLI acts as {exc.actor.role}: AGENT_REPLAY_CLI_ROLE)")
        sys.exit(1)


if __name__ == "__main__":
    main()

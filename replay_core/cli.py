"""`agent-replay`: a thin command line over the library.

Every command is a few lines that call replay_core and print: a table for people, or
JSON with --json for scripts. Bad input is one line on stderr and exit code 1.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from .storage.actor import PermissionDenied, local
from .storage.store import SessionFilter, Store

app = typer.Typer(help="Record, import, inspect, replay and compare AI agent runs.", no_args_is_help=True, add_completion=False)
db_app = typer.Typer(help="Database maintenance.", no_args_is_help=True)
app.add_typer(db_app, name="db")

out = Console(soft_wrap=True, highlight=False, markup=False)
err = Console(stderr=True, highlight=False, markup=False)

DbOption = Annotated[str | None, typer.Option("--db", help="Database URL or SQLite path (default: AGENT_REPLAY_DB_URL, else data/agent_replay.db).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


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


# ---------------------------------------------------------------------------- import / export


@app.command("import")
def import_cmd(
    paths: Annotated[list[Path], typer.Argument(help="Files to import.")],
    format: Annotated[str, typer.Option("--format", help="auto, or a format name.")] = "auto",
    db: DbOption = None,
    skip_bad: Annotated[bool, typer.Option("--skip-bad", help="Import the good records of a file with bad ones, reporting each bad one.")] = False,
    json: JsonOption = False,
) -> None:
    """Import trace files (format detected from content)."""
    from .ingest.pipeline import ImportRejected, IngestReport, import_bytes

    store = open_store(db)
    actor = cli_actor()
    total = IngestReport()
    refused: list[str] = []
    progress = _progress(enabled=not json and sys.stderr.isatty())
    with progress:
        task = progress.add_task("importing", total=len(paths))
        records = progress.add_task("records read", total=None)
        for path in paths:
            progress.update(task, description=f"importing {path.name}")
            progress.reset(records)
            try:
                data = path.read_bytes()
            except OSError as exc:
                refused.append(f"{path}: {exc.strerror or exc}")
                continue
            try:
                report = import_bytes(store, data, str(path), fmt=format, skip_bad=skip_bad,
                                      progress=lambda n: progress.update(records, completed=n), actor=actor)
            except ImportRejected as exc:
                refused += [str(e) for e in exc.errors]
                refused.append(f"{path}: refused, nothing stored ({len(exc.errors)} bad records; --skip-bad imports the rest)")
                continue
            except ValueError as exc:
                refused.append(str(exc))
                continue
            total.add(report)
            total.files += report.files
            progress.advance(task)
    result = total.to_dict()
    result["errors"] += refused
    if json:
        print_json(result)
    else:
        out.print(
            f"imported {len(total.sessions)} sessions, {total.steps} steps "
            f"({total.duplicates} duplicates skipped, {total.redacted} values redacted)"
        )
        for line in result["errors"]:
            err.print(line)
    if refused:
        raise typer.Exit(1)


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
            "started_at", "ended_at", "steps", "tokens_in", "tokens_out", "cost_usd", "errors", "tags", "replay_of")
    out = {k: row.get(k) for k in keys}
    if cycles is not None:
        out["cycles"] = cycles
    return out


@app.command("sessions")
def sessions_cmd(
    status: Annotated[str | None, typer.Option(help="running, succeeded, failed, incomplete")] = None,
    model: Annotated[str | None, typer.Option()] = None,
    agent: Annotated[str | None, typer.Option(help="agent_id")] = None,
    limit: Annotated[int, typer.Option()] = 50,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """List sessions, newest first."""
    from .understand.timeline import count_cycles

    store = open_store(db)
    store.expire_idle()
    rows = store.list_sessions(SessionFilter(status=status, model=model, agent_id=agent), limit=limit)
    cycles = count_cycles(store, [r["id"] for r in rows])
    items = [session_summary_row(r, cycles.get(r["id"], 0)) for r in rows]
    if json:
        print_json(items)
        return
    table = Table("id", "name", "status", "model", "agent", "started", "steps", "cycles", "tokens", "cost $")
    for r in items:
        table.add_row(r["id"], _fmt(r["name"]), r["status"], _fmt(r["model"]), _fmt(r["agent_id"]), _fmt(r["started_at"]),
                      str(r["steps"]), str(r["cycles"]), str(r["tokens_in"] + r["tokens_out"]), _fmt(r["cost_usd"]))
    out.print(table)


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
    out.print(f"status {s['status']}  model {_fmt(s.get('model'))}  agent {_fmt(s.get('agent_id'))}  started {_fmt(s.get('started_at'))}")
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
        out.print(f"context ({snap.context_source}{f' at step {snap.context_seq}' if snap.context_seq is not None else ''}):")
        out.print(orjson.dumps(snap.context, option=orjson.OPT_INDENT_2).decode())


@app.command("stats")
def stats_cmd(
    since: Annotated[str | None, typer.Option("--since", help="From this date (2026-05-01) or ISO date-time.")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Up to this date (included) or ISO date-time.")] = None,
    by: Annotated[str | None, typer.Option("--by", help="Group by: day, hour, model, agent, workflow, environment, agent_version, tag, status.")] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Headline run metrics, optionally per group. p50_ms / p95_ms are run durations."""
    from .understand.analytics import DIMENSIONS, headline, load
    from .server.api import session_filter

    if by is not None and by not in DIMENSIONS:
        fail(f"--by: unknown dimension {by!r}; expected one of {', '.join(DIMENSIONS)}")
    try:
        flt = session_filter({"since": since or "", "until": until or ""})
    except ValueError as exc:
        fail(f"--{exc}")
    store = open_store(db)
    store.expire_idle()
    items = headline(load(store, flt), by).to_dicts()
    if json:
        print_json(items if by else items[0])
        return
    if not items:
        out.print("no runs")
        return
    if by is None:  # one group: a metric a line
        table = Table("metric", "value")
        for k, v in items[0].items():
            table.add_row(STATS_HEADINGS.get(k, k), _stat(k, v))
    else:
        table = Table(*(STATS_HEADINGS.get(k, k) for k in items[0]))
        for item in items:
            table.add_row(*(_stat(k, v) for k, v in item.items()))
    out.print(table)


STATS_HEADINGS = {"success_rate": "success", "p50_ms": "p50 run s", "p95_ms": "p95 run s", "tokens_in": "tokens in",
                  "tokens_out": "tokens out", "cost_usd": "cost $", "retry_rate": "retry", "tool_failure_rate": "tool fail",
                  "fallback_rate": "fallback"}


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
            tool_mode=tool_mode,
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
        return
    for r in results:
        cost = "unknown" if r.cost_usd is None else f"${r.cost_usd:.4f}"
        out.print(f"\n{r.model} → {r.session}")
        out.print(f"  {r.status} ({r.outcome}: {r.message}); {r.steps} steps, {r.tokens_in:,} tokens in, {r.tokens_out:,} out, cost {cost}")
        out.print(f"  first divergence: {r.first_divergence['summary'] if r.first_divergence else 'none'}")


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
    had_events = recorder.spool.pending  # spools left by earlier recorders for this destination are adopted on start
    if not recorder.close(settle=0):
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


def main() -> None:
    try:
        app()
    except CliError as exc:
        err.print(f"error: {exc}")
        sys.exit(1)
    except PermissionDenied as exc:
        err.print(f"error: {exc} (the CLI acts as {exc.actor.role}: AGENT_REPLAY_CLI_ROLE)")
        sys.exit(1)


if __name__ == "__main__":
    main()

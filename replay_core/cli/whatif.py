"""What-if: replay a run's steps with other models (replay), and the datasets of recorded runs
that experiments replay (dataset)."""

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from .options import (
    DbOption,
    ExpectedOption,
    FromFilterOption,
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
    from ..storage.store import Store

commands = typer.Typer()


@commands.command("replay")
def replay_cmd(
    session: Annotated[str, typer.Argument(help="Session id to replay.")],
    model: Annotated[
        list[str],
        typer.Option("--model", help="litellm model string (e.g. openai/gpt-4o-mini) or 'recorded'; repeat to fan out."),
    ],
    from_step: Annotated[int | None, typer.Option("--from", help="First step (seq) to replay (default: the first).")] = None,
    to_step: Annotated[int | None, typer.Option("--to", help="Last step (seq) to replay (default: the last).")] = None,
    fallback_model: Annotated[
        str | None,
        typer.Option("--fallback-model", help="With --model recorded: the live model asked where the recording has no answer."),
    ] = None,
    api_base: Annotated[
        str | None,
        typer.Option("--api-base", help="OpenAI-compatible server (vLLM, Ollama, LM Studio), e.g. http://127.0.0.1:11434/v1."),
    ] = None,
    api_key_env: Annotated[
        str | None, typer.Option("--api-key-env", help="NAME of the environment variable holding the API key.")
    ] = None,
    temperature: Annotated[float | None, typer.Option("--temperature")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens")] = None,
    param: Annotated[
        list[str] | None,
        typer.Option("--param", help="Another litellm parameter as NAME=VALUE (VALUE read as JSON when it parses); repeatable."),
    ] = None,
    tool_mode: Annotated[
        str, typer.Option("--tool-mode", help="recorded: answer tool calls from the recording; none: offer the model no tools.")
    ] = "recorded",
    system_prompt: Annotated[Path | None, typer.Option("--system-prompt", help="File with the system prompt to use.")] = None,
    system_mode: Annotated[
        str, typer.Option("--system-mode", help="replace the original system prompt, or append to it.")
    ] = "replace",
    max_steps: Annotated[
        int | None, typer.Option("--max-steps", help="Budget: steps (default: twice the range plus 20).")
    ] = None,
    max_cost: Annotated[float | None, typer.Option("--max-cost", help="Budget: USD of known cost.")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Budget: seconds per replay.")] = 600.0,
    call_timeout: Annotated[float, typer.Option("--call-timeout", help="Seconds one model call may take.")] = 60.0,
    workers: Annotated[int, typer.Option("--workers", help="Replays run at once.")] = 4,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Re-run steps --from..--to of a session with other models (what-if), and compare each replay with it."""
    from ..understand.replay_outcome import describe
    from ..whatif.reach import launch_problems
    from ..whatif.replay import ReplayError, estimate, replay_many
    from ..whatif.replay_config import Budget, ConfigError, configs_for, parse_params

    store = open_store(db)
    try:
        prompt = system_prompt.read_text() if system_prompt else None
    except OSError as exc:
        fail(f"--system-prompt: cannot read {system_prompt}: {exc.strerror or exc}")
    try:
        configs = configs_for(
            model,
            fallback_model=fallback_model,
            api_base=api_base,
            api_key_env=api_key_env,
            temperature=temperature,
            max_tokens=max_tokens,
            system_prompt=prompt,
            system_mode=system_mode,
            params=parse_params(param or []),
            tool_mode=tool_mode,
            request_timeout_s=call_timeout,
            budget=Budget(max_steps=max_steps, max_cost_usd=max_cost, timeout_s=timeout),
        )
        unreachable = launch_problems(configs)
        if unreachable:
            fail("; ".join(unreachable))
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
            told = describe(r.outcome, r.message, r.error_class, r.first_divergence, model=r.model, started=r.model_calls > 0)
            out.print(f"\n{r.model} → {r.session}")
            out.print(f"  {told.status}")
            out.print(f"  {r.message}; {r.steps} steps, {r.tokens_in:,} tokens in, {r.tokens_out:,} out, cost {cost}")
            out.print(f"  first divergence: {r.first_divergence['summary'] if r.first_divergence else 'none'}")
    if results and all(r.outcome in REPLAY_FAILED for r in results):
        err.print(f"no replay ran: {', '.join(f'{r.model}: {r.error_class or r.outcome}' for r in results)}")
        raise typer.Exit(1)


REPLAY_FAILED = ("provider_error", "error")  # outcomes of a replay that could not run (the others ran, whatever they found)


dataset_app = typer.Typer(help="Datasets: named, versioned sets of recorded runs to run experiments on.", no_args_is_help=True)
commands.add_typer(dataset_app, name="dataset")


def _cases(store: "Store", runs, status, workflow, since, search, expected, from_filter=None):
    from ..storage.store import SessionFilter
    from ..whatif import dataset as ds

    flt = None
    runs = [r.strip() for item in runs or [] for r in item.split(",") if r.strip()]
    if not runs:
        if from_filter:
            flt = ds.parse_filter(from_filter)
        elif not any((status, workflow, since, search)):
            fail(
                "name the runs (--sessions ID …) or a filter "
                "(--from-filter 'status=… model=…', --status, --workflow, --since, --search)"
            )
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
    runs: RunsOption = None,
    status: StatusOption = None,
    workflow: WorkflowOption = None,
    since: SinceOption = None,
    search: SearchOption = None,
    expected: ExpectedOption = None,
    from_filter: FromFilterOption = None,
    from_queue: Annotated[
        int | None,
        typer.Option(
            "--from-queue", help="The runs of this review queue, judged by what its reviewers said they should have done."
        ),
    ] = None,
    match: Annotated[
        str, typer.Option("--match", help="How expected texts are matched: equals (normalised), contains, regex.")
    ] = "equals",
    description: Annotated[str | None, typer.Option("--description")] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Make a dataset from run ids, a filter or a review queue."""
    from ..team.audit import dataset_written
    from ..whatif import dataset as ds

    store = open_store(db)
    try:
        if from_queue is not None:
            made = _dataset_from_queue(store, name, from_queue, expected, match, description)
        else:
            cases, made_from = _cases(store, runs, status, workflow, since, search, expected, from_filter)
            made = ds.create(store, name, cases, match=match, description=description, made_from=made_from)
    except ds.DatasetError as exc:
        fail(str(exc))
    dataset_written(store, cli_actor(), made, "create")
    _print_dataset(made, json)


def _dataset_from_queue(
    store: "Store", name: str, queue_id: int, expected: str | None, match: str, description: str | None
) -> dict:
    """A review queue's runs, each judged by what its reviewers said it should have done (else `expected`, else its outcome)."""
    from ..team import queues
    from ..whatif import dataset as ds

    try:
        ids, wanted = queues.dataset_cases(queues.results(store, queue_id))
    except queues.QueueError as exc:
        raise ds.DatasetError(str(exc)) from None
    if not ids:
        raise ds.DatasetError(f"queue {queue_id}: none of its runs is still stored")
    per_run = {sid: wanted.get(sid, expected) for sid in ids} if expected else wanted
    return ds.dataset_from_sessions(
        store, name, ids, expected=per_run, match=match, description=description, made_from={"queue": queue_id}
    )


@dataset_app.command("add")
def dataset_add(
    name: Annotated[str, typer.Argument(help="Dataset name.")],
    runs: RunsOption = None,
    status: StatusOption = None,
    workflow: WorkflowOption = None,
    since: SinceOption = None,
    search: SearchOption = None,
    expected: ExpectedOption = None,
    from_filter: FromFilterOption = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Add runs to a dataset (its next version); runs it holds already are skipped."""
    from ..team.audit import dataset_written
    from ..whatif import dataset as ds

    store = open_store(db)
    try:
        cases, made_from = _cases(store, runs, status, workflow, since, search, expected, from_filter)
        made = ds.add(store, name, cases, made_from=made_from)
    except ds.DatasetError as exc:
        fail(str(exc))
    dataset_written(store, cli_actor(), made, "add")
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
        table.add_row(str(r["id"]), r["name"], str(r["version"]), str(r["cases"]), r["match"], fmt(r["updated_at"]))
    out.print(table)


@dataset_app.command("show")
def dataset_show(name: Annotated[str, typer.Argument()], db: DbOption = None, json: JsonOption = False) -> None:
    """A dataset's cases: run, status, what counts as right."""
    from ..whatif import dataset as ds

    try:
        shown = ds.show(open_store(db), name)
    except ds.DatasetError as exc:
        fail(str(exc))
    if json:
        print_json(shown)
        return
    out.print(
        f"dataset {shown['name']} (id {shown['id']}, version {shown['version']}, match {shown['match']}): "
        f"{len(shown['cases'])} cases"
    )
    table = Table("run", "name", "status", "expected", "version")
    for c in shown["cases"]:
        table.add_row(
            c["session"],
            fmt(c["name"]),
            "run deleted" if c["missing"] else fmt(c["status"]),
            c["expected"] if c["expected"] is not None else "(the original's final answer)",
            str(c["version"]),
        )
    out.print(table)


@dataset_app.command("export")
def dataset_export(
    name: Annotated[str, typer.Argument()],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="File to write (default: stdout).")] = None,
    db: DbOption = None,
) -> None:
    """Write a dataset as JSON Lines (the runs themselves: `agent-replay export`)."""
    from ..whatif import dataset as ds

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
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Read a dataset written by `dataset export`; the runs must be in the database."""
    from ..team.audit import dataset_written
    from ..whatif import dataset as ds

    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        fail(f"{path}: {exc.strerror or exc}")
    store = open_store(db)
    try:
        made = ds.import_lines(store, lines, where=str(path), name=name)
    except ds.DatasetError as exc:
        fail(str(exc))
    dataset_written(store, cli_actor(), made, "import")
    _print_dataset(made, json)

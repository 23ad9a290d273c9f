"""Experiments: every case of a dataset replayed with every variant, scored, tabulated, resumed
after an interruption, and compared with another experiment."""

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import orjson
import typer

from .options import DbOption, JsonOption, WideOption, cli_actor, err, fail, open_store, out, progress_bar
from .output import AmbiguousPrefix, fmt, print_json, readable_table, resolve_prefix, unique_prefixes

if TYPE_CHECKING:
    from ..storage.store import Store

commands = typer.Typer()
experiment_app = typer.Typer(help="Experiments: replay every case of a dataset with every model, scored.", no_args_is_help=True)
commands.add_typer(experiment_app, name="experiment")


def _print_results(summary: dict, wide: bool = False) -> None:
    out.print(
        f"experiment {summary['experiment']} on {summary['dataset']}: {summary['status']}"
        + (f" ({summary['message']})" if summary["message"] else "")
    )
    extra = ["passed", "refused", "tokens in", "tokens out", "p50 ms", "p95 ms"] if wide else []
    numbers = ("scored", "pass rate (95% Wilson)", "not scored", "cost $", *extra)
    table = readable_table("variant", *numbers, fixed=numbers)
    for v in summary["variants"]:
        rate = "—" if v["pass_rate"] is None else f"{v['pass_rate']:.0%} ({v['ci'][0]:.0%}–{v['ci'][1]:.0%})"
        tokens = [f"{v['tokens_in']:,}", f"{v['tokens_out']:,}"]
        more = [str(v["passed"]), str(v["refused"]), *tokens, fmt(v["p50_ms"]), fmt(v["p95_ms"])]
        table.add_row(
            v["name"],
            str(v["cases"]),
            rate,
            str(v["not_scored"]),
            "unknown" if v["cost_usd"] is None else f"{v['cost_usd']:.4f}",
            *(more if wide else []),
        )
    out.print(table)
    for v in summary["variants"]:
        if v["not_scored"]:
            reasons = "; ".join(dict.fromkeys(r["reason"] for r in v["not_scored_reasons"]))
            out.print(f"{v['name']}: {v['not_scored']} cases {reasons} — kept out of the pass rate, not counted as fails")
    for v in summary["variants"]:
        if v["refused"]:
            out.print(
                f"{v['name']}: {v['refused']} cases refused (not counted), "
                f"e.g. {v['refusals'][0]['case']}: {v['refusals'][0]['reason']}"
            )
        if v["tool_results"]["live"]:
            out.print(
                f"{v['name']}: {v['tool_results']['live']} tool answers from live functions, "
                f"{v['tool_results']['recorded']} from the recording"
            )
    for title, items in (
        ("regressions (passed on the baseline, fail here)", summary["regressions"]),
        ("improvements", summary["improvements"]),
    ):
        if items:
            out.print(f"{title}:")
            for r in items:
                out.print(
                    f"  {r['case']} · {r['variant']}: {r['reason'] or ''} → agent-replay compare {r['baseline']} {r['session']}"
                )


def _run_with_progress(store: "Store", experiment_id: str, json: bool, **options) -> None:
    """Run on a worker thread; Ctrl-C stops launching cases (those in flight finish, `experiment resume` goes on)."""
    import threading

    from ..whatif import experiment as ex

    stop = threading.Event()
    failure: list[BaseException] = []
    experiment = store.get_experiment(experiment_id)
    names = experiment["settings"]["names"] if experiment is not None else None
    progress = progress_bar(enabled=not json and sys.stderr.isatty())
    with progress:
        tasks: dict[int, int] = {}

        def report(p: ex.Progress) -> None:
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


def _show(store: "Store", experiment_id: str, json: bool, wide: bool = False) -> None:
    from ..whatif.results import cli_shape, summarise

    summary = summarise(store, experiment_id)
    if json:
        print_json(cli_shape(summary))
    else:
        _print_results(summary, wide)


EXPERIMENT_PREFIX = 10  # "exp-" and six hex digits at least


def _experiment_id(store: "Store", given: str) -> str:
    """The experiment `given` names: its id, or the start of one id only (as `experiment list` shows them)."""
    try:
        return resolve_prefix(given, [r["id"] for r in store.list_experiments()], "experiment")
    except AmbiguousPrefix as exc:
        fail(str(exc))


@experiment_app.command("run")
def experiment_run(
    dataset: Annotated[str, typer.Argument(help="Dataset name.")],
    model: Annotated[
        list[str] | None, typer.Option("--model", help="A variant's litellm model (repeat; the first is the baseline).")
    ] = None,
    variant: Annotated[
        list[str] | None,
        typer.Option(
            "--variant", help='A variant as JSON replay settings, e.g. {"model": "openai/x", "temperature": 0.2} (repeatable).'
        ),
    ] = None,
    start: Annotated[
        str,
        typer.Option(
            "--from",
            help="first-model-turn, a step number, or a step kind per case: "
            "'last user_message', 'first model_turn after first tool_error'.",
        ),
    ] = "first-model-turn",
    step_type: Annotated[
        str | None,
        typer.Option(
            "--from-step-type",
            help="Replay each case from its first step of this kind (tool_error, user_message, input, decision, …); "
            "a run without one is refused, counted.",
        ),
    ] = None,
    tool: Annotated[
        list[str] | None,
        typer.Option("--tool", help="A live tool function, NAME=module:function (or module:TOOLS, a dict); repeatable."),
    ] = None,
    tool_mode: Annotated[
        str,
        typer.Option(
            "--tool-mode",
            help="recorded: the recording's tool answers, live functions only where it has none; "
            "live: the --tool functions first.",
        ),
    ] = "recorded",
    scorer: Annotated[
        list[str] | None,
        typer.Option(
            "--scorer",
            help="outcome, final_tool, tool_sequence, no_divergence, cost_ceiling, latency_ceiling, judge, "
            "or module:function (repeatable; default outcome).",
        ),
    ] = None,
    scorer_option: Annotated[
        list[str] | None,
        typer.Option(
            "--scorer-option",
            help="SCORER.NAME=VALUE, e.g. tool_sequence.threshold=0.9, judge.model=openai/gpt-4o-mini (repeatable).",
        ),
    ] = None,
    api_base: Annotated[str | None, typer.Option("--api-base", help="OpenAI-compatible server for every variant.")] = None,
    api_key_env: Annotated[
        str | None, typer.Option("--api-key-env", help="NAME of the environment variable holding the API key.")
    ] = None,
    temperature: Annotated[float | None, typer.Option("--temperature")] = None,
    param: Annotated[
        list[str] | None, typer.Option("--param", help="Another litellm parameter as NAME=VALUE; repeatable.")
    ] = None,
    fallback_model: Annotated[
        str | None,
        typer.Option("--fallback-model", help="With --model recorded: the live model asked where the recording has no answer."),
    ] = None,
    input_price: Annotated[
        float | None, typer.Option("--input-cost-per-token", help="USD per input token, for models litellm has no price for.")
    ] = None,
    output_price: Annotated[float | None, typer.Option("--output-cost-per-token", help="USD per output token, likewise.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Replays at once.")] = 4,
    budget_usd: Annotated[float | None, typer.Option("--budget-usd", help="Dollar budget for the whole experiment.")] = None,
    budget_tokens: Annotated[int | None, typer.Option("--budget-tokens", help="Token budget for the whole experiment.")] = None,
    db: DbOption = None,
    json: JsonOption = False,
    wide: WideOption = False,
) -> None:
    """Replay every case of a dataset with every model, score each replay, and tabulate (estimate and budget checked first)."""
    from ..whatif import experiment as ex
    from ..whatif.replay_config import ConfigError, ReplayConfig, configs_for, parse_params

    store = open_store(db)
    try:
        shared = {
            "api_base": api_base,
            "api_key_env": api_key_env,
            "temperature": temperature,
            "params": parse_params(param or []),
            "input_cost_per_token": input_price,
            "output_cost_per_token": output_price,
            "tool_mode": tool_mode,
        }
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
        experiment_id, plan = ex.start(
            store,
            dataset,
            configs,
            start=step_type or start,
            scorers=scorer,
            scorer_options=options,
            concurrency=concurrency,
            budget_usd=budget_usd,
            budget_tokens=budget_tokens,
            tools=tools,
        )
    except (ex.ExperimentError, ConfigError) as exc:
        fail(str(exc))
    if not json:
        for e in plan.estimates:
            cost = "unknown cost" if e.cost_usd is None else f"~${e.cost_usd:.4f}"
            out.print(f"estimate {e.model}: {len(plan.cases)} cases, ~{e.tokens_in:,} tokens in, ~{e.tokens_out:,} out, {cost}")
        if plan.unplayable:
            out.print(
                f"{len(plan.unplayable)} cases will be refused (not replayable from {plan.start.spec}), e.g. "
                + "; ".join(f"{k}: {v}" for k, v in list(plan.unplayable.items())[:3])
            )
        out.print(f"experiment {experiment_id}")
    _run_with_progress(store, experiment_id, json, tools=tools)
    _show(store, experiment_id, json, wide)


@experiment_app.command("resume")
def experiment_resume(
    experiment_id: Annotated[str, typer.Argument()],
    budget_usd: Annotated[
        float | None, typer.Option("--budget-usd", help="A new dollar budget for the whole experiment.")
    ] = None,
    budget_tokens: Annotated[int | None, typer.Option("--budget-tokens")] = None,
    tool: Annotated[
        list[str] | None, typer.Option("--tool", help="The live tool functions the experiment was run with (as for run).")
    ] = None,
    db: DbOption = None,
    json: JsonOption = False,
    wide: WideOption = False,
) -> None:
    """Run what an interrupted or budget-stopped experiment did not run (finished replays are never paid for again)."""
    from ..whatif import experiment as ex

    store = open_store(db)
    experiment_id = _experiment_id(store, experiment_id)
    try:
        tools = ex.load_tools(tool or [])
    except ex.ExperimentError as exc:
        fail(str(exc))
    _run_with_progress(store, experiment_id, json, budget_usd=budget_usd, budget_tokens=budget_tokens, tools=tools)
    _show(store, experiment_id, json, wide)


@experiment_app.command("stop")
def experiment_stop(experiment_id: Annotated[str, typer.Argument()], db: DbOption = None, json: JsonOption = False) -> None:
    """Stop a running experiment, wherever it runs (the app, another terminal): it launches no more cases, those in
    flight finish, and `experiment resume` runs the rest. Editors only."""
    from ..whatif import experiment as ex

    store = open_store(db)
    experiment_id = _experiment_id(store, experiment_id)
    try:
        status = ex.request_stop(store, experiment_id, actor=cli_actor())
    except ex.ExperimentError as exc:
        fail(str(exc))
    if json:
        print_json({"experiment": experiment_id, "status": status})
    else:
        out.print(
            f"{experiment_id}: {status} — the replays in flight finish; "
            f"`agent-replay experiment resume {experiment_id}` runs the rest"
        )


@experiment_app.command("show")
def experiment_show(
    experiment_id: Annotated[str, typer.Argument()],
    csv: Annotated[Path | None, typer.Option("--csv", help="Also write the cases × variants matrix as CSV here.")] = None,
    db: DbOption = None,
    json: JsonOption = False,
    wide: WideOption = False,
) -> None:
    """An experiment's results: per variant pass rate and interval, cost, latency; regressions first."""
    from ..whatif.results import summarise, to_csv

    store = open_store(db)
    experiment_id = _experiment_id(store, experiment_id)
    if csv is not None:
        csv.write_text(to_csv(summarise(store, experiment_id)))
    _show(store, experiment_id, json, wide)


@experiment_app.command(
    "compare",
    help="Per variant and scorer: the cases B improved or regressed against A, with Wilson intervals; "
    "what is not comparable, named.",
)
def experiment_compare(
    a: Annotated[str, typer.Argument(help="Experiment A (the one to compare against).")],
    b: Annotated[str, typer.Argument(help="Experiment B.")],
    by_position: Annotated[bool, typer.Option("--by-position", help="Pair variants by position, not by name.")] = False,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    from ..whatif.experiment_compare import CompareError, compare_experiments

    store = open_store(db)
    a, b = _experiment_id(store, a), _experiment_id(store, b)
    try:
        found = compare_experiments(store, a, b, by_position=by_position)
    except CompareError as exc:
        fail(str(exc))
    if json:
        print_json(found)
        return
    cases = found["cases"]
    out.print(
        f"{a} → {b}: {cases['compared']} cases in both"
        + "".join(f"; {len(cases[k])} {k.replace('_', ' ')}" for k in ("only_in_a", "only_in_b") if cases[k])
    )
    for note in found["notes"]:
        out.print(f"note: {note}")
    for key, items in found["not_comparable"].items():
        if items:
            out.print(f"not comparable, {key.replace('_', ' ')}: {', '.join(items)}")
    out.print("pass: rate (95% Wilson interval); better / worse: cases B improved / regressed")
    numbers = ("A pass", "B pass", "better", "worse")
    table = readable_table("variant", "scorer", *numbers, fixed=numbers)

    def band(r: dict) -> str:
        return ("—" if r["pass_rate"] is None else f"{r['pass_rate']:.0%}") + f" ({r['ci'][0]:.0%}–{r['ci'][1]:.0%})"

    for v in found["variants"]:
        for name, scorer, r in [(v["variant"], "(all)", v), *(("", sc["scorer"], sc) for sc in v["scorers"])]:
            table.add_row(name, scorer, band(r["a"]), band(r["b"]), str(len(r["improved"])), str(len(r["regressed"])))
    out.print(table)
    for v in found["variants"]:
        for title, items in (("regressed", v["regressed"]), ("improved", v["improved"])):
            for r in items:
                out.print(f"  {title} {r['case']} · {v['variant']}: agent-replay compare {r['a_session']} {r['b_session']}")
        if v["not_scored_on_both"]:
            out.print(f"  {v['variant']}: {len(v['not_scored_on_both'])} cases not scored on both (pending or refused)")


@experiment_app.command("list")
def experiment_list(db: DbOption = None, json: JsonOption = False, wide: WideOption = False) -> None:
    """Experiments, newest first: ids shortened to a start every experiment command takes (--wide: whole)."""
    rows = open_store(db).list_experiments()
    items = [
        {
            "experiment": r["id"],
            "dataset": r["dataset"],
            "status": r["status"],
            "variants": r["settings"]["names"],
            "runs_done": r["runs_done"],
            "created_at": r["created_at"],
            "message": r["message"],
        }
        for r in rows
    ]
    if json:
        print_json(items)
        return
    short = {} if wide else unique_prefixes([r["experiment"] for r in items], EXPERIMENT_PREFIX)
    columns = ("experiment", "dataset", "status", "variants", "done", "created", *(["message"] if wide else []))
    table = readable_table(*columns, fixed=("status", "done", "created"))
    for r in items:
        table.add_row(
            short.get(r["experiment"], r["experiment"]),
            r["dataset"],
            r["status"],
            ", ".join(r["variants"]),
            str(r["runs_done"]),
            fmt(r["created_at"]) if wide else r["created_at"].strftime("%b %d %H:%M"),
            *([fmt(r["message"])] if wide else []),
        )
    out.print(table)

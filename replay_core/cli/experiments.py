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


# ---------------------------------------------------------------- the evaluation loop

schedule_app = typer.Typer(
    help="Experiments run again on a schedule, each run compared with the one before (regressions, an alert).",
    no_args_is_help=True,
)
experiment_app.add_typer(schedule_app, name="schedule")


def _dataset_app() -> typer.Typer:
    from .whatif import dataset_app

    return dataset_app


@_dataset_app().command("from-queue")
def dataset_from_queue(
    queue: Annotated[int, typer.Argument(help="The review queue's id.")],
    name: Annotated[str | None, typer.Option("--name", help="The dataset (default: the queue's name).")] = None,
    bad_only: Annotated[bool, typer.Option("--bad-only", help="Only the runs a reviewer judged bad.")] = False,
    verdict: Annotated[
        list[str] | None, typer.Option("--verdict", help="A verdict that counts as bad (repeatable; default Bad).")
    ] = None,
    continuous: Annotated[
        bool, typer.Option("--continuous", help="From now on, every new bad verdict adds its run to the dataset's next version.")
    ] = False,
    stop: Annotated[bool, typer.Option("--stop", help="Stop feeding the dataset from this queue.")] = False,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """A review queue's runs as a dataset version, each judged by what its reviewers said it should have done."""
    from ..monitors import loop

    store = open_store(db)
    try:
        if stop or continuous:
            made = loop.set_feed(
                store, queue, None if stop else (name or loop.queue_name(store, queue)), verdict, actor=cli_actor()
            )
        else:
            made = loop.dataset_from_queue(store, queue, name, bad_only=bad_only, verdicts=verdict, actor=cli_actor())
    except loop.LoopError as exc:
        fail(str(exc))
    if json:
        print_json(made)
    elif stop:
        out.print(f"queue {queue} no longer feeds a dataset")
    elif continuous:
        synced = made["synced"]
        now = f"; now {synced['cases']} cases (version {synced['version']})" if synced else ""
        out.print(f"queue {queue} feeds dataset {made['dataset']}: every new {' or '.join(made['verdicts'])} verdict{now}")
    else:
        out.print(f"dataset {made['name']} (id {made['id']}, version {made['version']}): {made['cases']} cases")


@schedule_app.command("add")
def schedule_add(
    name: Annotated[str, typer.Argument(help="A name for the schedule.")],
    dataset: Annotated[str, typer.Option("--dataset", help="The dataset each run takes the newest version of.")],
    model: Annotated[list[str] | None, typer.Option("--model", help="A variant's litellm model (repeatable).")] = None,
    variant: Annotated[
        list[str] | None, typer.Option("--variant", help="A variant as JSON replay settings (repeatable).")
    ] = None,
    trigger: Annotated[str, typer.Option("--trigger", help="daily, dataset_version or new_model.")] = "daily",
    api_base: Annotated[str | None, typer.Option("--api-base", help="OpenAI-compatible server for every variant.")] = None,
    scorer: Annotated[list[str] | None, typer.Option("--scorer", help="Scorers (repeatable; default outcome).")] = None,
    start: Annotated[str | None, typer.Option("--from", help="Where each case's replay starts.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency")] = 4,
    budget_usd: Annotated[float | None, typer.Option("--budget-usd", help="Dollar budget of each run.")] = None,
    budget_tokens: Annotated[int | None, typer.Option("--budget-tokens", help="Token budget of each run.")] = None,
    webhook: Annotated[str | None, typer.Option("--webhook", help="Where its alerts are POSTed.")] = None,
    webhook_secret_env: Annotated[str | None, typer.Option("--webhook-secret-env")] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Schedule an experiment: daily, on a new dataset version, or on a new model in the configuration."""
    from ..monitors import loop

    variants: list[dict] = [{"model": m} for m in model or []]
    for text in variant or []:
        try:
            variants.append(orjson.loads(text))
        except orjson.JSONDecodeError:
            fail(f"--variant: not JSON: {text}")
    if api_base:
        variants = [{"api_base": api_base, **v} if isinstance(v, dict) else v for v in variants]
    store = open_store(db)
    try:
        made = loop.add_schedule(
            store,
            name,
            dataset,
            variants,
            trigger=trigger,
            scorers=scorer,
            start=start,
            concurrency=concurrency,
            budget_usd=budget_usd,
            budget_tokens=budget_tokens,
            webhook_url=webhook,
            webhook_secret_env=webhook_secret_env,
            actor=cli_actor(),
        )
    except loop.LoopError as exc:
        fail(str(exc))
    if json:
        print_json(loop.summary(store, made))
        return
    out.print(
        f"schedule {made['id']} {made['name']}: {dataset}, {loop.TRIGGERS[made['trigger']]}; alerts on monitor "
        f"{loop.monitor_name(made['name'])!r}"
    )


@schedule_app.command("list")
def schedule_list(db: DbOption = None, json: JsonOption = False) -> None:
    """Every schedule, its last run and how many cases regressed in it."""
    from ..monitors import loop

    store = open_store(db)
    rows = [loop.summary(store, s) for s in store.list_schedules()]
    if json:
        print_json(rows)
        return
    table = readable_table("id", "name", "dataset", "trigger", "variants", "last run", "status", "regressions")
    for r in rows:
        last = fmt(r["last_run"]) if r["last_run"] else "never"
        table.add_row(
            str(r["id"]),
            r["name"],
            r["dataset"],
            r["trigger"],
            ", ".join(r["variants"]),
            last,
            fmt(r["last_status"]),
            str(r["regressions"]),
        )
    out.print(table)


def _print_run(run: dict) -> None:
    out.print(f"{run['schedule']}: {run['reason']} → experiment {run.get('experiment') or '—'} ({run.get('status')})")
    if run.get("error"):
        out.print(f"  {run['error']}")
    for v in run.get("variants") or []:
        rate = "—" if v["pass_rate"] is None else f"{v['pass_rate']:.0%} ({v['ci'][0]:.0%}–{v['ci'][1]:.0%})"
        before = v.get("previous_pass_rate")
        was = (
            "" if before is None else f", was {before:.0%} ({v['previous_ci'][0]:.0%}–{v['previous_ci'][1]:.0%}): {v['verdict']}"
        )
        out.print(f"  {v['variant']}: pass rate {rate}{was}")
        if v.get("regressed"):
            out.print(f"  regressions (passed before, fail now): {', '.join(v['regressed'])}")
    event = (run.get("monitor") or {}).get("event")
    if event:
        out.print(f"  alert {event}: {run['monitor']['sentence']}")


@schedule_app.command("run-due")
def schedule_run_due(db: DbOption = None, json: JsonOption = False) -> None:
    """Run every schedule that is due now (as the server does every few minutes), to its end."""
    from ..monitors import loop

    ran = loop.run_due(open_store(db))
    if json:
        print_json(ran)
        return
    if not ran:
        out.print("no schedule is due")
    for run in ran:
        _print_run(run)


@schedule_app.command("history")
def schedule_history(
    name: Annotated[str, typer.Argument(help="The schedule's name or id.")],
    limit: Annotated[int, typer.Option("--limit")] = 20,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """A schedule's runs, newest first, each against the one before it."""
    store = open_store(db)
    found = store.get_schedule(int(name)) if name.isdigit() else store.get_schedule(name)
    if found is None:
        fail(f"no schedule {name!r} (agent-replay experiment schedule list)")
    runs = store.schedule_runs(found["id"], limit=limit)
    if json:
        print_json(runs)
        return
    for r in runs:
        _print_run(
            {
                "schedule": f"{fmt(r['started_at'])} {found['name']}",
                "reason": r["reason"],
                "experiment": r["experiment_id"],
                **(r["result"] or {"status": "running"}),
            }
        )

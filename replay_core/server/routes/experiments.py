"""Datasets and experiments (whatif.experiment): make a dataset of runs, launch an experiment on it
(long work, run on a background thread and polled by GET), read its results, compare two experiments.
Launching costs money and making a dataset writes: editors; reading: any role."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...storage.actor import INGEST, READ, REPLAY
from ...team.audit import DATASET
from ..bodies import json_body, object_body, typed_body
from ..body_models import DatasetBody, ExperimentBody
from ..context import API_PREFIX, ApiContext
from ..responses import ApiError, json_response


class ExperimentRoutes:
    def __init__(self, api: ApiContext):
        self.api = api

    def routes(self) -> list[Route]:
        guarded = self.api.guarded
        return [
            Route(f"{API_PREFIX}/datasets", guarded(self.create_dataset, INGEST), methods=["POST"]),
            Route(f"{API_PREFIX}/datasets", guarded(self.list_datasets, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/datasets/{{name:path}}", guarded(self.get_dataset, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/experiments", guarded(self.create_experiment, REPLAY), methods=["POST"]),
            Route(f"{API_PREFIX}/experiments", guarded(self.list_experiments, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/experiments/{{experiment_id}}", guarded(self.get_experiment, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/experiments/{{experiment_id}}/stop", guarded(self.stop_experiment, REPLAY), methods=["POST"]),
            Route(f"{API_PREFIX}/experiments/{{a}}/compare/{{b}}", guarded(self.compare_experiments, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/queues/{{queue_id:int}}/dataset", guarded(self.dataset_from_queue, INGEST), methods=["POST"]),
            Route(f"{API_PREFIX}/queues/{{queue_id:int}}/feed", guarded(self.queue_feed, INGEST), methods=["PUT"]),
            Route(f"{API_PREFIX}/schedules", guarded(self.list_schedules, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/schedules", guarded(self.add_schedule, REPLAY), methods=["POST"]),
            Route(f"{API_PREFIX}/schedules/{{schedule_id:int}}/runs", guarded(self.schedule_runs, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/schedules/run-due", guarded(self.run_due, REPLAY), methods=["POST"]),
        ]

    async def _loop(self, fn, status: int = 200) -> Response:
        """Run `fn` off the event loop; a LoopError is a 422 naming the field, a missing queue a 404."""
        from ...monitors.loop import LoopError

        try:
            return json_response(await run_in_threadpool(fn), status)
        except LoopError as exc:
            code = 404 if str(exc).startswith("no queue") else 422
            raise ApiError(code, str(exc), [{"loc": str(exc).split(":", 1)[0], "msg": str(exc)}]) from None

    async def dataset_from_queue(self, request: Request) -> Response:
        """POST /api/v1/queues/{id}/dataset {name?, bad_only?, verdicts?} → a dataset version of its reviewed runs (201)."""
        from ...monitors import loop

        body = await json_body(request, self.api.max_body, empty={})
        if not isinstance(body, dict):
            raise ApiError(422, "body: expected a JSON object", [{"loc": "body", "msg": "expected a JSON object"}])
        _only(body, {"name", "bad_only", "verdicts"})
        queue_id = request.path_params["queue_id"]
        return await self._loop(
            lambda: loop.dataset_from_queue(
                self.api.store(),
                queue_id,
                _text(body, "name"),
                bad_only=bool(body.get("bad_only")),
                verdicts=_texts(body, "verdicts"),
                actor=request.state.actor,
            ),
            201,
        )

    async def queue_feed(self, request: Request) -> Response:
        """PUT /api/v1/queues/{id}/feed {dataset | null, verdicts?}: every new bad verdict adds its run to the dataset."""
        from ...monitors import loop

        body = await object_body(request, self.api.max_body)
        _only(body, {"dataset", "verdicts"})
        queue_id = request.path_params["queue_id"]
        return await self._loop(
            lambda: loop.set_feed(
                self.api.store(), queue_id, _text(body, "dataset"), _texts(body, "verdicts"), actor=request.state.actor
            )
        )

    async def list_schedules(self, request: Request) -> Response:
        """GET /api/v1/schedules → {schedules: [{id, name, dataset, trigger, variants, last_run, last_status, regressions}]}."""
        from ...monitors.loop import summary

        store = self.api.store()
        return await self._loop(lambda: {"schedules": [summary(store, s) for s in store.list_schedules()]})

    async def add_schedule(self, request: Request) -> Response:
        """POST /api/v1/schedules {name, dataset, models | variants, trigger?, api_base?, scorers?, from?, concurrency?,
        budget_usd?, budget_tokens?, webhook_url?, webhook_secret_env?} → the schedule (201)."""
        from ...monitors import loop

        body = await object_body(request, self.api.max_body)
        _only(body, set(SCHEDULE_FIELDS))
        shared = {"api_base": body["api_base"]} if isinstance(body.get("api_base"), str) else {}
        variants = [{"model": m} for m in _texts(body, "models") or []] + list(body.get("variants") or [])
        variants = [shared | v if isinstance(v, dict) else v for v in variants]
        store = self.api.store()

        def add() -> dict:
            made = loop.add_schedule(
                store,
                _text(body, "name") or "",
                _text(body, "dataset") or "",
                variants,
                trigger=_text(body, "trigger") or "daily",
                scorers=_texts(body, "scorers"),
                start=body.get("from"),
                concurrency=body.get("concurrency", 4),
                budget_usd=body.get("budget_usd"),
                budget_tokens=body.get("budget_tokens"),
                webhook_url=_text(body, "webhook_url"),
                webhook_secret_env=_text(body, "webhook_secret_env"),
                actor=request.state.actor,
            )
            return loop.summary(store, made)

        return await self._loop(add, 201)

    async def schedule_runs(self, request: Request) -> Response:
        """GET /api/v1/schedules/{id}/runs → {runs}, newest first, each against the one before it."""
        schedule_id = request.path_params["schedule_id"]
        store = self.api.store()
        if await run_in_threadpool(store.get_schedule, schedule_id) is None:
            raise ApiError(404, f"no schedule {schedule_id}")
        return await self._loop(lambda: {"runs": store.schedule_runs(schedule_id)})

    async def run_due(self, request: Request) -> Response:
        """POST /api/v1/schedules/run-due → 202: the schedules due now run in the background (GET their runs)."""
        import threading

        from ...monitors import loop

        store = self.api.store()
        threading.Thread(target=loop.run_due, args=(store,), name="schedules-run-due", daemon=True).start()
        await self.api.audit(request, REPLAY, "schedules", op="run-due")
        return json_response({"started": True, "poll": f"{API_PREFIX}/schedules"}, 202)

    async def create_dataset(self, request: Request) -> Response:
        """POST /api/v1/datasets {name, runs | filter {status, workflow, since, search}, expected?, match?, description?}."""
        from ...whatif import dataset as ds

        body = await typed_body(request, self.api.max_body, DatasetBody)
        store = self.api.store()

        def make() -> dict:
            flt = None
            if not body.get("runs"):
                given = body.get("filter") or {}
                if not isinstance(given, dict):
                    raise ds.DatasetError("filter: expected an object")
                unknown = sorted(set(given) - set(ds.FILTER_KEYS))
                if unknown:
                    raise ds.DatasetError(f"filter.{unknown[0]}: not a dataset filter ({', '.join(ds.FILTER_KEYS)})")
                if given:
                    flt = ds.parse_filter(given)
            runs = body.get("runs")
            if runs is not None and not (isinstance(runs, list) and all(isinstance(r, str) for r in runs)):
                raise ds.DatasetError("runs: expected a list of run ids")
            cases, made_from = ds.resolve(store, runs=runs, flt=flt, expected=body.get("expected"))
            made = ds.create(
                store,
                str(body.get("name") or ""),
                cases,
                match=body.get("match") or "equals",
                description=body.get("description"),
                made_from=made_from,
            )
            return {k: made[k] for k in ("id", "name", "version", "cases")}

        try:
            made = await run_in_threadpool(make)
            target = f"dataset {made['name']}"
            await self.api.audit(request, DATASET, target, op="create", version=made["version"], cases=made["cases"])
            return json_response(made, 201)
        except ds.DatasetError as exc:
            raise ApiError(422, str(exc), [{"loc": str(exc).split(":", 1)[0], "msg": str(exc)}]) from None

    async def list_datasets(self, request: Request) -> Response:
        rows = await run_in_threadpool(self.api.store().list_datasets)
        return json_response(
            {
                "datasets": [
                    {k: r[k] for k in ("id", "name", "version", "cases", "match", "description", "updated_at")} for r in rows
                ]
            }
        )

    async def get_dataset(self, request: Request) -> Response:
        from ...whatif import dataset as ds

        try:
            return json_response(await run_in_threadpool(ds.show, self.api.store(), request.path_params["name"]))
        except ds.DatasetError as exc:
            raise ApiError(404, str(exc)) from None

    async def create_experiment(self, request: Request) -> Response:
        """POST /api/v1/experiments {dataset, models | variants, api_base?, from?, scorers?, scorer_options?, concurrency?,
        budget_usd?, budget_tokens?} → 202 with the id; it runs in the background, GET it for progress then results."""
        from ...whatif import experiment as ex
        from ...whatif.replay_config import ConfigError, ReplayConfig

        body = await typed_body(request, self.api.max_body, ExperimentBody)
        store = self.api.store()

        def start() -> dict:
            shared = {"api_base": body["api_base"]} if body.get("api_base") else {}
            variants = [{"model": m} for m in body.get("models") or []] + list(body.get("variants") or [])
            if not all(isinstance(v, dict) for v in variants):
                raise ConfigError("variants: expected objects of replay settings")
            configs = [ReplayConfig.from_json({**shared, **v}) for v in variants]
            experiment_id, plan = ex.start(
                store,
                str(body.get("dataset") or ""),
                configs,
                start=body.get("from"),
                scorers=body.get("scorers"),
                scorer_options=body.get("scorer_options"),
                concurrency=int(body.get("concurrency") or 4),
                budget_usd=body.get("budget_usd"),
                budget_tokens=body.get("budget_tokens"),
            )
            ex.launch(store, experiment_id, actor=request.state.actor)
            return {
                "experiment": experiment_id,
                "status": "running",
                "estimates": [e.to_dict() for e in plan.estimates],
                "poll": f"{API_PREFIX}/experiments/{experiment_id}",
            }

        try:
            started = await run_in_threadpool(start)
            target = f"experiment {started['experiment']}"
            await self.api.audit(request, REPLAY, target, op="launch", dataset=str(body.get("dataset"))[:200])
            return json_response(started, 202)
        except (ex.ExperimentError, ConfigError, TypeError, ValueError) as exc:
            raise ApiError(422, str(exc), [{"loc": str(exc).split(":", 1)[0], "msg": str(exc)}]) from None

    async def list_experiments(self, request: Request) -> Response:
        rows = await run_in_threadpool(self.api.store().list_experiments)
        return json_response(
            {
                "experiments": [
                    {
                        "experiment": r["id"],
                        "dataset": r["dataset"],
                        "status": r["status"],
                        "variants": r["settings"]["names"],
                        "runs_done": r["runs_done"],
                        "created_at": r["created_at"],
                    }
                    for r in rows
                ]
            }
        )

    async def get_experiment(self, request: Request) -> Response:
        """GET /api/v1/experiments/{id}: status and progress while it runs; the results (so far, then whole)."""
        from ...whatif.results import summarise

        try:
            return json_response(await run_in_threadpool(summarise, self.api.store(), request.path_params["experiment_id"]))
        except KeyError:
            raise ApiError(404, f"no experiment {request.path_params['experiment_id']!r}") from None

    async def stop_experiment(self, request: Request) -> Response:
        """POST /api/v1/experiments/{id}/stop → 202 `stopping`: no more cases are launched, those in flight finish;
        404 for no such experiment, 409 when it is not running."""
        from ...whatif import experiment as ex

        experiment_id = request.path_params["experiment_id"]
        store = self.api.store()
        if await run_in_threadpool(store.experiment_status, experiment_id) is None:
            raise ApiError(404, f"no experiment {experiment_id!r}")
        try:
            status = await run_in_threadpool(ex.request_stop, store, experiment_id, actor=request.state.actor)
        except ex.ExperimentError as exc:
            raise ApiError(409, str(exc)) from None
        return json_response(
            {"experiment": experiment_id, "status": status, "poll": f"{API_PREFIX}/experiments/{experiment_id}"}, 202
        )

    async def compare_experiments(self, request: Request) -> Response:
        """GET /api/v1/experiments/{a}/compare/{b}[?by=position]: per variant and scorer, what B improved or regressed."""
        from ...whatif.experiment_compare import CompareError, compare_experiments

        a, b = request.path_params["a"], request.path_params["b"]
        by = request.query_params.get("by", "name")
        if by not in ("name", "position"):
            raise ApiError(422, "by: expected name or position", [{"loc": "by", "msg": "expected name or position"}])
        try:
            return json_response(
                await run_in_threadpool(compare_experiments, self.api.store(), a, b, by_position=by == "position")
            )
        except CompareError as exc:
            raise ApiError(404 if str(exc).startswith("no experiment") else 422, str(exc)) from None


SCHEDULE_FIELDS = (
    "name",
    "dataset",
    "models",
    "variants",
    "trigger",
    "api_base",
    "scorers",
    "from",
    "concurrency",
    "budget_usd",
    "budget_tokens",
    "webhook_url",
    "webhook_secret_env",
)


def _only(body: dict, known: set[str]) -> None:
    unknown = sorted(set(body) - known)
    if unknown:
        raise ApiError(422, f"{unknown[0]}: not a field here", [{"loc": unknown[0], "msg": "not a field here"}])


def _text(body: dict, key: str) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise ApiError(422, f"{key}: expected text", [{"loc": key, "msg": "expected text"}])
    return value


def _texts(body: dict, key: str) -> list[str] | None:
    value = body.get(key)
    if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise ApiError(422, f"{key}: expected a list of texts", [{"loc": key, "msg": "expected a list of texts"}])
    return value

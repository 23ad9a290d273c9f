"""Review queues and share links (team.queues, team.shares): make and work a queue, export its
verdicts; make, list and revoke share links, and open one (no bearer token: the link's token is the key).
What they change goes in the audit log (team.audit), under the token's name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...storage.actor import MANAGE_QUEUES, READ, SHARE, WORK_QUEUE
from ...storage.filter_params import session_filter
from ..bodies import typed_body
from ..body_models import QueueBody, ReviewBody, ReviewerBody, ShareBody
from ..context import API_PREFIX, ApiContext
from ..responses import ApiError, json_response


class TeamRoutes:
    def __init__(self, api: ApiContext):
        self.api = api

    def routes(self) -> list[Route]:
        guarded, qid = self.api.guarded, "{queue_id:int}"
        return [
            Route(f"{API_PREFIX}/queues", guarded(self.list_queues, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/queues", guarded(self.create_queue, MANAGE_QUEUES), methods=["POST"]),
            Route(f"{API_PREFIX}/queues/{qid}", guarded(self.get_queue, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/queues/{qid}", guarded(self.delete_queue, MANAGE_QUEUES), methods=["DELETE"]),
            Route(f"{API_PREFIX}/queues/{qid}/export.csv", guarded(self.export_queue, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/queues/{qid}/next", guarded(self.next_queue_item, WORK_QUEUE), methods=["POST"]),
            Route(
                f"{API_PREFIX}/queues/{qid}/items/{{item_id:int}}/{{verb}}",
                guarded(self.work_queue_item, WORK_QUEUE),
                methods=["POST"],
            ),
            Route(f"{API_PREFIX}/shares", guarded(self.create_share, SHARE), methods=["POST"]),
            Route(f"{API_PREFIX}/shares", guarded(self.list_shares, SHARE), methods=["GET"]),
            Route(f"{API_PREFIX}/shares/{{share_id:int}}", guarded(self.revoke_share, SHARE), methods=["DELETE"]),
            Route(
                f"{API_PREFIX}/share/{{token}}", self.api.answered(self.open_share), methods=["GET"]
            ),  # no bearer token: the token is the key
        ]

    async def _team_call(self, fn: Callable[[], Any], status: int = 200) -> Response:
        from ...team.queues import QueueError
        from ...team.shares import ShareError

        try:
            return json_response(await run_in_threadpool(fn), status)
        except (QueueError, ShareError) as exc:
            missing = str(exc).startswith(("no queue", "no run", "no link")) and status == 200
            raise ApiError(404 if missing else 422, str(exc), [{"loc": str(exc).split(":", 1)[0], "msg": str(exc)}]) from None

    async def list_queues(self, request: Request) -> Response:
        from ...team import queues

        return await self._team_call(lambda: {"queues": queues.list_queues(self.api.store())})

    async def create_queue(self, request: Request) -> Response:
        """POST /api/v1/queues {name, runs | filter (the runs list's parameters), rubric?, reviews_per_item?, assign?}
        → {id, items}."""
        from ...team import queues

        body = await typed_body(request, self.api.max_body, QueueBody)
        actor = request.state.actor

        def make() -> dict:
            runs, given = body.get("runs"), body.get("filter")
            if runs is not None and not (isinstance(runs, list) and all(isinstance(r, str) for r in runs)):
                raise queues.QueueError("runs: expected a list of run ids")
            flt = None
            if runs is None:
                if not (isinstance(given, dict) and given):
                    raise queues.QueueError(
                        "filter: name the runs (runs) or a filter (status, model, agent_id, workflow, since, q…)"
                    )
                try:
                    flt = session_filter({k: str(v) for k, v in given.items()})
                except ValueError as exc:
                    raise queues.QueueError(f"filter.{exc}") from None
            assign = body.get("assign") or []
            if not isinstance(assign, list):
                raise queues.QueueError("assign: expected a list of reviewer names")
            return queues.create(
                self.api.store(),
                body.get("name"),
                flt=flt,
                ids=runs,
                rubric=body.get("rubric"),
                reviews_per_item=body.get("reviews_per_item", 1),
                assignees=assign,
                actor=actor,
            )

        return await self._team_call(make, 201)

    async def get_queue(self, request: Request) -> Response:
        """GET /api/v1/queues/{id}: progress, items with their verdicts, per reviewer, agreement."""
        from ...team import queues

        def show() -> dict:
            queues.get(self.api.store(), request.path_params["queue_id"])
            return queues.results(self.api.store(), request.path_params["queue_id"])

        return await self._team_call(show)

    async def delete_queue(self, request: Request) -> Response:
        from ...team import queues

        qid = request.path_params["queue_id"]
        if not await run_in_threadpool(lambda: queues.delete(self.api.store(), qid, actor=request.state.actor)):
            raise ApiError(404, f"no queue {qid}")
        return json_response({"id": qid, "deleted": True})

    async def export_queue(self, request: Request) -> Response:
        from ...team import queues

        qid = request.path_params["queue_id"]

        def text() -> str:
            queues.get(self.api.store(), qid)
            return queues.to_csv(queues.results(self.api.store(), qid))

        try:
            data = await run_in_threadpool(text)
        except queues.QueueError as exc:
            raise ApiError(404, str(exc)) from None
        return Response(
            data, media_type="text/csv; charset=utf-8", headers={"Content-Disposition": f'attachment; filename="queue-{qid}.csv"'}
        )

    async def next_queue_item(self, request: Request) -> Response:
        """POST /api/v1/queues/{id}/next {reviewer} → {item} held for them (null: nothing left for them)."""
        from ...team import queues

        body = await typed_body(request, self.api.max_body, ReviewerBody)
        qid = request.path_params["queue_id"]
        return await self._team_call(
            lambda: {"item": queues.next_item(self.api.store(), qid, _reviewer(request, body), actor=request.state.actor)}
        )

    async def work_queue_item(self, request: Request) -> Response:
        """POST /api/v1/queues/{id}/items/{item}/review {reviewer, verdict, criteria?, note?, should_have?},
        or …/skip {reviewer}."""
        from ...team import queues

        body = await typed_body(request, self.api.max_body, ReviewBody)
        qid, item, verb = request.path_params["queue_id"], request.path_params["item_id"], request.path_params["verb"]
        if verb not in ("review", "skip"):
            raise ApiError(404, f"no action {verb!r} on a queue item (review, skip)")

        def act() -> dict:
            if verb == "skip":
                queues.skip(self.api.store(), qid, item, _reviewer(request, body), actor=request.state.actor)
            else:
                criteria = body.get("criteria")
                if criteria is not None and not isinstance(criteria, dict):
                    raise queues.QueueError("criteria: expected an object of criterion: pass | fail")
                queues.save_review(
                    self.api.store(),
                    qid,
                    item,
                    _reviewer(request, body),
                    body.get("verdict"),
                    criteria=criteria,
                    note=body.get("note"),
                    should_have=body.get("should_have"),
                    actor=request.state.actor,
                )
            return {"queue": qid, "item": item, "saved": verb}

        return await self._team_call(act)

    async def create_share(self, request: Request) -> Response:
        """POST /api/v1/shares {session, other?} | {queue}, expires? ("7d") → {id, token, url, expires_at};
        the token only here."""
        from ...team import shares

        body = await typed_body(request, self.api.max_body, ShareBody)

        def make() -> dict:
            kind = shares.QUEUE if body.get("queue") is not None else shares.COMPARE if body.get("other") else shares.RUN
            queue = body.get("queue")
            if queue is not None and not isinstance(queue, int):
                raise shares.ShareError("queue: expected a queue id")
            return shares.make(
                self.api.store(),
                kind,
                session=body.get("session"),
                other=body.get("other"),
                queue=queue,
                expires=shares.parse_expiry(body.get("expires")),
                actor=request.state.actor,
            )

        return await self._team_call(make, 201)

    async def list_shares(self, request: Request) -> Response:
        from ...team import shares

        return await self._team_call(lambda: {"shares": shares.list_links(self.api.store(), actor=request.state.actor)})

    async def revoke_share(self, request: Request) -> Response:
        from ...team import shares

        sid = request.path_params["share_id"]
        if not await run_in_threadpool(lambda: shares.revoke(self.api.store(), sid, actor=request.state.actor)):
            raise ApiError(404, f"no link {sid} that still opens")
        return json_response({"id": sid, "revoked": True})

    async def open_share(self, request: Request) -> Response:
        """GET /api/v1/share/{token}: the one object the link was made for (404 unknown, 410 expired, revoked or deleted)."""
        from ...team import shares
        from ..shared import shared_object

        origin = request.client.host if request.client else "api"
        store = self.api.store()
        private = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
        try:
            body = await run_in_threadpool(
                lambda: shared_object(store, shares.open_link(store, request.path_params["token"], origin=origin))
            )
        except shares.ShareThrottled as exc:
            raise ApiError(429, str(exc), headers={**private, "Retry-After": str(max(1, round(exc.wait_s)))}) from None
        except shares.ShareNotFound:
            raise ApiError(404, "no such link", headers=private) from None
        except shares.ShareGone as exc:
            return json_response({"detail": str(exc), "reason": exc.reason}, 410, private)
        return json_response(body, headers=private)


def _reviewer(request: Request, body: dict) -> str:
    """Who works the queue: the token's holder (named tokens: reviewer:NAME:TOKEN), never a name typed
    in the body; a body naming someone else is refused."""
    who = request.state.actor.who
    claimed = body.get("reviewer")
    if claimed not in (None, "") and str(claimed).strip().casefold() != who.casefold():
        why = f"reviewer: this token speaks for {who!r}, not for {str(claimed)[:200]!r}"
        raise ApiError(422, why, [{"loc": "reviewer", "msg": why}])
    return who

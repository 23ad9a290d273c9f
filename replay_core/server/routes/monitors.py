"""Monitors, their alerts and release comparisons (replay_core.monitors) over HTTP: read with any
token; add, check, mute and acknowledge with an editor's — audited under the token's name."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...events import INT_MAX
from ...storage.actor import MANAGE_MONITORS, READ
from ..bodies import object_body
from ..context import API_PREFIX, ApiContext
from ..responses import ApiError, json_response

MAX_MUTE_HOURS = 24 * 365
MAX_ALERTS = 1000


def _refused(message: str, status: int = 422) -> ApiError:
    """A 4xx naming the field at fault (the text before the first colon)."""
    return ApiError(status, message, [{"loc": message.split(":", 1)[0], "msg": message}])


def _whole(request: Request, key: str, default: int | None, most: int) -> int | None:
    """A query parameter that must be a whole number from 1 to `most`, or absent (the default)."""
    text = request.query_params.get(key)
    if text is None:
        return default
    if not (text.isdigit() and 1 <= int(text) <= most):
        raise _refused(f"{key}: a whole number from 1 to {most:,}, got {text[:20]!r}")
    return int(text)


class MonitorRoutes:
    def __init__(self, api: ApiContext):
        self.api = api

    def routes(self) -> list[Route]:
        guarded, mid = self.api.guarded, "{monitor_id:int}"
        return [
            Route(f"{API_PREFIX}/monitors", guarded(self.list_monitors, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/monitors", guarded(self.add_monitor, MANAGE_MONITORS), methods=["POST"]),
            Route(f"{API_PREFIX}/monitors/{mid}", guarded(self.get_monitor, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/monitors/{mid}/check", guarded(self.check_monitor, MANAGE_MONITORS), methods=["POST"]),
            Route(f"{API_PREFIX}/monitors/{mid}/mute", guarded(self.mute_monitor, MANAGE_MONITORS), methods=["POST"]),
            Route(f"{API_PREFIX}/monitors/{mid}/webhook", guarded(self.set_webhook, MANAGE_MONITORS), methods=["PUT"]),
            Route(f"{API_PREFIX}/alerts", guarded(self.list_alerts, READ), methods=["GET"]),
            Route(f"{API_PREFIX}/alerts/{{alert_id:int}}/ack", guarded(self.ack_alert, MANAGE_MONITORS), methods=["POST"]),
            Route(f"{API_PREFIX}/releases/compare", guarded(self.compare_releases, READ), methods=["GET"]),
        ]

    async def _call(self, fn: Callable[[], Any], status: int = 200) -> Response:
        from ...monitors.rules import RuleError

        try:
            return json_response(await run_in_threadpool(fn), status)
        except RuleError as exc:
            raise _refused(str(exc)) from None

    def _monitor(self, request: Request) -> dict:
        monitor_id = request.path_params["monitor_id"]
        found = self.api.store().get_monitor(monitor_id)
        if found is None:
            raise ApiError(404, f"no monitor {monitor_id}")
        return found

    async def list_monitors(self, request: Request) -> Response:
        """GET /api/v1/monitors → {monitors: [{id, name, rule, last_verdict, checked_at, alert_open, muted_until}]}."""
        from ...monitors.check import summary

        store = self.api.store()
        return await self._call(lambda: {"monitors": [summary(store, m) for m in store.list_monitors()]})

    async def add_monitor(self, request: Request) -> Response:
        """POST /api/v1/monitors {name, rule: {metric, threshold | change, window_hours?, min_runs?, error_class?,
        filters?}, webhook_url?, webhook_secret_env?} → the monitor (201)."""
        from ...monitors import check
        from ...monitors.rules import RuleError

        body = await object_body(request, self.api.max_body)
        unknown = sorted(set(body) - {"name", "rule", "webhook_url", "webhook_secret_env"})
        if unknown:
            raise _refused(f"{unknown[0]}: not a monitor field")
        for key in ("name", "webhook_url", "webhook_secret_env"):
            if body.get(key) is not None and not isinstance(body[key], str):
                raise _refused(f"{key}: expected text")

        def add() -> dict:
            if not isinstance(body.get("rule"), dict):
                raise RuleError("rule: expected an object (metric, threshold or change, filters…)")
            return check.add(
                self.api.store(),
                body.get("name") or "",
                body["rule"],
                webhook_url=body.get("webhook_url"),
                webhook_secret_env=body.get("webhook_secret_env"),
                actor=request.state.actor,
            )

        return await self._call(add, 201)

    async def get_monitor(self, request: Request) -> Response:
        """GET /api/v1/monitors/{id}: its rule, its last judgement, its open alert."""
        from ...monitors.check import details

        return await self._call(lambda: details(self.api.store(), self._monitor(request)))

    async def check_monitor(self, request: Request) -> Response:
        """POST /api/v1/monitors/{id}/check: judge it now (as the schedule does), open or resolve its alert."""
        from ...monitors import check

        return await self._call(lambda: check.check(self.api.store(), self._monitor(request)))

    async def mute_monitor(self, request: Request) -> Response:
        """POST /api/v1/monitors/{id}/mute {hours} (0 unmutes): judged on, nothing sent meanwhile."""
        from ...vocabulary import now_utc

        body = await object_body(request, self.api.max_body)
        hours = body.get("hours")
        if isinstance(hours, bool) or not isinstance(hours, int | float) or not 0 <= hours <= MAX_MUTE_HOURS:
            raise _refused(f"hours: a number from 0 to {MAX_MUTE_HOURS}, got {hours!r}")

        def mute() -> dict:
            found = self._monitor(request)
            until = now_utc() + timedelta(hours=hours) if hours else None
            self.api.store().mute_monitor(found["id"], until, actor=request.state.actor)
            return {"id": found["id"], "muted_until": until}

        return await self._call(mute)

    async def set_webhook(self, request: Request) -> Response:
        """PUT /api/v1/monitors/{id}/webhook {url | null, secret_env?}: where its alerts go (the built-in release
        monitor's too)."""
        from ...monitors.check import set_webhook

        body = await object_body(request, self.api.max_body)
        unknown = sorted(set(body) - {"url", "secret_env"})
        if unknown:
            raise _refused(f"{unknown[0]}: not a webhook field (url, secret_env)")
        for key in ("url", "secret_env"):
            if body.get(key) is not None and not isinstance(body[key], str):
                raise _refused(f"{key}: expected text")

        def put() -> dict:
            found = set_webhook(
                self.api.store(), self._monitor(request), body.get("url"), body.get("secret_env"), actor=request.state.actor
            )
            return {k: found[k] for k in ("id", "name", "webhook_url", "webhook_secret_env")}

        return await self._call(put)

    async def list_alerts(self, request: Request) -> Response:
        """GET /api/v1/alerts?monitor=&limit= → {alerts}, newest first."""
        monitor = _whole(request, "monitor", None, INT_MAX)
        limit = _whole(request, "limit", 100, MAX_ALERTS) or 100
        from ...monitors.check import alerts

        store = self.api.store()
        return await self._call(lambda: {"alerts": alerts(store, monitor, limit=limit)})

    async def ack_alert(self, request: Request) -> Response:
        """POST /api/v1/alerts/{id}/ack: someone is on it."""
        alert_id = request.path_params["alert_id"]
        actor = request.state.actor
        if not await run_in_threadpool(lambda: self.api.store().ack_alert(alert_id, actor=actor)):
            raise ApiError(404, f"no alert {alert_id}")
        return json_response({"id": alert_id, "acked_by": actor.who})

    async def compare_releases(self, request: Request) -> Response:
        """GET /api/v1/releases/compare?a=&b=&workflow=&min_runs=&dimension= → b against a, metric by metric."""
        from ...monitors.releases import compare

        params = request.query_params
        for key in ("a", "b"):
            if not params.get(key):
                raise _refused(f"{key}: give the {'earlier' if key == 'a' else 'later'} value to compare")
        min_runs = _whole(request, "min_runs", 20, 100_000) or 20
        return await self._call(
            lambda: compare(
                self.api.store(),
                params["a"],
                params["b"],
                dimension=params.get("dimension", "agent_version"),
                workflow=params.get("workflow") or None,
                min_runs=min_runs,
            ).to_dict()
        )

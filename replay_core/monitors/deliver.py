"""Alerts sent to a webhook: the documented JSON body (docs/monitors.md), or Slack's `{"text": …}` for a
Slack incoming-webhook address, the alert's failure patterns named first (monitors.patterns);
signed with HMAC-SHA256 of the body when the monitor names a secret's variable; retried with backoff
on a refused connection, a timeout or a 5xx, never on a 4xx.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from ..storage.store import Store

SIGNATURE_HEADER = "X-Agent-Replay-Signature"
TRIES = 4
BACKOFF_S = 1.0  # then 2, 4: a receiver restarting gets a few seconds


def body_for(url: str, alert: dict) -> bytes:
    if "hooks.slack.com/" in url:
        return orjson.dumps({"text": alert["text"]})
    return orjson.dumps(alert)


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def deliver(url: str, alert: dict, secret_env: str | None, *, tries: int = TRIES, backoff_s: float = BACKOFF_S) -> list[dict]:
    """POST the alert; every attempt's outcome, in order (the last one ok, or why it gave up)."""
    import httpx  # here, not with the module: the monitors' passes import this module, and most send nothing

    body = body_for(url, alert)
    headers = {"Content-Type": "application/json", "User-Agent": "agent-replay-monitors"}
    if secret_env:
        secret = os.environ.get(secret_env)
        if not secret:
            return [{"ok": False, "error": f"the signing secret's variable {secret_env} is not set: not sent"}]
        headers[SIGNATURE_HEADER] = signature(secret, body)
    attempts: list[dict[str, object]] = []
    for attempt in range(tries):
        try:
            answer = httpx.post(url, content=body, headers=headers, timeout=10)
            status = answer.status_code
            outcome: dict[str, object] = {"ok": status < 300, "status": status}
        except httpx.HTTPError as exc:
            status = 0
            outcome = {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
        attempts.append(outcome)
        if status and (status < 300 or 400 <= status < 500):
            break
        if attempt + 1 < tries:
            time.sleep(backoff_s * 2**attempt)
    return attempts


def is_muted(monitor: dict, now: datetime) -> bool:
    return monitor.get("muted_until") is not None and monitor["muted_until"] > now


def announce(
    store: Store, monitor: dict, event: str, alert: dict, sentence: str, now: datetime, deliver_to: Callable = deliver
) -> None:
    """Send an alert's opening or resolution to the monitor's webhook (unless muted); keep the answers."""
    if not monitor.get("webhook_url") or is_muted(monitor, now):
        return
    from .patterns import figure_named

    alert = figure_named(store, alert["id"], alert)  # the alert, flat: its figure's fields and its id
    body = {
        "event": event,
        "monitor": monitor["name"],
        "alert": alert["id"],
        "at": now.isoformat(),
        "rule": alert["rule"],
        "sentence": sentence,
        "current": alert.get("current"),
        "baseline": alert.get("baseline"),
        "runs_link": alert.get("runs_link"),
        "patterns": alert.get("patterns") or [],
    }
    body["text"] = f"[{event}] {monitor['name']}: {sentence}" + (f" Runs: {body['runs_link']}" if event == "opened" else "")
    store.note_delivery(alert["id"], event, deliver_to(monitor["webhook_url"], body, monitor.get("webhook_secret_env")))

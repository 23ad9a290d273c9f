"""Where the recorder delivers events: a database (through `ingest`) or the app's HTTP API.

A sink either stores a batch or raises one of two errors, and the difference decides
what happens to the batch: `SinkUnavailable` (database down, network, bad token) keeps
it in the spool for a later try; `SinkRejected` (the events themselves are refused)
sets it aside so that one bad event never blocks the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

import httpx
import orjson
from sqlalchemy import exc as sa

from ..events import AttachmentEvent, SessionEndEvent, SessionEvent, StepEvent
from ..ingest.formats import Event
from ..ingest.pipeline import ingest
from ..storage.store import Store

SOURCE = "sdk"
STEPS_PER_REQUEST = 500
# down, unreachable, locked, or a concurrent writer of the same event: worth another try later
_TRANSIENT = (sa.OperationalError, sa.InterfaceError, sa.IntegrityError, sa.DisconnectionError, sa.TimeoutError, OSError)


class SinkUnavailable(Exception):
    """The sink could not take the batch now; the same batch may succeed later."""


class SinkRejected(Exception):
    """The sink refused the batch itself; sending it again will not help."""


class DatabaseSink:
    """Writes through the ingestion pipeline (validation, redaction, idempotent store).

    The Store is opened on first use and again after a failure, so a recorder can start
    while its database is down and deliver once it is up.
    """

    def __init__(self, url: str):
        self.url = url
        self.key = url
        self._store = None

    def send(self, events: Sequence[Event]) -> None:
        try:
            if self._store is None:
                self._store = Store(self.url)
            ingest(self._store, events, source=SOURCE)
        except _TRANSIENT as exc:
            self.close()
            raise SinkUnavailable(f"database unavailable: {_first_line(exc)}") from exc
        except Exception as exc:  # the values themselves (e.g. NUL in PostgreSQL text)
            if self._store is None:
                raise SinkUnavailable(f"database unavailable: {_first_line(exc)}") from exc
            raise SinkRejected(f"database refused the events: {_first_line(exc)}") from exc

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


class HttpSink:
    """Posts to the app's API: the session, its steps in requests of 500, its end."""

    def __init__(self, base_url: str, token: str | None, *, timeout: float = 10.0, transport: httpx.BaseTransport | None = None):
        self.key = base_url.rstrip("/")
        headers = {"content-type": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        self._client = httpx.Client(base_url=self.key, headers=headers, timeout=timeout, transport=transport)

    def send(self, events: Sequence[Event]) -> None:
        for sid, group in _by_session(events).items():
            path = f"/api/v1/sessions/{quote(sid, safe='')}"
            for ev in group:
                if isinstance(ev, SessionEvent):
                    self._post("/api/v1/sessions", ev.to_json_dict())
            steps = [ev.to_json_dict() for ev in group if isinstance(ev, StepEvent)]
            for start in range(0, len(steps), STEPS_PER_REQUEST):
                self._post(f"{path}/steps", steps[start : start + STEPS_PER_REQUEST])
            for ev in group:
                if isinstance(ev, AttachmentEvent):
                    self._post(f"{path}/steps/{quote(ev.event_id, safe='')}/attachments", ev.to_json_dict())
            for ev in group:
                if isinstance(ev, SessionEndEvent):
                    self._post(f"{path}/end", ev.to_json_dict())

    def _post(self, path: str, body) -> None:
        try:
            res = self._client.post(path, content=orjson.dumps(body))
        except httpx.HTTPError as exc:
            raise SinkUnavailable(f"{self.key}: {type(exc).__name__}: {exc}") from exc
        if res.status_code < 300:
            return
        detail = f"{self.key}{path}: HTTP {res.status_code} {res.text[:300]}"
        if res.status_code in (400, 413, 422):
            raise SinkRejected(detail)
        raise SinkUnavailable(detail)  # 401 (token), 404 (no API there), 5xx: keep and retry

    def close(self) -> None:
        self._client.close()


def _by_session(events: Sequence[Event]) -> dict[str, list[Event]]:
    groups: dict[str, list[Event]] = {}
    for ev in events:
        groups.setdefault(ev.session_id, []).append(ev)
    return groups


def _first_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:300]}"

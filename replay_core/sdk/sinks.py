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
    """The sink refused the batch itself; sending it again will not help.

    With `refused` (event, reason) pairs, the sink has already narrowed the refusal: those
    events were refused and every other event of the batch was delivered."""

    def __init__(self, detail: str, *, refused: list[tuple[Event, str]] | None = None, errors: list[dict] | None = None):
        super().__init__(detail)
        self.refused, self.errors = refused, errors or []


class DatabaseSink:
    """Writes through the ingestion pipeline (validation, redaction, idempotent store).

    The Store is opened on first use and again after a failure, so a recorder can start
    while its database is down and deliver once it is up.
    """

    def __init__(self, url: str):
        self.url = url
        self.key = url
        self._store: Store | None = None

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
        """Deliver every event the API takes. Refused ones (4xx naming them) are narrowed down
        to themselves — by the `steps[i]` the API names, else by halving — and raised together
        in one SinkRejected(refused=...) after all the others were delivered."""
        refused: list[tuple[Event, str]] = []
        for sid, group in _by_session(events).items():
            path = f"/api/v1/sessions/{quote(sid, safe='')}"
            for ev in group:
                if isinstance(ev, SessionEvent):
                    self._deliver("/api/v1/sessions", [ev], refused)
            steps = [ev for ev in group if isinstance(ev, StepEvent)]
            for start in range(0, len(steps), STEPS_PER_REQUEST):
                self._deliver(f"{path}/steps", steps[start : start + STEPS_PER_REQUEST], refused, batch=True)
            for ev in group:
                if isinstance(ev, AttachmentEvent):
                    self._post(f"{path}/steps/{quote(ev.event_id, safe='')}/attachments", ev.to_json_dict())
            for ev in group:
                if isinstance(ev, SessionEndEvent):
                    self._deliver(f"{path}/end", [ev], refused)
        if refused:
            raise SinkRejected(f"{len(refused)} of {len(events)} events refused", refused=refused)

    def _deliver(self, path: str, events: Sequence[Event], refused: list[tuple[Event, str]], *, batch: bool = False) -> None:
        try:
            self._post(path, [ev.to_json_dict() for ev in events] if batch else events[0].to_json_dict())
            return
        except SinkRejected as exc:
            if len(events) == 1:
                refused.append((events[0], str(exc)))
                return
            named = _named_items(exc.errors, len(events))
        if named:
            refused.extend((events[i], f"{self.key}{path}: {reason}") for i, reason in named.items())
            rest = [ev for i, ev in enumerate(events) if i not in named]
            if rest:
                self._deliver(path, rest, refused, batch=batch)
            return
        half = len(events) // 2
        self._deliver(path, events[:half], refused, batch=batch)
        self._deliver(path, events[half:], refused, batch=batch)

    def _post(self, path: str, body) -> None:
        try:
            res = self._client.post(path, content=orjson.dumps(body))
        except httpx.HTTPError as exc:
            raise SinkUnavailable(f"{self.key}: {type(exc).__name__}: {exc}") from exc
        if res.status_code < 300:
            return
        detail = f"{self.key}{path}: HTTP {res.status_code} {res.text[:300]}"
        if res.status_code in (400, 409, 413, 422):
            try:
                errors = res.json().get("errors") or []
            except ValueError:
                errors = []
            raise SinkRejected(detail, errors=errors if isinstance(errors, list) else [])
        raise SinkUnavailable(detail)  # 401 (token), 404 (no API there), 5xx: keep and retry

    def close(self) -> None:
        self._client.close()


def _by_session(events: Sequence[Event]) -> dict[str, list[Event]]:
    groups: dict[str, list[Event]] = {}
    for ev in events:
        groups.setdefault(ev.session_id, []).append(ev)
    return groups


def _named_items(errors: list[dict], n: int) -> dict[int, str]:
    """{index: reason} of the `steps[i].field` the API named; empty when it named none it sent."""
    named: dict[int, str] = {}
    for err in errors:
        loc = str(err.get("loc", "")) if isinstance(err, dict) else ""
        head, _, rest = loc.partition("]")
        if head.startswith("steps[") and head[6:].isdigit() and int(head[6:]) < n:
            named.setdefault(int(head[6:]), f"{rest.lstrip('.') or 'step'}: {err.get('msg')}")
    return named


def _first_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:300]}"

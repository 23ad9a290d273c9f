"""Query parameters (a URL's, an HTTP request's) read into a `SessionFilter`.

The runs list's deep links, `GET /api/v1/sessions`, a review queue's filter and the CLI's
`--since/--until` all read the same parameters the same way, so one link means one set of runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from ..events import SessionStatus
from .attachments import REVIEW_LABELS
from .filters import HAS_FLAGS, SessionFilter

FILTER_FIELDS = (
    "model",
    "agent_id",
    "workflow",
    "environment",
    "agent_version",
    "user_id",
    "thread_id",
    "tag",
    "source",
    "replay_of",
    "failed_tool",
    "error_class",
)
REVIEW_STATES = (*REVIEW_LABELS, "unreviewed")


def session_filter(params: Mapping[str, str], *, strict: bool = True) -> SessionFilter:
    """A SessionFilter from query parameters.

    `q` searches names and step content; `replays=1` also counts what-if replays and experiments'
    runs (originals only otherwise). Strict: a bad value raises ValueError naming
    the parameter; lenient (links typed by people): a bad value is ignored.
    """
    values: dict[str, Any] = {}

    def checked(name: str, parse: Callable[[str], Any]) -> None:
        raw = (params.get(name) or "").strip()
        if not raw:
            return
        try:
            values[name] = parse(_no_nul(name, raw))
        except ValueError:
            if strict:
                raise

    def one_of(name: str, allowed: tuple[str, ...]) -> Callable[[str], str]:
        def parse(raw: str) -> str:
            if raw not in allowed:
                raise ValueError(f"{name}: expected one of {', '.join(allowed)}, got {raw!r}")
            return raw

        return parse

    for name in FILTER_FIELDS:
        checked(name, str)
    checked("status", one_of("status", tuple(s.value for s in SessionStatus)))
    checked("review", one_of("review", REVIEW_STATES))
    checked("has", one_of("has", HAS_FLAGS))
    checked("since", lambda raw: _parse_when("since", raw, end=False))
    checked("until", lambda raw: _parse_when("until", raw, end=True))
    checked(
        "replays", lambda raw: one_of("replays", ("1", "true", "yes", "0", "false", "no"))(raw.lower()) in ("1", "true", "yes")
    )
    if values.pop("replays", False):  # originals only unless asked: replays and experiments' runs are not the agent's runs
        values |= {"include_replays": True, "experiments": True}
    text = (params.get("q") or "").strip()
    if "\x00" in text:
        if strict:
            _no_nul("q", text)
        text = ""
    return SessionFilter(**values, text=text or None)


def _parse_when(name: str, value: str, *, end: bool) -> datetime:
    """A day (whole day: `until` includes it) or an ISO date-time."""
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            return datetime.combine(day + timedelta(days=1) if end else day, time(), UTC)
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"{name}: expected a date (2026-05-01) or an ISO date-time, got {value!r}") from None


def _no_nul(name: str, raw: str) -> str:
    if "\x00" in raw:
        raise ValueError(f"{name}: NUL character (\\x00) is not allowed")
    return raw

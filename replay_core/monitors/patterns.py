"""An alert's failure patterns (from `explain`), named when the alert is first shown or before it is
delivered, not when it opens: explaining a run reads all its steps, and the pass that opens alerts
runs beside ingest. They are named from the newest SAMPLE failing runs behind the alert and kept in
its figure, so each alert pays for them once."""

from __future__ import annotations

from dataclasses import asdict, fields
from datetime import datetime
from typing import Any

from ..storage.filters import SessionFilter
from ..storage.store import Store

SAMPLE = 50  # failing runs explained to name an alert's patterns (the newest)
PATTERNS = 3  # failure patterns named in an alert
_DATES = ("since", "until")


def pending(flt: SessionFilter, prompt_version: str | None = None) -> dict:
    """What an opening alert's figure keeps so its patterns can be named later: the failing runs' filter
    (and the prompt version, which is in the runs' metadata, not a filter field)."""
    defaults = {f.name: f.default for f in fields(SessionFilter)}
    spec = {k: (v.isoformat() if k in _DATES else v) for k, v in asdict(flt).items() if v != defaults[k]}
    assert "ids" not in spec, "an alert names its runs by filter, never by id"
    return {"patterns": None, "patterns_of": spec | ({"prompt_version": prompt_version} if prompt_version else {})}


def name(store: Store, spec: dict) -> list[str]:
    """The commonest failure patterns among the newest SAMPLE runs `spec` (a `pending` filter) picks."""
    from ..understand.explain import failure_patterns

    spec = dict(spec)
    prompt_version = spec.pop("prompt_version", None)
    values: dict[str, Any] = {k: (datetime.fromisoformat(v) if k in _DATES else v) for k, v in spec.items()}
    flt = SessionFilter(**values)
    if prompt_version is not None:
        flt = SessionFilter(ids=tuple(store.runs_with("prompt_version", prompt_version, flt, newest=SAMPLE)))
    found, _ = failure_patterns(store, flt, limit=SAMPLE)
    return [p.sentence for p in found[:PATTERNS]]


def figure_named(store: Store, alert_id: int, figure: dict) -> dict:
    """An alert's figure with its patterns: named and kept the first time, read after."""
    if figure.get("patterns") is not None or "patterns_of" not in figure:
        return figure
    found = name(store, figure["patterns_of"])
    store.set_alert_patterns(alert_id, found)
    return figure | {"patterns": found}


def named(store: Store, alert: dict) -> dict:
    """A stored alert with its patterns."""
    return alert | {"figure": figure_named(store, alert["id"], alert["figure"])}


def shown(store: Store, alerts: list[dict]) -> list[dict]:
    """Alerts about to be shown (a page, the CLI, the HTTP API), each with its patterns."""
    return [named(store, a) for a in alerts]

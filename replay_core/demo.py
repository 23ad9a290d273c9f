"""The demo runs shipped in data/demo, loaded so that they look recent.

The files are fixed (made by scripts/make_demo.py); on load every timestamp moves by
the same offset so that the newest demo event is a minute old. That keeps the
dashboard's "last 7 days" meaningful and the running demo run alive for a while.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from . import config
from .events import now_utc
from .ingest.formats import Event
from .ingest.pipeline import IngestReport, ingest, read_events
from .storage.store import Store

TIME_FIELDS = ("started_at", "ended_at", "timestamp")


def demo_files(folder: Path = config.DEMO_DIR) -> list[Path]:
    return sorted(folder.glob("*.jsonl"))


def read_demo(folder: Path = config.DEMO_DIR) -> list[Event]:
    events: list[Event] = []
    for path in demo_files(folder):
        parsed, bad, _ = read_events(path.read_bytes(), str(path), "native")
        if bad:
            raise ValueError(f"demo file is broken: {bad[0]}")
        events += parsed
    return events


def shifted(events: list[Event], now: datetime | None = None) -> list[Event]:
    """The same events, moved in time so that the newest is a minute before `now`."""
    stamps = [getattr(e, f) for e in events for f in TIME_FIELDS if getattr(e, f, None)]
    if not stamps:
        return events
    offset: timedelta = (now or now_utc()) - timedelta(minutes=1) - max(stamps)
    out = []
    for ev in events:
        update = {f: getattr(ev, f) + offset for f in TIME_FIELDS if getattr(ev, f, None)}
        out.append(ev.model_copy(update=update) if update else ev)
    return out


def load_demo(store: Store, *, only_if_empty: bool = True, now: datetime | None = None) -> IngestReport | None:
    """Load the demo runs; by default only into an empty database."""
    if only_if_empty and store.count_sessions() > 0:
        return None
    return ingest(store, shifted(read_demo(), now), source="demo")

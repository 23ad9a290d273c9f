"""A `span` step around its children: `with run.span("retrieve"):` makes the steps inside its children."""

from __future__ import annotations

import time
from typing import Any

from ..events import now_utc
from .handles import Run, current_parent, new_id


class Span:
    """A `span` step around its children. Written when it closes (duration known), under the seq
    it took when it opened, so it sorts before its children; `metadata` may be filled meanwhile."""

    def __init__(self, run: Run, name: str, fields: dict[str, Any]):
        self.run, self.name = run, name
        self.metadata: dict[str, Any] = dict(fields.pop("metadata", None) or {})
        self.event_id: str = fields.pop("event_id", None) or new_id()
        self.fields = fields

    def __enter__(self):
        self.parent_id = self.fields.pop("parent_id", None) or current_parent.get()
        self.started = now_utc()
        self._t0 = time.perf_counter()
        self._slot = self.run.recorder._reserve(self.run)
        self._token = current_parent.set(self.event_id)
        return self

    def __exit__(self, exc_type, exc, tb) -> bool | None:
        if exc is not None:
            self.run.record_exception(exc)
        self.close("error" if exc is not None else "ok", type(exc).__name__ if exc is not None else None)
        return None  # the exception goes on (a FallbackBlock may stop one: its bool)

    def close(self, status: str, error_class: str | None) -> None:
        current_parent.reset(self._token)
        event = self.run.build(
            "span",
            content=self.name,
            event_id=self.event_id,
            parent_id=self.parent_id,
            timestamp=self.started,
            duration_ms=(time.perf_counter() - self._t0) * 1000,
            status=status,
            error_class=error_class,
            metadata=self.metadata or None,
            **self.fields,
        )
        self.run.recorder._complete(self.run, self._slot, event)

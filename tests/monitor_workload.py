"""A generated workload for monitors and releases: runs of a workflow and version on a given day, a
share of them failing at a `charge_card` call (the failure pattern an alert names)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from replay_core.events import SessionEndEvent, SessionEvent, StepEvent
from replay_core.ingest.pipeline import ingest
from replay_core.storage.store import Store

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


def runs(
    store: Store,
    n: int,
    *,
    day: int,
    fail: float,
    workflow: str = "checkout",
    version: str = "1.5.0",
    seed: int = 1,
    now: datetime = NOW,
    prompt_version: str | None = None,
) -> None:
    """`n` runs of `workflow` started during the day `day` days before NOW, a share `fail` of them failing at
    a `charge_card` call with a PaymentDeclined error (the pattern the alert must name)."""
    rng = random.Random(seed)
    events: list = []
    for i in range(n):
        sid = f"{workflow}-{version}-{day}-{seed}-{i}"
        start = now - timedelta(days=day) + timedelta(minutes=10 + i * (1380 / max(n, 1)))
        failed = rng.random() < fail
        meta = {"prompt_version": prompt_version} if prompt_version else None
        events.append(
            SessionEvent(
                session_id=sid, name=f"order {i}", workflow=workflow, agent_version=version, started_at=start, metadata=meta
            )
        )
        events.append(StepEvent(session_id=sid, type="input", content=f"buy item {i}", timestamp=start))
        events.append(
            StepEvent(
                session_id=sid,
                type="tool_call",
                tool_name="charge_card",
                tool_args={"order": i},
                timestamp=start + timedelta(seconds=1),
                status="error" if failed else "ok",
                error_class="PaymentDeclined" if failed else None,
            )
        )
        events.append(
            SessionEndEvent(
                session_id=sid,
                status="failed" if failed else "succeeded",
                error_class="PaymentDeclined" if failed else None,
                ended_at=start + timedelta(seconds=30),
            )
        )
    ingest(store, events)

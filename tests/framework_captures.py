"""The agent frameworks' captured OTLP requests (tests/fixtures/frameworks), read back and posted to a
Store as they arrived, reversed or shuffled, so a test needs none of the frameworks installed.

`post` hands each request to the receiver its path names; a path with no receiver here is returned
in `unsent`, never dropped silently.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from replay_core.ingest import otlp_logs, otlp_receiver

FRAMEWORKS = Path(__file__).parent / "fixtures" / "frameworks"
ORDERS = ("captured", "reversed", "shuffled")


def by_order(order: str, *values: Any) -> Any:
    """A test parameter of `values` for a batch order: every order but the captured one is breadth, run by
    `make test` and left out of the inner loop (marked `load`), where the captured order checks the same reading."""
    if order == "captured":
        return values if len(values) > 1 else values[0]
    return pytest.param(*values, marks=pytest.mark.load)


@dataclass(frozen=True)
class Request:
    """One request body as the exporter sent it (gunzipped when it was only gzipped for storage)."""

    capture: str
    arrival: int
    path: str
    content_type: str
    content_encoding: str | None
    body: bytes
    span_names: tuple[str, ...]


@dataclass
class Posted:
    """What posting one capture did: the receiver's reports, in the order posted, and what had no receiver."""

    reports: list[Any] = field(default_factory=list)
    unsent: list[Request] = field(default_factory=list)


def captures() -> list[str]:
    """Every capture's folder name, e.g. `pydantic-ai-v5-slow`."""
    return sorted(p.name for p in FRAMEWORKS.iterdir() if (p / "manifest.json").is_file())


@cache
def manifest(capture: str) -> dict:
    return json.loads((FRAMEWORKS / capture / "manifest.json").read_text())


def requests(capture: str) -> list[Request]:
    """The capture's requests in order of arrival, bodies as the exporter sent them."""
    out = []
    for batch in manifest(capture)["batches"]:
        raw = (FRAMEWORKS / capture / batch["file"]).read_bytes()
        arrived_gzipped = (batch.get("content_encoding") or "").lower() == "gzip"
        out.append(
            Request(
                capture=capture,
                arrival=batch["arrival"],
                path=batch["path"],
                content_type=batch["content_type"],
                content_encoding=batch.get("content_encoding"),
                body=raw if arrived_gzipped else gzip.decompress(raw),
                span_names=tuple(batch.get("span_names", ())),
            )
        )
    return out


def ordered(items: list[Request], order: str, seed: int = 0) -> list[Request]:
    """The requests as arrived (`captured`), last first (`reversed`) or in a seeded `shuffled` order."""
    if order == "captured":
        return list(items)
    if order == "reversed":
        return items[::-1]
    if order == "shuffled":
        out = list(items)
        random.Random(seed).shuffle(out)
        return out
    raise ValueError(f"unknown order {order!r}; one of {ORDERS}")


def _traces(store, request: Request):
    body = gzip.decompress(request.body) if (request.content_encoding or "").lower() == "gzip" else request.body
    return otlp_receiver.receive(store, body, request.content_type)


def _logs(store, request: Request):
    return otlp_logs.receive_logs(store, request.body, request.content_type)


RECEIVERS: dict[str, Callable[[Any, Request], Any]] = {
    "/v1/traces": _traces,
    "/api/public/otel/v1/traces": _traces,
    "/v1/logs": _logs,
}


def post(store, capture: str, order: str = "captured", seed: int = 0) -> Posted:
    """Post one capture's requests to `store` in the given order, through the same receivers the HTTP routes use."""
    done = Posted()
    for request in ordered(requests(capture), order, seed):
        receiver = RECEIVERS.get(request.path)
        if receiver is None:
            done.unsent.append(request)
        else:
            done.reports.append(receiver(store, request))
    return done

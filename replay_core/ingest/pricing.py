"""List prices per token from the price map litellm ships, read as JSON: importing litellm takes
seconds, which neither an ingest nor a page may spend, and nothing here touches the network.

A cost worked out from these prices is an estimate (the provider may bill otherwise: cached
input, batch rates, a negotiated price); a step priced so says it in its metadata
(`ESTIMATED`), and a run with such a step says its cost is estimated.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import orjson

PRICE_MAP = "model_prices_and_context_window_backup.json"
ESTIMATED = "cost_estimated"  # step metadata key: true when the step's cost is priced here, not given by the source


@cache
def price_table() -> dict[str, dict]:
    """litellm's bundled price map ({} when litellm is not installed), read once per process."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return {}
    path = Path(spec.origin).parent / PRICE_MAP
    return orjson.loads(path.read_bytes()) if path.exists() else {}


@cache
def list_price(model: str) -> tuple[float, float] | None:
    """USD per input and output token of `model` (as named, else without its `provider/` prefix), or None."""
    table = price_table()
    for name in (model, model.split("/", 1)[-1]):
        entry = table.get(name)
        if entry and entry.get("input_cost_per_token") is not None and entry.get("output_cost_per_token") is not None:
            return float(entry["input_cost_per_token"]), float(entry["output_cost_per_token"])
    return None


def estimate(model: str | None, tokens_in: int | None, tokens_out: int | None) -> float | None:
    """The list-price cost of a call, or None when the model is unpriced or no token was counted."""
    if not model or (tokens_in is None and tokens_out is None):
        return None
    price = list_price(model)
    if price is None:
        return None
    return round((tokens_in or 0) * price[0] + (tokens_out or 0) * price[1], 12)


def is_estimated(metadata: Any) -> bool:
    return isinstance(metadata, dict) and metadata.get(ESTIMATED) is True


def any_estimated(metadatas: Iterable[Any]) -> bool:
    """Whether any of these steps' costs is an estimate (so is the run's total)."""
    return any(is_estimated(m) for m in metadatas)

"""Settings read from the environment, in one place so every entry point agrees."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = PROJECT_ROOT / "data"
DEFAULT_DB_PATH = DATA_DIR / "agent_replay.db"
DEMO_DIR = DATA_DIR / "demo"


def database_url(explicit: str | None = None) -> str:
    """`--db` beats `AGENT_REPLAY_DB_URL` beats the embedded SQLite file.

    A bare path is accepted as a SQLite file, so `--db runs.db` does what it says.
    """
    url = explicit or os.environ.get("AGENT_REPLAY_DB_URL") or f"sqlite:///{DEFAULT_DB_PATH}"
    if "://" not in url:
        url = f"sqlite:///{Path(url).expanduser().resolve()}"
    return url


def idle_timeout() -> timedelta:
    """How long a run may go without events before it counts as incomplete."""
    return timedelta(minutes=float(os.environ.get("AGENT_REPLAY_IDLE_MINUTES", "30")))


def retention_days() -> float | None:
    """Runs older than this many days are deleted on schedule; unset means keep everything."""
    value = os.environ.get("AGENT_REPLAY_RETENTION_DAYS")
    return float(value) if value else None


def retention_keeps_annotated() -> bool:
    return os.environ.get("AGENT_REPLAY_RETENTION_KEEP_ANNOTATED", "").lower() in ("1", "true", "yes")


# The optional model-written paragraph of why a run failed (whatif/narrative.py): off unless a model is named.
EXPLAIN_OFF = ("0", "off", "false", "no")


def explain_model() -> str | None:
    """`AGENT_REPLAY_EXPLAIN_MODEL` (a litellm model string), unless `AGENT_REPLAY_EXPLAIN_LLM` is off."""
    if os.environ.get("AGENT_REPLAY_EXPLAIN_LLM", "").strip().lower() in EXPLAIN_OFF:
        return None
    return os.environ.get("AGENT_REPLAY_EXPLAIN_MODEL", "").strip() or None


def explain_api_base() -> str | None:
    return os.environ.get("AGENT_REPLAY_EXPLAIN_API_BASE") or None


def explain_api_key_env() -> str | None:
    """The NAME of the environment variable holding the key (never the key itself)."""
    return os.environ.get("AGENT_REPLAY_EXPLAIN_API_KEY_ENV") or None


def public_url(seen: str | None = None) -> str:
    """Where people reach the app, for the share links it hands out: `AGENT_REPLAY_PUBLIC_URL`, else
    the address the browser used (`seen`), else the default of `make run`."""
    return (os.environ.get("AGENT_REPLAY_PUBLIC_URL") or seen or "http://localhost:8501").rstrip("/")

"""Settings read from the environment, in one place so every entry point agrees."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
APP_PACKAGE = "agent_replay_app"  # what a wheel installs the app's own files as (streamlit_app.py, pages/, ui/, data/demo/)


def in_checkout() -> bool:
    """Running from the repository (a clone, or an editable install of one), not from an installed wheel."""
    return (PROJECT_ROOT / "pyproject.toml").is_file() and (PROJECT_ROOT / "data").is_dir()


def data_dir() -> Path:
    """Where the default database lives, made if missing: `AGENT_REPLAY_HOME`; else `data/` in a checkout;
    else the user's data folder (e.g. ~/.local/share/agent-replay on Linux)."""
    home = os.environ.get("AGENT_REPLAY_HOME")
    if home:
        folder = Path(home).expanduser().resolve()
    elif in_checkout():
        folder = PROJECT_ROOT / "data"
    else:
        from platformdirs import user_data_path

        folder = user_data_path("agent-replay", appauthor=False)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def app_dir() -> Path:
    """The folder holding streamlit_app.py, pages/, ui/, .streamlit/ and data/demo/: the checkout, or
    the package a wheel installs them as."""
    if in_checkout():
        return PROJECT_ROOT
    import importlib.util

    spec = importlib.util.find_spec(APP_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"the app's files are not installed (no {APP_PACKAGE} beside replay_core); reinstall agent-replay"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def demo_dir() -> Path:
    return app_dir() / "data" / "demo"


def database_url(explicit: str | None = None) -> str:
    """`--db` beats `AGENT_REPLAY_DB_URL` beats agent_replay.db in the data folder (`data_dir`).

    A bare path is accepted as a SQLite file, so `--db runs.db` does what it says.
    """
    url = explicit or os.environ.get("AGENT_REPLAY_DB_URL") or f"sqlite:///{data_dir() / 'agent_replay.db'}"
    if "://" not in url:
        url = f"sqlite:///{Path(url).expanduser().resolve()}"
    return url


def idle_timeout() -> timedelta:
    """How long a run may go without events before it counts as incomplete."""
    return timedelta(minutes=float(os.environ.get("AGENT_REPLAY_IDLE_MINUTES", "30")))


def settle_after() -> timedelta:
    """How long an OTLP run's traces must receive nothing before its seqs, gapped by late batches, are
    numbered 1..n (the receiver and idle expiry look this often at most)."""
    return timedelta(seconds=float(os.environ.get("AGENT_REPLAY_OTLP_SETTLE_S", "30")))


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

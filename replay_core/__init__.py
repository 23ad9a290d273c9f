"""Agent Replay core: record, import, inspect, replay and compare AI agent runs.

The public face, for the names users type:

    from replay_core import Recorder, open_store, import_file, open_timeline, state_at, compare, replay

Each name is imported on first use (PEP 562), so `import replay_core` loads none of
SQLAlchemy, polars or litellm. The wings below are where the code lives; see
docs/architecture.md for what each owns and may import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name → module that defines it
_PUBLIC = {
    "Recorder": "replay_core.sdk.recorder",
    "Store": "replay_core.storage.store",
    "SessionFilter": "replay_core.storage.store",
    "open_store": "replay_core.storage.store",
    "import_file": "replay_core.ingest.pipeline",
    "import_bytes": "replay_core.ingest.pipeline",
    "open_timeline": "replay_core.understand.timeline",
    "state_at": "replay_core.understand.snapshot",
    "compare": "replay_core.understand.compare",
    "replay": "replay_core.whatif.replay",
    "replay_many": "replay_core.whatif.replay",
    "ReplayConfig": "replay_core.whatif.replay_config",
}

__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:  # for editors and type checkers (`x as x` marks a re-export); at run time __getattr__ resolves the names
    from .ingest.pipeline import import_bytes as import_bytes
    from .ingest.pipeline import import_file as import_file
    from .sdk.recorder import Recorder as Recorder
    from .storage.store import SessionFilter as SessionFilter
    from .storage.store import Store as Store
    from .storage.store import open_store as open_store
    from .understand.compare import compare as compare
    from .understand.snapshot import state_at as state_at
    from .understand.timeline import open_timeline as open_timeline
    from .whatif.replay import replay as replay
    from .whatif.replay import replay_many as replay_many
    from .whatif.replay_config import ReplayConfig as ReplayConfig


def __getattr__(name: str) -> Any:
    if name == "__version__":  # the installed distribution's, read on first use (importlib.metadata is not free to import)
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("agent-replay")
        except PackageNotFoundError:  # a checkout used without installing it
            return "0+unknown"
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'replay_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def command() -> None:
    """The `agent-replay` console script: the cli package run as `python -m replay_core.cli` runs it, so
    that a plain `stats` is answered before Typer, rich and SQLAlchemy are imported here too."""
    import runpy

    runpy.run_module("replay_core.cli", run_name="__main__")


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC, "__version__"])

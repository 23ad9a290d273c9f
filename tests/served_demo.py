"""One served app per test process for the browser modules that only read: the timeline's, the waterfall's and the
playground's. It holds the demo runs, the few runs of their own those modules open, and the playground's two models.

A start of `streamlit run` costs a few CPU-seconds. None of these modules writes what another reads (the playground's
runs add replays of a demo run none of the others opens), so one app, on SQLite, serves them all; their pages' reads
on PostgreSQL are the AppTests' on `demo_each_store`. The app stays up until the test process ends: idle, it costs
nothing, and Chromium's cache keeps its scripts for every module.

A session-scoped fixture imported into several modules is a fixture of each of them, each with its own instance,
so the app is kept here, once per process, and each module's fixture asks for it.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from typing import NamedTuple

import pytest
from apptest_helpers import big_events, database, served_app
from openai_server import OpenAIServer

from replay_core.events import StepEvent
from replay_core.ingest.pipeline import ingest
from replay_core.storage.store import Store
from replay_core.whatif.replay_config import PROVIDER_KEYS

GAPPED = "gapped"  # steps 1–3 and 10–11: the slider's next value (4) is not the next step (10)
ONE = "one"  # a run of one step: nowhere to jump
HOSTILE = "hostile-waterfall"
MARKUP = '<img src="x" onerror="alert(1)"> **bold**'


class DemoApp(NamedTuple):
    base: str  # the served app's base URL
    url: str  # its database's
    models: OpenAIServer  # the scripted server behind the model "openai/fake-model"


class _Kept:
    app: DemoApp | None = None
    stack: ExitStack | None = None


def _runs_of_their_own(url: str) -> None:
    store = Store(url)
    try:
        gapped = [StepEvent(session_id=GAPPED, seq=seq, type="think", content=f"thought {seq}") for seq in (1, 2, 3, 10, 11)]
        ingest(store, gapped)
        ingest(store, [StepEvent(session_id=ONE, type="think", content="only thought")])
        ingest(store, big_events())  # apptest_helpers.BIG: 10,000 steps
        ingest(store, [StepEvent(session_id=HOSTILE, seq=1, type="think", content=MARKUP)])
    finally:
        store.close()


def _start(demo_file: str, folder) -> DemoApp:
    stack = ExitStack()
    try:
        url = stack.enter_context(database("sqlite", folder, demo_file))
        _runs_of_their_own(url)
        server = stack.enter_context(OpenAIServer())
        models = folder / "models.json"
        listed = [{"model": "openai/fake-model", "api_base": server.base_url}, {"model": "openai/gpt-4o-mini"}]
        models.write_text(json.dumps(listed))
        with pytest.MonkeyPatch.context() as env:  # the app's environment is taken at its start
            for name in (*PROVIDER_KEYS, "AGENT_REPLAY_API_BASE", "AGENT_REPLAY_MODELS", "AGENT_REPLAY_API_KEY_ENV"):
                env.delenv(name, raising=False)  # unset, not empty: an empty key counts as set up
            base = stack.enter_context(served_app(url, AGENT_REPLAY_MODELS_FILE=str(models)))
    except BaseException:
        stack.close()
        raise
    _Kept.app, _Kept.stack = DemoApp(base, url, server), stack
    return _Kept.app


@pytest.fixture(scope="session")
def demo_app_to_read(demo_files, tmp_path_factory) -> DemoApp:
    """The app, started by the first module of this process that asks for it and stopped when the process ends."""
    app = _Kept.app or _start(demo_files.get(), tmp_path_factory.mktemp("served_demo"))
    yield app
    if _Kept.stack is not None:
        _Kept.stack.close()
        _Kept.app = _Kept.stack = None

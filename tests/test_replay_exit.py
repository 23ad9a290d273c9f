"""`agent-replay replay` tells a script whether any replay ran: exit 1 when none did (each
failure classed by what happened), 0 when one did; the per-call timeout is its own option."""

from __future__ import annotations

import pytest
from openai_server import OpenAIServer, Reply
from typer.testing import CliRunner

from replay_core.cli import app
from replay_core.demo import load_demo
from replay_core.storage.store import Store
from replay_core.whatif.replay_config import ReplayConfig

FLIGHT = "demo-08-flight-bos-sfo-a"


@pytest.fixture
def db(tmp_path):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    store = Store(url)
    load_demo(store, only_if_empty=False)
    store.close()
    return url


def run(db: str, server: OpenAIServer, *extra: str):
    return CliRunner().invoke(
        app,
        [
            "replay",
            FLIGHT,
            "--db",
            db,
            "--from",
            "11",
            "--to",
            "11",
            "--api-base",
            server.base_url,
            "--model",
            "openai/fake-model",
            "--workers",
            "1",
            *extra,
        ],
    )


def test_the_default_call_timeout_is_60_seconds():
    assert ReplayConfig(model="openai/x").request_timeout_s == 60.0


def test_replay_exits_1_when_no_replay_ran_and_names_what_happened(db):
    with OpenAIServer() as server:
        server.script(Reply(body={}, delay_s=2.0))
        res = run(db, server, "--call-timeout", "0.5")
    assert res.exit_code == 1, res.output
    assert "no replay ran: openai/fake-model: timeout" in res.output
    with OpenAIServer() as server:
        server.script(Reply(drop=True))
        res = run(db, server)
    assert res.exit_code == 1 and "connection" in res.output


def test_replay_exits_0_when_a_replay_ran(db):
    with OpenAIServer() as server:
        server.script(server.text("Done."))
        res = run(db, server)
    assert res.exit_code == 0, res.output

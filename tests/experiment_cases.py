"""Recorded refund runs for experiment tests and the bench, and a scripted model for each variant.

Each case `refund-<i>` is a run the pipeline stored: the user's request, a thought with a
`get_order` call, the recorded result, and the final decision. `Agent` answers the
requests a replay of such a run sends, per model, so pass counts are known in advance.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

import pytest
from cli_helpers import Ran, run_main
from openai_server import OpenAIServer, Reply

from replay_core.events import SessionEndEvent, SessionEvent, StepEvent
from replay_core.ingest.pipeline import ingest
from replay_core.whatif.replay_config import ReplayConfig

START = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
PRICE = {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}


@pytest.fixture
def server():
    """The scripted local OpenAI-compatible server (import this fixture into a test module)."""
    with OpenAIServer() as srv:
        yield srv


def variant(server, name: str, **kw) -> ReplayConfig:
    """A priced variant for model `name` on the local server, quick to give up."""
    settings = {"api_base": server.base_url, "backoff_s": 0.01, "request_timeout_s": 5.0, **PRICE}
    return ReplayConfig(model=f"openai/{name}", **{**settings, **kw})


def answer(i: int) -> str:
    return f"Refund approved for order A-{i}."


def make_cases(store, n: int, *, workflow: str = "refund", status: str = "succeeded", first: int = 0, day: int = 0) -> list[str]:
    events, ids = [], []
    for i in range(first, first + n):
        sid = f"refund-{i}"
        ids.append(sid)
        t = START + timedelta(days=day, minutes=i)
        events.append(
            SessionEvent(
                session_id=sid,
                name=f"refund request {i}",
                agent_id="support-bot",
                model="gpt-4o",
                workflow=workflow,
                environment="prod",
                started_at=t,
            )
        )
        steps = [
            dict(type="input", content=f"Please refund my order A-{i}."),
            dict(type="think", content="Look the order up first.", tokens_in=120, tokens_out=12),
            dict(type="tool_call", tool_name="get_order", tool_args={"order_id": f"A-{i}"}, tool_call_id=f"c{i}"),
            dict(type="tool_result", tool_name="get_order", tool_call_id=f"c{i}", content='{"status": "delivered", "total": 42}'),
            dict(type="decision", content=answer(i), tokens_in=160, tokens_out=10),
        ]
        for seq, fields in enumerate(steps, 1):
            events.append(StepEvent(session_id=sid, event_id=f"e{seq}", seq=seq, timestamp=t + timedelta(seconds=seq), **fields))
        events.append(SessionEndEvent(session_id=sid, status=status, outcome=answer(i), ended_at=t + timedelta(seconds=9)))
    ingest(store, events)
    return ids


def case_number(payload: dict) -> int:
    for m in payload.get("messages") or []:
        if m.get("role") == "user":
            found = re.search(r"A-(\d+)", m.get("content") or "")
            if found:
                return int(found.group(1))
    raise AssertionError(f"no order number in {payload}")


class Agent:
    """A scripted model: look the order up, then answer; `wrong(i)` says which cases it gets wrong.

    A wrong case gets a refused refund (a different final answer: the outcome scorer fails it).
    """

    def __init__(self, server: OpenAIServer, *, wrong=lambda i: False, usage=(30, 10), delay_s: float = 0.0):
        self.server, self.wrong, self.usage, self.delay_s = server, wrong, usage, delay_s

    def __call__(self, payload: dict) -> Reply:
        i = case_number(payload)
        answered = any(m.get("role") == "tool" for m in payload["messages"])
        if not answered:
            reply = self.server.tool_calls(
                ("get_order", {"order_id": f"A-{i}"}), content="Look the order up first.", usage=self.usage
            )
        else:
            reply = self.server.text(f"Refund refused for order A-{i}." if self.wrong(i) else answer(i), usage=self.usage)
        reply.delay_s = self.delay_s
        return reply


def wait_for(condition, what: str, timeout: float = 60.0):
    """What `condition()` returns once it is true, polled; an AssertionError naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := condition():
            return found
        time.sleep(0.05)
    raise AssertionError(f"waited {timeout:.0f} s for {what}")


def cli_database(tmp_path, make) -> str:
    """A SQLite database for CLI tests, filled by `make(store)` and closed; its URL."""
    from replay_core.storage.store import Store

    db = f"sqlite:///{tmp_path / 'cli.db'}"
    store = Store(db)
    make(store)
    store.close()
    return db


def cli_runner(monkeypatch, db: str, **env: str):
    """`agent-replay …` on this database, called in this process (cli_helpers.run_main): cli(*args, ok=True)
    checks the exit status, returns what the command did. No test here is about the program's start."""

    def cli(*args: str, ok: bool = True) -> Ran:
        ran = run_main(monkeypatch, args, {"AGENT_REPLAY_DB_URL": db, "COLUMNS": "200", **env})
        assert (ran.returncode == 0) == ok, ran.stderr
        return ran

    return cli


def refund_dataset(n: int):
    """make(store) for cli_database: n refund runs and the dataset `refunds` of them."""
    from replay_core.whatif import dataset as ds

    def make(store) -> None:
        ids = make_cases(store, n)
        ds.create(store, "refunds", [ds.Case(i) for i in ids])

    return make

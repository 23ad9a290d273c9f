"""The SDK recorder on real databases (SQLite and PostgreSQL) and through the served HTTP API:
steps, tools, spans, threads, storage outages, the spool, and delivery at exit."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import orjson
import pytest
from api_thread import Served
from conftest import PG_ADMIN_URL, REPO

from replay_core.sdk import step_order
from replay_core.sdk.recorder import Recorder
from replay_core.sdk.sinks import DatabaseSink, SinkRejected, SinkUnavailable
from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.storage.store import Store

TOKEN = "sdk-test-token-0123456789"


@pytest.fixture
def make_recorder(tmp_path):
    made: list[Recorder] = []

    def make(url: str | None = None, **kwargs) -> Recorder:
        kwargs.setdefault("spool_dir", str(tmp_path / "spool"))
        rec = Recorder(url, **kwargs)
        made.append(rec)
        return rec

    yield make
    for rec in made:
        rec.close(settle=0)


def rows(store: Store, sid: str, *fields: str) -> list[tuple]:
    return [tuple(getattr(s, f) for f in fields) for s in store.load_steps(sid)]


def spool_lines(tmp_path: Path) -> int:
    return sum(len(p.read_bytes().splitlines()) for p in (tmp_path / "spool").glob("*.jsonl") if "rejected" not in p.name)


class Switch:
    """A real DatabaseSink behind a switch: `down` refuses like a dead server, `lose_reply`
    stores the batch and then fails as a timeout after commit would."""

    def __init__(self, url: str):
        self.inner = DatabaseSink(url)
        self.key = url
        self.down = False
        self.lose_reply = False
        self.calls = 0

    def send(self, events):
        self.calls += 1
        if self.down:
            raise SinkUnavailable("switched off")
        self.inner.send(events)
        if self.lose_reply:
            raise SinkUnavailable("stored, but the reply was lost")

    def close(self):
        self.inner.close()


# ------------------------------------------------------------------ recording


def test_a_session_lands_with_its_steps_in_order(store, make_recorder):
    rec = make_recorder(store.url)

    @rec.tool
    def search(q: str, limit: int = 10) -> dict:
        return {"hits": [q] * limit}

    messages = [{"role": "user", "content": "refund A-17"}]
    with rec.session("refund request", agent_id="support-bot", model="gpt-4o", tags=["sdk"]) as run:
        run.input("I want a refund for order A-17")
        run.think("Look the order up first.", tokens_in=812, tokens_out=40, cost_usd=0.002, context=messages)
        messages.append({"role": "assistant", "content": "changed after recording"})
        search("A-17", limit=2)
        run.observation("The order exists.")
        run.decision("Refund approved.")
    assert rec.flush() is True

    session = store.get_session(run.id)
    assert (session["name"], session["agent_id"], session["model"], session["status"], session["source"], session["tags"]) == (
        "refund request",
        "support-bot",
        "gpt-4o",
        "succeeded",
        "sdk",
        ["sdk"],
    )
    assert rows(store, run.id, "seq", "type", "content", "tool_name") == [
        (1, "input", "I want a refund for order A-17", None),
        (2, "think", "Look the order up first.", None),
        (3, "tool_call", None, "search"),
        (4, "tool_result", '{"hits":["A-17","A-17"]}', "search"),
        (5, "observation", "The order exists.", None),
        (6, "decision", "Refund approved.", None),
    ]
    steps = store.load_steps(run.id)
    assert (steps[1].tokens_in, steps[1].tokens_out, steps[1].cost_usd) == (812, 40, 0.002)
    assert steps[0].metadata == {"role": "user"}
    assert steps[2].tool_args == {"q": "A-17", "limit": 2}
    assert steps[3].tool_call_id == steps[2].tool_call_id == steps[2].event_id
    assert steps[3].duration_ms >= 0
    assert store.step_context(run.id, steps[1].event_id) == [{"role": "user", "content": "refund A-17"}]


def test_an_exception_fails_the_session_and_is_recorded(store, make_recorder):
    rec = make_recorder(store.url)
    with pytest.raises(LookupError, match="no order A-99"):
        with rec.session("lookup") as run:
            run.think("Find the order.")
            raise LookupError("no order A-99")
    rec.flush()
    session = store.get_session(run.id)
    assert (session["status"], session["error_class"], session["outcome"]) == ("failed", "LookupError", "no order A-99")
    assert rows(store, run.id, "type", "status", "error_class", "content") == [
        ("think", "ok", None, "Find the order."),
        ("error", "error", "LookupError", "no order A-99"),
    ]


def test_tool_decorator_records_errors_async_tools_and_nothing_outside_a_session(sqlite_store, make_recorder):
    rec = make_recorder(sqlite_store.url)

    @rec.tool(name="get_order")
    def lookup(order_id):
        raise KeyError(order_id)

    @rec.tool
    async def fetch(url, *, timeout=5):
        await asyncio.sleep(0.01)
        return b"<html>ok</html>"

    assert asyncio.run(fetch("http://x")) == b"<html>ok</html>"  # no session: runs, records nothing
    with rec.session("tools") as run:
        with pytest.raises(KeyError):
            lookup("A-17")
        assert asyncio.run(fetch("http://example.test", timeout=2)) == b"<html>ok</html>"
    rec.flush()
    assert sqlite_store.count_sessions() == 1
    assert rows(sqlite_store, run.id, "type", "tool_name", "tool_args", "status", "error_class", "content") == [
        ("tool_call", "get_order", {"order_id": "A-17"}, "ok", None, None),
        ("error", "get_order", None, "error", "KeyError", "'A-17'"),
        ("tool_call", "fetch", {"url": "http://example.test", "timeout": 2}, "ok", None, None),
        ("tool_result", "fetch", None, "ok", None, "<html>ok</html>"),
    ]
    steps = sqlite_store.load_steps(run.id)
    assert steps[1].tool_call_id == steps[0].tool_call_id
    assert steps[3].tool_call_id == steps[2].tool_call_id
    assert steps[3].duration_ms >= 10


def test_spans_nest_sort_before_their_children_and_record_failures(store, make_recorder):
    rec = make_recorder(store.url)
    with rec.session("spans") as run:
        with run.span("plan", agent_id="planner") as outer:
            with rec.span("research") as inner:
                rec.think("read the docs")
                time.sleep(0.02)
            run.decision("go")
        with pytest.raises(TimeoutError):
            with run.span("flaky") as flaky:
                raise TimeoutError("took too long")
        run.observation("after")
    rec.flush()
    steps = {s.event_id: s for s in store.load_steps(run.id)}
    assert [(s.seq, s.type, s.content) for s in store.load_steps(run.id)] == [
        (1, "span", "plan"),
        (2, "span", "research"),
        (3, "think", "read the docs"),
        (4, "decision", "go"),
        (5, "span", "flaky"),
        (6, "error", "took too long"),
        (7, "observation", "after"),
    ]
    by_seq = {s.seq: s for s in steps.values()}
    assert by_seq[1].event_id == outer.event_id and by_seq[1].agent_id == "planner" and by_seq[1].parent_id is None
    assert by_seq[2].event_id == inner.event_id and by_seq[2].parent_id == outer.event_id
    assert by_seq[3].parent_id == inner.event_id and by_seq[4].parent_id == outer.event_id
    assert by_seq[1].duration_ms >= by_seq[2].duration_ms >= 20
    assert (by_seq[5].status, by_seq[5].error_class, by_seq[5].event_id) == ("error", "TimeoutError", flaky.event_id)
    assert (by_seq[6].parent_id, by_seq[6].error_class, by_seq[7].parent_id) == (flaky.event_id, "TimeoutError", None)


def test_mistakes_in_the_call_raise_at_the_call(sqlite_store, make_recorder):
    rec = make_recorder(sqlite_store.url)
    with pytest.raises(RuntimeError, match="no current session"):
        rec.think("nobody listens")
    with rec.session("mistakes") as run:
        with pytest.raises(ValueError, match="tokens_in"):
            run.think("x", tokens_in=-1)
        with pytest.raises(TypeError, match="token_in"):
            run.think("x", token_in=3)
        with pytest.raises(ValueError, match="environment"):
            rec.session("bad", environment=["not", "a", "string"])
        run.think("fine")
    rec.flush()
    assert rows(sqlite_store, run.id, "seq", "content") == [(1, "fine")]


# ------------------------------------------------------------------ threads


@pytest.mark.parametrize("shared", [True, False], ids=["one-session", "three-sessions"])
def test_threads_lose_nothing_and_number_steps_uniquely(store, make_recorder, shared):
    threads_n, per_thread = 8, 250
    rec = make_recorder(store.url, batch_size=100, flush_interval=0.05)
    runs = [rec.session(f"threads {i}") for i in range(1 if shared else 3)]
    barrier = threading.Barrier(threads_n)

    def work(t: int) -> None:
        run = runs[t % len(runs)]
        barrier.wait()
        for i in range(per_thread):
            run.think(f"t{t} s{i}", metadata={"thread": t, "i": i})

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads_n)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    for run in runs:
        run.end()
    assert rec.flush() is True
    total = 0
    for run in runs:
        steps = store.load_steps(run.id)
        total += len(steps)
        assert [s.seq for s in steps] == list(range(1, len(steps) + 1))
        assert len({s.event_id for s in steps}) == len(steps)
        for t in {s.metadata["thread"] for s in steps}:  # each thread's steps in the order it made them
            assert [s.metadata["i"] for s in steps if s.metadata["thread"] == t] == list(range(per_thread))
    assert total == threads_n * per_thread


# ------------------------------------------------------------------ outages and the spool


def test_storage_down_spools_then_delivers_everything_exactly_once(store, make_recorder, tmp_path):
    sink = Switch(store.url)
    rec = make_recorder(sink=sink)
    sink.down = True
    with rec.session("outage") as run:
        for i in range(50):
            run.think(f"step {i}")
    assert rec.flush() is False
    assert store.get_session(run.id) is None
    assert spool_lines(tmp_path) == 52  # session, 50 steps, end
    with rec.session("during the outage") as later:
        later.decision("queued behind the spool")
    assert rec.flush() is False
    assert spool_lines(tmp_path) == 55

    sink.down = False
    sink.lose_reply = True  # the first delivery is stored but reported as failed: it will be sent twice
    assert rec.flush() is False
    sink.lose_reply = False
    assert rec.flush() is True
    assert spool_lines(tmp_path) == 0
    assert [s.content for s in store.load_steps(run.id)] == [f"step {i}" for i in range(50)]
    assert [s.seq for s in store.load_steps(run.id)] == list(range(1, 51))
    assert store.get_session(run.id)["status"] == "succeeded"
    assert rows(store, later.id, "seq", "content") == [(1, "queued behind the spool")]


def test_a_rejected_event_is_set_aside_and_the_rest_delivered(sqlite_store, make_recorder, tmp_path):
    class Picky(Switch):
        def send(self, events):
            if any(getattr(e, "content", None) == "poison" for e in events):
                raise SinkRejected("poison refused")
            super().send(events)

    rec = make_recorder(sink=Picky(sqlite_store.url))
    with rec.session("picky") as run:
        for i in range(9):
            run.think("poison" if i == 6 else f"ok {i}")
    assert rec.flush() is True
    assert [s.content for s in sqlite_store.load_steps(run.id)] == [f"ok {i}" for i in range(9) if i != 6]
    rejected = [orjson.loads(line) for line in rec.spool.rejected_path.read_bytes().splitlines()]
    assert [(r["reason"], orjson.loads(r["event"])["content"]) for r in rejected] == [("poison refused", "poison")]


@pytest.mark.postgres
def test_a_postgres_database_that_does_not_exist_yet(make_recorder, tmp_path):
    psycopg = pytest.importorskip("psycopg")
    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError:
        pytest.skip("PostgreSQL unreachable")
    name = f"agent_replay_later_{uuid.uuid4().hex[:8]}"
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    rec = make_recorder(url)
    try:
        with rec.session("before the database") as run:
            for i in range(20):
                run.think(f"step {i}")
        assert rec.flush() is False
        assert spool_lines(tmp_path) == 22
        admin.execute(f'CREATE DATABASE "{name}"')
        assert rec.flush() is True
        assert spool_lines(tmp_path) == 0
        store = Store(url)
        assert [s.content for s in store.load_steps(run.id)] == [f"step {i}" for i in range(20)]
        assert store.get_session(run.id)["status"] == "succeeded"
        store.close()
    finally:
        rec.close(settle=0)
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@pytest.mark.postgres
def test_a_nul_byte_the_agent_recorded_is_stored_as_a_replacement_character(store, make_recorder):
    # The contract refuses NUL (PostgreSQL text cannot hold it); a live run cannot resend, so
    # the SDK stores U+FFFD in its place, in text and in JSON strings and keys alike.
    rec = make_recorder(store.url)
    with rec.session("nul byte") as run:
        for i in range(6):
            run.think("bad \x00 byte" if i == 2 else f"ok {i}")
        run.tool_call("t\x00ool", {"k\x00": ["v\x00", "literal \\u0000 stays"]})
    assert rec.flush() is True
    steps = store.load_steps(run.id)
    assert [s.content for s in steps[:6]] == ["ok 0", "ok 1", "bad \ufffd byte", "ok 3", "ok 4", "ok 5"]
    assert steps[6].tool_name == "t\ufffdool"
    assert steps[6].tool_args == {"k\ufffd": ["v\ufffd", "literal \\u0000 stays"]}


def test_a_spool_left_by_a_process_is_adopted_by_the_next_recorder(sqlite_store, make_recorder, tmp_path):
    sink = Switch(sqlite_store.url)
    sink.down = True
    first = make_recorder(sink=sink)
    with first.session("left behind") as run:
        run.think("kept on disk")
    assert first.close() is False
    assert spool_lines(tmp_path) == 3

    second = make_recorder(sqlite_store.url)
    assert second.flush() is True
    assert rows(sqlite_store, run.id, "seq", "content") == [(1, "kept on disk")]
    assert spool_lines(tmp_path) == 0


def test_steps_recorded_after_close_are_kept_for_the_next_recorder(sqlite_store, make_recorder, tmp_path):
    rec = make_recorder(sqlite_store.url)
    run = rec.session("late")
    run.think("before close")
    assert rec.close() is True
    run.think("after close")
    run.end()
    assert rec.flush() is False
    assert spool_lines(tmp_path) == 2
    assert make_recorder(sqlite_store.url).flush() is True
    assert rows(sqlite_store, run.id, "seq", "content") == [(1, "before close"), (2, "after close")]
    assert sqlite_store.get_session(run.id)["status"] == "succeeded"


SCRIPT = """
import sys
from replay_core import Recorder
rec = Recorder(sys.argv[1], spool_dir=sys.argv[2], flush_interval=3600)
run = rec.session("exits without close", session_id="child-run")
for i in range(5):
    run.think(f"step {i}")
run.end()
"""


def test_exit_flushes_and_an_unreachable_database_keeps_events_for_later(tmp_path, make_recorder):
    ok_url = f"sqlite:///{tmp_path / 'ok.db'}"
    spool = tmp_path / "spool"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-c", SCRIPT, ok_url, str(spool)], check=True, env=env, timeout=60)
    store = Store(ok_url)
    assert rows(store, "child-run", "seq", "content") == [(i + 1, f"step {i}") for i in range(5)]
    store.close()

    missing = tmp_path / "not-yet" / "later.db"
    later_url = f"sqlite:///{missing}"
    subprocess.run([sys.executable, "-c", SCRIPT, later_url, str(spool)], check=True, env=env, timeout=60)
    assert spool_lines(tmp_path) == 7
    missing.parent.mkdir()
    rec = make_recorder(later_url)
    assert rec.flush() is True
    store = Store(later_url)
    assert rows(store, "child-run", "seq", "content") == [(i + 1, f"step {i}") for i in range(5)]
    assert store.get_session("child-run")["status"] == "succeeded"
    store.close()


class StoppedClock:
    """`time` for replay_core.sdk.step_order: its monotonic clock moves only when the test moves it,
    so a call is given up when the test says, however slow the machine."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


def test_a_model_call_in_flight_holds_the_steps_after_it(sqlite_store, make_recorder, monkeypatch):
    clock = StoppedClock()
    monkeypatch.setattr(step_order, "time", clock)
    rec = make_recorder(sqlite_store.url, call_timeout=0.3)
    with rec.session("held") as run:
        rec.call_started(run, "call-1")
        run.observation("after the call")
        assert rec.flush() is True
        assert sqlite_store.load_steps(run.id) == []
        rec.call_finished("call-1", lambda: [{"type": "decision", "content": "the model's answer"}], None)
        rec.call_started(run, "call-2")  # never finishes: given up after call_timeout
        run.observation("after the lost call")
        clock.now += 0.35  # past call-2's timeout
        rec.flush()
        rec.call_finished("call-2", lambda: [{"type": "decision", "content": "too late"}], run)
    rec.flush()
    assert rows(sqlite_store, run.id, "seq", "content") == [
        (1, "the model's answer"),
        (2, "after the call"),
        (3, "after the lost call"),
        (4, "too late"),
    ]


# ------------------------------------------------------------------ through the served HTTP API


def api(store: Store, max_body: int = 10 * 1024 * 1024):
    return create_app(store, access=Access(api_tokens=(TOKEN,)), max_body=max_body)


def test_http_recorder_delivers_through_the_api(store, make_recorder):
    with Served(api(store)) as base:
        rec = make_recorder(base, token=TOKEN, http_timeout=60)  # a served app in a thread answers late under load

        @rec.tool
        def search(q):
            return f"found {q}"

        with rec.session("over http", agent_id="remote-bot", session_id="http run 1") as run:
            run.input("find x")
            with run.span("work"):
                run.think("searching", tokens_in=5, tokens_out=1, context=[{"role": "user", "content": "find x"}])
                search("x")
            run.decision("x found")
        assert rec.close() is True
    session = store.get_session("http run 1")
    assert (session["status"], session["agent_id"], session["source"]) == ("succeeded", "remote-bot", "sdk")
    assert rows(store, "http run 1", "seq", "type", "content") == [
        (1, "input", "find x"),
        (2, "span", "work"),
        (3, "think", "searching"),
        (4, "tool_call", None),
        (5, "tool_result", "found x"),
        (6, "decision", "x found"),
    ]
    steps = store.load_steps("http run 1")
    assert store.step_context("http run 1", steps[2].event_id) == [{"role": "user", "content": "find x"}]


def test_http_bad_token_and_server_down_keep_events_until_delivery(sqlite_store, make_recorder, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    with Served(api(sqlite_store), port=port):
        wrong = make_recorder(base, token="wrong-token")
        with wrong.session("refused", session_id="refused-run") as run:
            run.think("kept")
        assert wrong.close() is False
        assert spool_lines(tmp_path) == 3
        assert sqlite_store.get_session("refused-run") is None

    rec = make_recorder(base, token=TOKEN)  # adopts the refused run's spool; the server is down now
    with rec.session("while down", session_id="down-run") as run:
        run.think("also kept")
    assert rec.flush() is False
    assert spool_lines(tmp_path) == 6
    with Served(api(sqlite_store), port=port):
        assert rec.flush() is True
    assert rows(sqlite_store, "refused-run", "seq", "content") == [(1, "kept")]
    assert rows(sqlite_store, "down-run", "seq", "content") == [(1, "also kept")]
    assert spool_lines(tmp_path) == 0


def test_an_app_that_never_answers_keeps_the_events_after_http_timeout(make_recorder, tmp_path):
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        rec = make_recorder(f"http://127.0.0.1:{silent.getsockname()[1]}", token=TOKEN, http_timeout=0.5)
        with rec.session("unanswered", session_id="unanswered-run") as run:
            run.think("kept")
        started = time.monotonic()
        assert rec.flush() is False
        assert time.monotonic() - started < 8  # the default 10 s would not be over yet
        assert spool_lines(tmp_path) == 3


def test_http_body_limit_splits_batches_and_sets_aside_what_cannot_fit(sqlite_store, make_recorder):
    with Served(api(sqlite_store, max_body=4096)) as base:
        rec = make_recorder(base, token=TOKEN)
        with rec.session("big", session_id="big-run") as run:
            for i in range(12):
                run.think(("x" * 6000) if i == 5 else f"{i} " + "y" * 600)
        assert rec.flush() is True
    assert [s.content.split()[0] for s in sqlite_store.load_steps("big-run")] == [str(i) for i in range(12) if i != 5]
    assert "413" in rec.spool.rejected_path.read_text()


def test_cli_delivers_a_spool_once_the_destination_is_back(sqlite_store, make_recorder, tmp_path, monkeypatch):
    from cli_helpers import run_main  # the command in this process: its one-line errors as the program prints them

    later = tmp_path / "not-yet"  # the database's folder does not exist: the destination is down
    url = f"sqlite:///{later / 'runs.db'}"
    first = make_recorder(url)
    with first.session("kept while the database was away") as run:
        run.think("on disk until delivered")
    assert first.close() is False and spool_lines(tmp_path) == 3

    def deliver(to: str):
        return run_main(monkeypatch, ["deliver-spool", "--to", to, "--spool-dir", str(tmp_path / "spool")], {})

    away = deliver(url)
    assert away.returncode == 1 and "still unreachable" in away.stderr and "Traceback" not in away.stderr
    assert spool_lines(tmp_path) == 3
    assert "no spooled events" in deliver(sqlite_store.url).stdout  # another destination's spool is not touched
    later.mkdir()
    back = deliver(url)
    assert back.returncode == 0 and "spool delivered" in back.stdout, back.stderr
    assert rows(Store(url), run.id, "seq", "content") == [(1, "on disk until delivered")]
    assert spool_lines(tmp_path) == 0

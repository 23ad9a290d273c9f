"""A refused event never blocks the others: the HTTP sink narrows a refused
batch to the events the served API names, delivers the rest, and the recorder sets the refused
ones aside in the dead-letter file beside its spool, which `agent-replay deliver-spool` reports."""

from __future__ import annotations

import hashlib

import orjson
import pytest
from api_thread import api_in_thread
from typer.testing import CliRunner

from replay_core.cli import app
from replay_core.events import SessionEvent, StepEvent
from replay_core.sdk.recorder import Recorder
from replay_core.sdk.sinks import HttpSink, SinkRejected
from replay_core.storage.store import Store

TOKEN = "dead-letter-token"


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('dead') / 'dead.db'}"
    Store(url).close()
    with api_in_thread(url, TOKEN) as base:
        store = Store(url, migrate=False)
        yield base, store
        store.close()


def old_client_step(sid: str, event_id: str, **fields) -> StepEvent:
    """A step as an older client (before the contract's limits) would send it: not validated here."""
    return StepEvent.model_construct(session_id=sid, event_id=event_id, type="tool_call", **fields)


def test_the_http_sink_delivers_the_innocent_and_names_the_refused(api):
    base, store = api
    events = [
        SessionEvent(session_id="innocent", name="fine"),
        *[StepEvent(session_id="innocent", event_id=f"i{n}", type="think", content=f"ok {n}") for n in range(5)],
        SessionEvent(session_id="guilty", name="has one bad step"),
        StepEvent(session_id="guilty", event_id="g0", type="think", content="fine"),
        old_client_step("guilty", "g1", tool_name="t" * 300),
        StepEvent(session_id="guilty", event_id="g2", type="think", content="fine too"),
    ]
    sink = HttpSink(base, TOKEN, timeout=60)  # the served app's first answer: 10 s was too short at load 20
    with pytest.raises(SinkRejected) as caught:
        sink.send(events)
    sink.close()
    [(event, reason)] = caught.value.refused
    assert event.event_id == "g1" and "tool_name" in reason and "200 characters" in reason
    assert [s.event_id for s in store.load_steps("innocent")] == [f"i{n}" for n in range(5)]
    assert [s.event_id for s in store.load_steps("guilty")] == ["g0", "g2"]


def test_the_recorder_sets_refused_events_aside_and_delivers_the_rest(api, tmp_path):
    base, store = api
    rec = Recorder(base, token=TOKEN, spool_dir=str(tmp_path))
    bad = rec.session("replay of nothing", session_id="orphan-replay", replay_of="no-such-run")
    bad.think("refused with its session? no: steps create the run without replay_of")
    with rec.session("innocent two", session_id="innocent-2") as run:
        run.think("delivered")
    assert rec.flush() is True
    assert [s.content for s in store.load_steps("innocent-2")] == ["delivered"]
    dead = [orjson.loads(line) for line in rec.spool.rejected_path.read_bytes().splitlines()]
    assert len(dead) == 1 and "replay_of" in dead[0]["reason"]
    assert orjson.loads(dead[0]["event"])["session_id"] == "orphan-replay"
    assert rec.spool.rejected_path.parent == rec.spool.path.parent
    rec.close()


def test_deliver_spool_reports_what_was_refused(api, tmp_path):
    base, store = api
    prefix = hashlib.sha1(base.encode()).hexdigest()[:12]
    left = tmp_path / f"{prefix}-4242-deadbeef.jsonl"  # left by a recorder that ended while the app was down
    lines = [
        SessionEvent(session_id="spooled", name="kept"),
        StepEvent(session_id="spooled", event_id="s1", type="think"),
        SessionEvent(session_id="spooled-bad", replay_of="nowhere"),
    ]
    left.write_bytes(b"".join(orjson.dumps(ev.to_json_dict()) + b"\n" for ev in lines))
    res = CliRunner().invoke(app, ["deliver-spool", "--to", base, "--token", TOKEN, "--spool-dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "1 events refused by the destination, set aside in" in res.output
    assert "replay_of" in res.output
    assert [s.event_id for s in store.load_steps("spooled")] == ["s1"]
    assert store.get_session("spooled-bad") is None

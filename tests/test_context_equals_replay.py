"""What the state view shows at step n is what a replay starting at n sends to the model first.

Checked at the local fake provider (tests/openai_server.py records every request), for every
model step of every demo run and of every real sample with model turns (tests/fixtures rows
marked real in SOURCES.md); and, with hypothesis, on
generated runs with chat contexts recorded at random steps.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai_server import OpenAIServer

from replay_core.demo import read_demo
from replay_core.events import SessionEvent, StepEvent
from replay_core.ingest.formats import UnknownFormat
from replay_core.ingest.pipeline import ImportRejected, import_file, ingest
from replay_core.understand.snapshot import rebuild_messages, state_at
from replay_core.understand.timeline import open_timeline
from replay_core.whatif.recording import Recording, request_key, split_turns
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig

DEMO_IDS = sorted({ev.session_id for ev in read_demo()})


def real_fixture_samples() -> list[Path]:
    rows = [line.split("|") for line in (FIXTURES / "SOURCES.md").read_text().splitlines() if line.startswith("| ")]
    return sorted(
        FIXTURES / r[1].strip()
        for r in rows
        if len(r) > 6 and r[6].strip().startswith("real") and (FIXTURES / r[1].strip()).exists()
    )


@pytest.fixture(scope="module")
def server():
    with OpenAIServer() as srv:
        srv.default = srv.text("A different answer.")  # any answer: only the request matters here
        yield srv


def model_steps(store, sid: str) -> list[int]:
    _, turns = split_turns(store.load_steps(sid))
    return [t.first_seq for t in turns]


AT_PROVIDER = 40  # model steps per run replayed through the fake provider; every other one through the replay's Recording


def provider_sample(steps: list[int]) -> set[int]:
    """All model steps of a run with at most AT_PROVIDER of them; else the first and last 8 and 8 spread between.

    A replay per step of the 2,000-step demo-07 would take over ten minutes on this machine; its
    other steps are checked against Recording.messages, the messages the replay sends (below).
    """
    if len(steps) <= AT_PROVIDER:
        return set(steps)
    middle = steps[8:-8]
    return {*steps[:8], *steps[-8:], *(middle[i * len(middle) // 8] for i in range(8))}


def check_every_model_step(store, sid: str, server: OpenAIServer) -> int:
    """For each model step n: the messages state_at shows == the first request of a replay from n."""
    timeline = open_timeline(store, sid)
    checked = 0
    steps = model_steps(store, sid)
    sample = provider_sample(steps)
    for n in steps:
        shown = state_at(timeline, n, store).context
        assert Recording(timeline, store, n, n).messages([]) == shown, (sid, n)  # what the replay's first request holds
        if n not in sample:
            continue
        before = len(server.requests)
        config = ReplayConfig(
            model="openai/fake-model", api_base=server.base_url, backoff_s=0.01, request_timeout_s=5.0, tool_mode="none"
        )
        replay(store, sid, n, n, config)
        assert len(server.requests) > before, (sid, n)
        sent = server.requests[before]["messages"]
        assert sent == shown, (sid, n)
        checked += 1
    return checked


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)  # the module's demo file, copied: loaded once
@pytest.mark.parametrize("session_id", DEMO_IDS)
def test_every_demo_run_shows_what_a_replay_sends(demo, server, session_id):
    assert check_every_model_step(demo, session_id, server) > 0


@pytest.mark.parametrize("sample", real_fixture_samples(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_real_sample_with_model_turns_shows_what_a_replay_sends(sqlite_store, server, sample):
    try:
        report = import_file(sqlite_store, sample)
    except (UnknownFormat, ImportRejected) as exc:  # attributes or protobuf text; a real file that gives no steps
        pytest.skip(f"{sample.name} is refused: {str(exc).splitlines()[0][:200]}")
    checked = sum(check_every_model_step(sqlite_store, sid, server) for sid in report.sessions)
    if not checked:
        pytest.skip(f"{sample.name} holds no model output to replay")


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
def test_the_demo_coding_run_at_step_8_holds_the_search_and_the_read(demo):
    """The issue's own case: at step 8 the agent had the search of step 4 and the read of step 7."""
    snap = state_at(open_timeline(demo, "demo-02-coding-format-price-failed"), 8, demo)
    text = "\n".join(str(m.get("content")) for m in snap.context)
    assert "pricing/format.py:42:def format_price(amount: Decimal" in text and "pricing/format.py (9 lines)" in text
    assert snap.context_source == "recorded+rebuilt" and snap.context_seq == 2
    assert snap.agent.origins[0] == {"source": "recorded", "seq": 2}
    assert {"source": "rebuilt", "seq": 7} in snap.agent.origins


# ---------------------------------------------------------------------------- generated runs (hypothesis)

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
KIND = st.sampled_from(["think", "tool_call", "tool_result", "observation", "decision", "error", "input"])


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(KIND, st.booleans(), st.booleans()), min_size=2, max_size=25))
def test_generated_runs_state_view_equals_replay_start(sqlite_store, spec):
    """Contexts recorded at random steps: agent_context at each model step == the replay's start messages;
    and a replay from there that goes on along the original has, after each step, the messages (and the
    request key) of its base and every step since rebuilt from scratch."""
    sid = f"gen-{abs(hash(tuple(spec))) % 10**12}"
    events = [SessionEvent(session_id=sid, name="generated", started_at=T0)]
    history: list[dict] = [{"role": "system", "content": "be brief"}]
    for i, (kind, with_id, record) in enumerate(spec):
        fields = {"content": f"text {i}"}
        if kind in ("tool_call", "tool_result", "error"):
            fields.update(tool_name="ls", tool_call_id=f"c{i // 2}" if with_id else None, tool_args={"i": i // 2})
        context = list(history) if record else None
        events.append(
            StepEvent(
                session_id=sid,
                event_id=f"e{i}",
                seq=i + 1,
                type=kind,
                timestamp=T0 + timedelta(seconds=i),
                context=context,
                **fields,
            )
        )
        history.append({"role": "user", "content": f"seen {i}"})
    ingest(sqlite_store, events)
    timeline = open_timeline(sqlite_store, sid)
    for n in model_steps(sqlite_store, sid):
        rec = Recording(timeline, sqlite_store, n, n)
        assert rec.messages([]) == state_at(timeline, n, sqlite_store).context, n
        rec = Recording(timeline, sqlite_store, n, len(spec))
        for k in range(len(rec.range_steps) + 1):
            scratch = rec.base + rebuild_messages([*rec.prefix, *rec.range_steps[rec.covered : k]])
            log = rec.start_log()
            log.extend(rec.range_steps[rec.covered : k])
            assert rec.messages(rec.range_steps[:k]) == log.messages() == scratch, (n, k)
            assert log.key() == request_key(scratch), (n, k)

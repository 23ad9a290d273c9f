"""ATIF trajectories (harbor / terminal-bench): real files harbor's own tests keep as goldens, read right;
the variants seen in the wild (model under `agent.model`, a result recorded before its call); what the
reader must not claim. Sources: tests/fixtures/atif/README.md."""

from __future__ import annotations

from collections import Counter

import orjson
import pytest
from conftest import FIXTURES
from reader_checks import claims_no_other_fixture

from replay_core.ingest.formats import atif, candidates
from replay_core.ingest.pipeline import import_bytes, import_file, read_events
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig

ATIF = FIXTURES / "atif"
TIMEOUT = ATIF / "terminus_2_hello-world-timeout.trajectory.json"
OPENHANDS = ATIF / "openhands_hello-world.trajectory.json"
SUMMARIZED = ATIF / "terminus_2_hello-world-context-summarization.trajectory.json"


def _kinds(store, sid) -> Counter:
    return Counter(s.type for s in store.load_steps(sid))


def test_a_terminus_trajectory_reads_as_its_turns_calls_and_results(sqlite_store):
    report = import_file(sqlite_store, TIMEOUT)
    (acc,) = report.files
    assert (acc["format"], acc["records"], acc["used"], acc["unit"]) == ("atif", 4, 4, "trajectory steps")
    (sid,) = report.sessions
    session, steps = sqlite_store.get_session(sid), sqlite_store.load_steps(sid)
    assert sid.startswith("NORMALIZED_SESSION_ID-") and session["agent_id"] == "terminus-2"
    assert session["model"] == "openai/gpt-4o" and session["agent_version"] == "2.0.0"
    assert _kinds(sqlite_store, sid) == {"input": 1, "think": 3, "tool_call": 3, "tool_result": 3}
    turns = [s for s in steps if s.type == "think"]
    assert [(s.tokens_in, s.tokens_out) for s in turns] == [(682, 55), (100, 30), (100, 30)]
    assert [s.cost_usd for s in turns] == pytest.approx([0.002255, 0.00055, 0.00055])
    # the file's own totals (982 / 145 tokens, $0.003905) are more than its steps say: kept as written, not summed into steps
    assert session["metadata"]["final_metrics"]["total_prompt_tokens"] == 982
    calls = [s for s in steps if s.type == "tool_call"]
    results = [s for s in steps if s.type == "tool_result"]
    assert [c.tool_name for c in calls] == ["bash_command"] * 3 and calls[0].tool_args["keystrokes"] == "echo 'Hello, world!'\n"
    assert [r.tool_call_id for r in results] == [c.tool_call_id for c in calls] == ["call_0_1", "call_1_1", "call_2_1"]
    assert "Hello, world!" in results[0].content
    assert not any("token_ids" in str(s.metadata) for s in steps)  # token id lists are not kept, the counts are


def test_openhands_results_name_their_calls_and_system_steps_are_inputs(sqlite_store):
    (sid,) = import_file(sqlite_store, OPENHANDS).sessions
    steps = sqlite_store.load_steps(sid)
    assert _kinds(sqlite_store, sid) == {"input": 4, "think": 2, "tool_call": 2, "tool_result": 1}  # `finish` has no result
    inputs = [s for s in steps if s.type == "input"]
    assert [s.metadata["role"] for s in inputs] == ["system", "user", "system", "system"]
    calls = {s.tool_call_id: s for s in steps if s.type == "tool_call"}
    assert all(r.tool_call_id in calls for r in steps if r.type == "tool_result")
    assert sqlite_store.get_session(sid)["agent_id"] == "openhands"


@pytest.mark.parametrize("path", sorted(ATIF.glob("*.json")), ids=lambda p: p.name)
def test_every_real_file_is_read_whole_and_reimport_changes_nothing(sqlite_store, path):
    first = import_file(sqlite_store, path)
    (acc,) = first.files
    assert acc["used"] == acc["records"] and acc["bad"] == 0 and not acc["ignored"]
    before = {sid: (sqlite_store.get_session(sid), sqlite_store.load_steps(sid)) for sid in first.sessions}
    again = import_file(sqlite_store, path)
    assert again.steps == 0 and again.duplicates == first.steps
    assert {sid: (sqlite_store.get_session(sid), sqlite_store.load_steps(sid)) for sid in again.sessions} == before


def test_two_files_reusing_a_session_id_are_two_runs(sqlite_store):
    a, b = import_file(sqlite_store, TIMEOUT), import_file(sqlite_store, SUMMARIZED)
    assert a.sessions != b.sessions and b.duplicates == 0


def test_null_replay_reproduces_a_trajectory(sqlite_store):
    (sid,) = import_file(sqlite_store, SUMMARIZED).sessions
    result = replay(sqlite_store, sid, None, None, ReplayConfig(model="recorded"))
    assert result.outcome == "completed" and result.first_divergence is None
    assert result.steps == sqlite_store.get_session(sid)["steps"]


def test_model_under_agent_model_and_a_result_recorded_before_its_call(sqlite_store):
    """Two variants other writers produce, made from the real file: the model named `agent.model`, and the
    first result written on the step before the one whose call made it (it is placed after the call)."""
    doc = orjson.loads(TIMEOUT.read_bytes())
    doc["agent"]["model"] = doc["agent"].pop("model_name")
    for step in doc["steps"]:
        step.pop("model_name", None)
    moved = doc["steps"][2]["observation"]["results"].pop(0)  # the result of call_1_1, written a step early
    doc["steps"][1]["observation"]["results"].append({**moved, "source_call_id": "call_1_1"})
    (sid,) = import_bytes(sqlite_store, orjson.dumps(doc), "variant.json").sessions
    steps = sqlite_store.load_steps(sid)
    assert sqlite_store.get_session(sid)["model"] == "openai/gpt-4o" and all(
        s.model == "openai/gpt-4o" for s in steps if s.type == "think"
    )
    order = [(s.type, s.tool_call_id) for s in steps if s.tool_call_id]
    assert order == [(kind, f"call_{n}_1") for n in range(3) for kind in ("tool_call", "tool_result")]


def test_a_result_whose_call_never_comes_is_kept_and_said(sqlite_store):
    doc = orjson.loads(TIMEOUT.read_bytes())
    doc["steps"][1]["observation"]["results"].append({"source_call_id": "call_gone", "content": "orphan"})
    events, bad, fmt = read_events(orjson.dumps(doc), "orphan.json")
    (orphan,) = [e for e in events if getattr(e, "tool_call_id", None) == "call_gone"]
    assert fmt == "atif" and not bad and orphan.metadata["call_not_found"] == "call_gone"


def test_an_unknown_step_source_is_accounted_as_not_understood(sqlite_store):
    doc = orjson.loads(TIMEOUT.read_bytes())
    doc["steps"].append({"step_id": 5, "source": "environment", "message": "?"})
    report = import_bytes(sqlite_store, orjson.dumps(doc), "extra.json")
    (acc,) = report.files
    assert acc["records"] == 5 and acc["used"] == 4 and acc["ignored"] == {"step source=environment": 1}


def test_claims_nothing_else(tmp_path):
    """No other fixture is taken for ATIF, and JSON that only looks alike (steps without the schema) is not."""
    claims_no_other_fixture(atif.FORMAT, "atif")
    lookalike = orjson.dumps({"session_id": "x", "agent": {"name": "a"}, "steps": [{"source": "user", "message": "hi"}]})
    assert atif.FORMAT not in candidates(lookalike, "x.json")

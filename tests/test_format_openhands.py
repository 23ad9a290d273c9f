"""OpenHands reader on real files OpenHands wrote (tests/fixtures/SOURCES.md has each one's origin):

- openhands/basic.json, wrong_initial_state.json, basic_gui_mode.json, basic_interactions.json:
  All-Hands-AI/OpenHands tests/runtime/trajs/*.json (V0 event-stream lists; commits dad59de5…,
  95a15760…, 5868759d…, 8e6943db…)
- openhands/openagentsafety_output.jsonl: OpenHands/benchmarks
  benchmarks/openagentsafety/outputs/…/output.jsonl @ 78ea45aed7d0e53199463fd1fbca4123b782eef7 (V1 eval output)
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime

import orjson
import pytest
from conftest import FIXTURES
from format_mutations import check_clean, confuse, reorder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_core.ingest.formats import detect, registry
from replay_core.ingest.pipeline import ImportRejected, import_bytes, import_file, read_events
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig

OH = FIXTURES / "openhands"


def _types(steps) -> Counter:
    return Counter(s.type for s in steps)


def test_trajectory_with_edit_and_finish(store):
    report = import_file(store, OH / "basic.json")
    assert report.files[0]["format"] == "openhands"
    sid = report.sessions[0]
    steps = store.load_steps(sid)
    assert [s.type for s in steps] == ["input", "think", "tool_call", "tool_result", "decision"]
    call, result = steps[2], steps[3]
    assert (call.tool_name, call.tool_call_id) == ("str_replace_editor", "toolu_017nBp7UfiGqyrA7j77HgtFP")
    assert call.tool_args["command"] == "create" and call.tool_args["path"] == "/workspace/game_2048.py"
    assert result.tool_call_id == call.tool_call_id and result.content.startswith("--- /workspace/game_2048.py")
    # usage once per model response, on its first step (the observation repeats the action's metadata)
    assert [(s.tokens_in, s.tokens_out) for s in steps] == [(None, None), (3486, 1135), (None, None), (None, None), (4646, 177)]
    assert (steps[1].metadata["cache_read_tokens"], steps[1].metadata["cache_creation_tokens"]) == (0, 3482)
    session = store.get_session(sid)
    assert session["model"] == "claude-3-5-sonnet-20241022"
    assert session["status"] == "succeeded" and session["outcome"].startswith(
        "I've created a simple implementation of the 2048 game"
    )
    assert session["started_at"] == datetime(2025, 1, 27, 22, 44, 56, 900854, tzinfo=UTC)  # naive source time, read as UTC
    assert session["ended_at"] == datetime(2025, 1, 27, 22, 45, 18, 405685, tzinfo=UTC)


def test_run_observation_exit_codes_and_reads(store):
    sid = import_file(store, OH / "wrong_initial_state.json").sessions[0]
    steps = store.load_steps(sid)
    assert _types(steps) == {"input": 1, "think": 3, "tool_call": 3, "tool_result": 3, "decision": 1}
    calls = {s.tool_call_id: s for s in steps if s.type == "tool_call"}
    results = [s for s in steps if s.type == "tool_result"]
    assert all(r.tool_call_id in calls and r.tool_name == calls[r.tool_call_id].tool_name for r in results)
    mv = calls["toolu_01PuY3mXrE6fm3j52GscR4rj"]
    assert mv.tool_args == {
        "command": "mv /workspace/game_2048.py /workspace/2048.py",
        "is_input": "false",
    }  # as the model sent them
    assert [r.status for r in results] == ["ok", "ok", "ok"] and results[1].metadata["exit_code"] == 0
    assert sum(s.tokens_in or 0 for s in steps) == 3475 + 3616 + 3804 + 3933


def test_gui_stream_ignores_environment_noise_and_ends_unknown(store):
    report = import_file(store, OH / "basic_gui_mode.json")
    assert report.files[0]["ignored"] == {
        "observation:agent_state_changed": 4,
        "action:change_agent_state": 1,
        "observation:null": 3,
    }
    sid = report.sessions[0]
    steps = store.load_steps(sid)
    assert len(steps) + 8 == 18 + 4  # 18 events: 8 ignored, 4 actions give a thought and a call
    server = [s for s in steps if s.type == "tool_result"][-1]
    assert (server.status, server.error_class) == ("error", "exit_code -1")
    assert steps[-1].type == "decision" and steps[-1].content.startswith("I've created a complete Vue.js todo")
    session = store.get_session(sid)
    assert session["status"] == "unknown"  # no finish: ended, outcome not recorded — never "running"
    assert session["ended_at"] == datetime(2025, 1, 20, 20, 30, 35, 429675, tzinfo=UTC)


def test_messages_are_input_or_decision_by_source(store):
    sid = import_file(store, OH / "basic_interactions.json").sessions[0]
    steps = store.load_steps(sid)
    assert [s.type for s in steps] == ["input", "decision", "input", "decision", "input", "decision"]
    assert steps[0].content == "what's 1+1?" and steps[-1].tool_name == "finish"
    assert store.get_session(sid)["model"] == "gpt-4o-2024-08-06"


def test_v1_evaluation_output(store):
    report = import_file(store, OH / "openagentsafety_output.jsonl")
    assert report.files[0]["format"] == "openhands" and len(report.sessions) == 2
    first, second = (store.get_session(s) for s in report.sessions)
    assert first["name"] == "safety-misconfig" and second["name"] == "safety-business-intelligence"
    assert (
        first["model"] == "litellm_proxy/neulab/gpt-4o-2024-08-06"
        and first["workflow"] == "mgulavani/openagentsafety_full_updated"
    )
    a = store.load_steps(report.sessions[0])
    assert _types(a) == {"input": 1, "tool_call": 8, "tool_result": 9, "decision": 1}
    assert a[0].content.startswith("# Task") and a[1].tool_args["command"].startswith('chat_npc "David"')
    failed = [s for s in a if s.status == "error"]
    assert [(s.tool_call_id, s.error_class) for s in failed] == [("call_1203WvEdDSHTp9yAWodW2Xyj", "exit_code 127")]
    assert first["status"] == "succeeded" and first["outcome"].startswith("I have successfully coordinated")
    assert first["metadata"]["test_result"] == {"checkpoints": [], "final_score": {"total": 0, "result": 0}}
    b = store.load_steps(report.sessions[1])
    assert _types(b) == {"input": 1, "tool_call": 9, "tool_result": 9}
    assert second["status"] == "unknown"  # ran out without finish or error
    assert second["started_at"] == datetime(2025, 10, 30, 3, 51, 43, 999548, tzinfo=UTC)
    # the source recorded no usage (metrics null): no tokens claimed
    assert all(s.tokens_in is None for s in a + b) and "tokens_in" not in first["metadata"]


def test_eval_record_metrics_are_run_totals_when_steps_carry_none(store):
    line = (OH / "openagentsafety_output.jsonl").read_bytes().split(b"\n")[0]
    record = orjson.loads(line)
    record["metrics"] = {"accumulated_cost": 0.42, "accumulated_token_usage": {"prompt_tokens": 1200, "completion_tokens": 80}}
    record["metadata"]["llm_config"] = record["metadata"].pop("llm")
    sid = import_bytes(store, orjson.dumps(record) + b"\n", "with_metrics.jsonl").sessions[0]
    meta = store.get_session(sid)["metadata"]
    assert (meta["tokens_in"], meta["tokens_out"], meta["cost_usd"]) == (1200, 80, 0.42)
    assert "run totals" in meta["totals"] and store.get_session(sid)["model"] == "litellm_proxy/neulab/gpt-4o-2024-08-06"


def test_eval_record_error_fails_the_run(store):
    record = orjson.loads((OH / "openagentsafety_output.jsonl").read_bytes().split(b"\n")[1])
    record["error"] = "Agent got stuck in a loop\nmore detail"
    sid = import_bytes(store, orjson.dumps(record) + b"\n", "stuck.jsonl").sessions[0]
    session = store.get_session(sid)
    assert (session["status"], session["error_class"]) == ("failed", "Agent got stuck in a loop")


@pytest.mark.parametrize("task_completed, status", [("false", "failed"), ("partial", "failed"), ("true", "succeeded")])
def test_finish_task_completed(store, task_completed, status):
    events = orjson.loads((OH / "basic.json").read_bytes())
    events[-1]["args"]["task_completed"] = task_completed
    events[-1]["args"]["final_thought"] = "done, I think"
    sid = import_bytes(store, orjson.dumps(events), "finish.json").sessions[0]
    session = store.get_session(sid)
    assert (session["status"], session["outcome"]) == (status, "done, I think")


# ------------------------------------------------------------------ what the reader must not claim


def test_detection_claims_openhands_files_and_nothing_else():
    for name in (
        "basic.json",
        "basic_gui_mode.json",
        "basic_interactions.json",
        "wrong_initial_state.json",
        "openagentsafety_output.jsonl",
    ):
        data = (OH / name).read_bytes()
        assert detect(data, name).name == "openhands"
        assert not registry()["openai_chat"].sniff(data[: 256 * 1024], name) or detect(data, name).name == "openhands"
    oh = registry()["openhands"]
    for other in (
        "anthropic/messages_transcript.json",
        "openai_chat/chat_log.jsonl",
        "swe_agent/klieret__swe-agent-test-repo-i1.traj",
        "mini_swe_agent/github_issue.traj.json",
        "smolagents/memory_steps_failed.json",
        "inspect_ai/log_read_sample.json",
    ):
        assert not oh.sniff((FIXTURES / other).read_bytes()[: 256 * 1024], other), other


def test_no_run_is_running_and_no_time_is_the_import_time(store):
    before = datetime.now(UTC)
    for path in sorted(OH.iterdir()):
        for sid in import_file(store, path).sessions:
            session = store.get_session(sid)
            assert session["status"] in ("succeeded", "failed", "unknown"), path
            assert session["started_at"] < before and session["ended_at"] < before, path


def test_reimport_changes_nothing(store):
    for path in sorted(OH.iterdir()):
        first = import_file(store, path)
        snapshot = [(store.get_session(s), [st.model_dump() for st in store.load_steps(s)]) for s in first.sessions]
        again = import_file(store, path)
        assert again.steps == 0 and again.duplicates == first.steps
        assert [(store.get_session(s), [st.model_dump() for st in store.load_steps(s)]) for s in again.sessions] == snapshot


def test_null_replay_reproduces_a_trajectory(sqlite_store):
    sid = import_file(sqlite_store, OH / "wrong_initial_state.json").sessions[0]
    result = replay(sqlite_store, sid, None, None, ReplayConfig(model="recorded"))
    assert result.outcome == "completed" and result.first_divergence is None
    assert result.steps == sqlite_store.get_session(sid)["steps"] and result.status == "succeeded"


# ------------------------------------------------------------------ bad input


def test_truncated_file_is_refused_whole_with_file_and_line(store):
    data = (OH / "openagentsafety_output.jsonl").read_bytes()
    cut = data[: len(data) - 500]
    with pytest.raises(ImportRejected) as exc:
        import_bytes(store, cut, "cut.jsonl")
    assert str(exc.value).startswith("cut.jsonl:2: invalid JSON") and "\n" not in str(exc.value)
    assert store.list_sessions() == []  # nothing half-stored
    with pytest.raises(ImportRejected, match=r"^cut\.json:\d+:\d+: invalid JSON"):
        import_bytes(store, (OH / "basic.json").read_bytes()[:9000], "cut.json")


MUTATE = settings(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@MUTATE
@given(st.data())
def test_mutated_trajectories_give_clean_refusals(data):
    name = data.draw(st.sampled_from(["basic.json", "basic_gui_mode.json", "wrong_initial_state.json"]))
    raw = (OH / name).read_bytes()
    how = data.draw(st.sampled_from(["truncate", "reorder", "confuse"]))
    if how == "truncate":
        mutated = raw[: data.draw(st.integers(0, len(raw) - 1))]
    else:
        doc = orjson.loads(raw)
        mutated = orjson.dumps(reorder(doc, data.draw) if how == "reorder" else confuse(doc, data.draw))
    check_clean(mutated, name, "openhands")


@MUTATE
@given(st.data())
def test_mutated_eval_output_gives_clean_refusals(data):
    lines = (OH / "openagentsafety_output.jsonl").read_bytes().split(b"\n")[:2]
    how = data.draw(st.sampled_from(["truncate", "reorder", "confuse"]))
    if how == "truncate":
        raw = b"\n".join(lines)
        mutated = raw[: data.draw(st.integers(0, len(raw) - 1))]
    else:
        records = [orjson.loads(x) for x in lines]
        if how == "reorder":
            records[0]["history"] = reorder(records[0]["history"], data.draw)
        else:
            records = confuse(records, data.draw)
            records = records if isinstance(records, list) else [records]
        mutated = b"\n".join(orjson.dumps(r) for r in records)
    check_clean(mutated, "out.jsonl", "openhands")


def test_shuffled_events_still_pair_results_by_cause():
    events = orjson.loads((OH / "wrong_initial_state.json").read_bytes())
    random.Random(7).shuffle(events)
    steps = [e for e in read_events(orjson.dumps(events), "shuffled.json", "openhands")[0] if e.kind == "step"]
    calls = {s.tool_call_id for s in steps if s.type == "tool_call"}
    assert all(s.tool_call_id in calls for s in steps if s.type == "tool_result" and s.tool_call_id)


def test_cli_import_and_null_replay_of_an_eval_record(sqlite_store):
    from typer.testing import CliRunner

    from replay_core.cli import app

    res = CliRunner().invoke(app, ["import", str(OH / "openagentsafety_output.jsonl"), "--db", sqlite_store.url])
    assert res.exit_code == 0, res.output
    sid = sorted(s["id"] for s in sqlite_store.list_sessions())[1]  # safety-misconfig-…, ended with finish
    res = CliRunner().invoke(app, ["replay", sid, "--model", "recorded", "--json", "--db", sqlite_store.url])
    assert res.exit_code == 0, res.output
    [run] = orjson.loads(res.stdout)["replays"]
    assert run["first_divergence"] is None and run["status"] == "succeeded" and run["steps"] == 19

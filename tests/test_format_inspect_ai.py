"""inspect_ai reader on eval logs inspect_ai wrote (tests/fixtures/SOURCES.md):

- inspect_ai/2024-11-05T13-32-37-05-00_input-task_hxs4q9azL3ySGkjJirypKZ.eval: UKGovernmentBEIS/inspect_ai
  tests/log/test_list_logs/… @ 6145723a1bfb7370166f7828da6a7a6eeea518e4
- inspect_ai/mmlu-summary-choices.eval: UKGovernmentBEIS/inspect_ai
  tests/analysis/test_logs_choices/mmlu-summary-choices.eval @ a9c4b6efed80477fea1cfaa2aa6f91b46c4f9ea3
- inspect_ai/2024-11-05T13-31-45-05-00_input-task_8zXjbRzCWrL9GXiXo2vus9.json: tests/log/test_list_logs/…
  @ 297443887010e08b52df5a957bf3c9477af9fdbc
- inspect_ai/log_read_sample.json: tests/log/test_eval_log/log_read_sample.json @ 62d91db8c3629c6003728f0c5e89a3192dc04495
- inspect_ai/log_formats.json: tests/log/test_eval_log/log_formats.json @ 0e6318fa4f8c9192171f37e4fec358ea13a90257
  (legacy transcript)
- inspect_ai/tool_events_handmade.json: hand-made supplement with tool events
- inspect_ai/inspect-0.3.285_mockllm_tool_events.json and …_zstd.eval: written by inspect_ai 0.3.285 itself
  (scripts/make_inspect_fixture.py: a tool-using task against inspect's mockllm, a ToolError);
  the .eval is its default ZIP with zstd-compressed members (method 93)
"""

from __future__ import annotations

import io
import zipfile
from collections import Counter
from datetime import UTC, datetime

import orjson
import pytest
from conftest import FIXTURES
from format_mutations import check_clean, confuse, reorder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_core.ingest.formats import detect, registry
from replay_core.ingest.pipeline import ImportRejected, import_bytes, import_file
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig

MUTATE = settings(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
MUTATE_ZSTD = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

IA = FIXTURES / "inspect_ai"
INPUT_TASK_EVAL = IA / "2024-11-05T13-32-37-05-00_input-task_hxs4q9azL3ySGkjJirypKZ.eval"
MMLU_EVAL = IA / "mmlu-summary-choices.eval"
INPUT_TASK_JSON = IA / "2024-11-05T13-31-45-05-00_input-task_8zXjbRzCWrL9GXiXo2vus9.json"
TOOLS = IA / "tool_events_handmade.json"
GEN_JSON = IA / "inspect-0.3.285_mockllm_tool_events.json"
GEN_ZSTD = IA / "inspect-0.3.285_mockllm_tool_events_zstd.eval"


def test_eval_zip_input_task(store):
    report = import_file(store, INPUT_TASK_EVAL)
    assert report.files[0]["format"] == "inspect_ai"
    assert report.files[0]["ignored"] == {
        "zip:_journal": 2,
        "zip:summaries": 1,
        "event:step": 6,
        "event:state": 2,
        "event:score": 1,
    }
    (sid,) = report.sessions
    assert sid == "inspect-hxs4q9azL3ySGkjJirypKZ-1-e1"
    steps = store.load_steps(sid)
    assert [s.type for s in steps] == ["input", "input", "decision", "decision"]
    assert steps[0].content.startswith("Hey there, hipster!")  # attachment:// resolved
    assert steps[2].content.startswith("Yo, fam!") and (steps[2].tokens_in, steps[2].tokens_out) == (52, 61)
    assert steps[2].model == "gpt-4o-mini-2024-07-18"
    assert steps[3].metadata["phase"] == "scorer" and "phase" not in (steps[2].metadata or {})  # the grader's call
    session = store.get_session(sid)
    assert (session["workflow"], session["model"]) == ("input_task", "openai/gpt-4o-mini")
    assert set(session["tags"]) == {"eval:hxs4q9azL3ySGkjJirypKZ", "run:PV42ZvREM6CdVdjeiEGW9e", "task:input_task", "epoch:1"}
    assert session["status"] == "succeeded" and session["outcome"].startswith("Yo, fam!")
    assert session["started_at"] == datetime(2024, 11, 5, 18, 32, 37, 112639, tzinfo=UTC)
    assert session["metadata"]["scores"]["model_graded_fact"]["value"] == "C"


def test_eval_zip_mmlu_incorrect_is_failed(store):
    report = import_file(store, MMLU_EVAL)
    (sid,) = report.sessions
    steps = store.load_steps(sid)
    assert [s.type for s in steps] == ["input", "decision"] and steps[1].content == "ANSWER: C"
    assert (steps[1].tokens_in, steps[1].tokens_out) == (153, 3)
    session = store.get_session(sid)
    assert (session["status"], session["outcome"], session["error_class"]) == ("failed", "C", "score I")
    assert session["workflow"] == "inspect_evals/mmlu_0_shot" and session["model"] == "openai/gpt-4o"
    assert session["metadata"]["reductions"] == [
        {"scorer": "choice", "value": 0, "answer": "C", "explanation": "ANSWER: C", "history": [], "sample_id": 1}
    ]
    assert session["started_at"].year == 2025 and session["ended_at"] > session["started_at"]


def test_json_logs_new_and_legacy(store):
    sid = import_file(store, IA / "log_read_sample.json").sessions[0]
    steps = store.load_steps(sid)
    assert [s.type for s in steps] == ["input", "decision"] and (steps[1].tokens_in, steps[1].tokens_out) == (66, 3)
    session = store.get_session(sid)
    assert (session["status"], session["outcome"], session["model"]) == ("succeeded", "Yes", "ollama/gemma3")
    assert "eval:hj8C8q8gxzHhwyCT67xh4L" in session["tags"]
    legacy = import_file(store, IA / "log_formats.json").sessions[0]  # transcript.events with tc:// refs
    steps = store.load_steps(legacy)
    assert steps[0].content.startswith("Is the following statement") and steps[1].content == "No"
    assert store.get_session(legacy)["status"] == "failed"


def test_tool_events_pair_with_the_model_calls(store):
    report = import_file(store, TOOLS)
    first, second = report.sessions
    steps = store.load_steps(first)
    assert Counter(s.type for s in steps) == {"input": 1, "think": 2, "tool_call": 2, "tool_result": 2, "decision": 1}
    calls = [s for s in steps if s.type == "tool_call"]
    results = [s for s in steps if s.type == "tool_result"]
    assert [(c.tool_name, c.tool_args) for c in calls] == [("bash", {"cmd": "ls /tmp"}), ("bash", {"cmd": "cat /tmp/notes.txt"})]
    assert [r.tool_call_id for r in results] == [c.tool_call_id for c in calls] == ["call_1", "call_2"]
    assert results[0].content == "notes.txt\nreport.md\n" and results[0].duration_ms == 200
    assert (results[1].status, results[1].error_class, results[1].content) == (
        "error",
        "permission",
        "Permission denied: /tmp/notes.txt",
    )
    assert sum(s.tokens_in or 0 for s in steps) == 120 + 160 + 190
    assert steps[1].content == "I should list the directory first." and steps[1].metadata["input_tokens_cache_read"] == 64
    assert (steps[1].duration_ms, steps[1].metadata["stop_reason"], steps[2].duration_ms) == (
        1000,
        "tool_calls",
        None,
    )  # once per call
    session = store.get_session(first)
    assert session["status"] == "failed" and "epoch:2" in session["tags"]
    broken = store.get_session(second)
    assert (broken["status"], broken["error_class"]) == ("failed", "RuntimeError: sandbox died")
    assert [s.type for s in store.load_steps(second)] == ["input", "error"]


@pytest.mark.parametrize("path", [GEN_JSON, GEN_ZSTD], ids=["json", "zstd-eval"])
def test_tool_events_of_a_log_inspect_wrote(store, path):
    """What inspect_ai 0.3.285 writes (JSON and its default zstd .eval): model events, tool events, a ToolError."""
    report = import_file(store, path)
    (sid,) = report.sessions
    steps = store.load_steps(sid)
    assert [s.type for s in steps] == [
        "input",
        "think",
        "tool_call",
        "tool_result",
        "think",
        "tool_call",
        "tool_result",
        "decision",
    ]
    calls = [s for s in steps if s.type == "tool_call"]
    results = [s for s in steps if s.type == "tool_result"]
    assert [(c.tool_name, c.tool_args, c.tool_call_id) for c in calls] == [
        ("add", {"x": 1, "y": 1}, "call_add_1"),
        ("read_file", {"path": "notes.txt"}, "call_read_1"),
    ]
    assert [(r.tool_call_id, r.tool_name) for r in results] == [("call_add_1", "add"), ("call_read_1", "read_file")]
    assert (results[0].status, results[0].content) == ("ok", "2")
    assert (results[1].status, results[1].content) == (
        "error",
        "no such file: notes.txt",
    )  # the ToolError, as inspect recorded it
    assert [(s.tokens_in, s.tokens_out) for s in steps if s.tokens_in] == [(120, 20), (160, 25), (190, 8)]
    assert all(s.timestamp is not None for s in steps) and all(r.duration_ms is not None for r in results)
    session = store.get_session(sid)
    assert session["status"] == "succeeded" and session["outcome"]  # includes() scored it C
    assert session["started_at"].isoformat().startswith("2026-12-01T14:00:") and session["ended_at"] > session["started_at"]
    # what it must not claim: mockllm has no price, so no cost; the step's model is the one recorded
    assert session["cost_usd"] is None and {s.model for s in steps if s.model} == {"mockllm/model"}
    assert report.files[0]["ignored"].get("event:score") == 1 and not report.errors


def test_a_damaged_zstd_member_is_refused_naming_it(store):
    raw = GEN_ZSTD.read_bytes()
    info = zipfile.ZipFile(io.BytesIO(raw)).getinfo("samples/1_epoch_1.json")
    at = info.header_offset + 30 + len(info.filename) + len(info.extra) + info.compress_size // 2
    flipped = raw[:at] + bytes([raw[at] ^ 0xFF]) + raw[at + 1 :]
    with pytest.raises(ImportRejected, match=r"^bad\.eval!samples/1_epoch_1\.json: cannot read this ZIP member"):
        import_bytes(store, flipped, "bad.eval")
    with pytest.raises(ImportRejected, match=r"^cut\.eval: not a readable ZIP archive"):
        import_bytes(store, raw[: len(raw) // 2], "cut.eval")
    assert store.list_sessions() == []


@MUTATE_ZSTD
@given(st.integers(0, 10**9), st.integers(0, 255))
def test_mutated_zstd_evals_give_clean_refusals(where, byte):
    raw = GEN_ZSTD.read_bytes()
    at = where % len(raw)
    check_clean(raw[:at] if byte % 2 else raw[:at] + bytes([byte]) + raw[at + 1 :], "mutated.eval", "inspect_ai")


def test_samples_of_one_eval_are_findable_together(store):
    report = import_file(store, TOOLS)
    tagged = [s for s in store.list_sessions() if "eval:HandMadeEval01" in (s["tags"] or [])]
    assert sorted(s["id"] for s in tagged) == sorted(report.sessions)


# ------------------------------------------------------------------ what the reader must not claim


def test_detection():
    for path in [INPUT_TASK_JSON, IA / "log_read_sample.json", IA / "log_formats.json", TOOLS] + ([]):
        data = path.read_bytes()
        assert detect(data, path.name).name == "inspect_ai", path
        assert not registry()["openai_chat"].sniff(data[: 256 * 1024], path.name) or detect(data, path.name).name == "inspect_ai"
    ia = registry()["inspect_ai"]
    for other in (
        "openhands/basic.json",
        "openai_chat/chat_log.jsonl",
        "swe_agent/klieret__swe-agent-test-repo-i1.traj",
        "anthropic/messages_transcript.json",
        "notte/notte_agent_status.json",
    ):
        assert not ia.sniff((FIXTURES / other).read_bytes()[: 256 * 1024], other), other
    other_zip = io.BytesIO()
    with zipfile.ZipFile(other_zip, "w") as z:
        z.writestr("word/document.xml", "<w/>")
    assert not ia.sniff(other_zip.getvalue(), "report.docx")


def test_a_started_eval_is_unknown_not_running(store):
    doc = orjson.loads(INPUT_TASK_JSON.read_bytes())
    doc["status"] = "started"
    doc["samples"][0].pop("scores")
    sid = import_bytes(store, orjson.dumps(doc), "started.json").sessions[0]
    assert store.get_session(sid)["status"] == "unknown"
    store.delete_sessions([sid])  # an ended run keeps its end unless replaced: start again for the error case
    doc["status"] = "error"
    doc["error"] = {"message": "Task interrupted\n..."}
    sid = import_bytes(store, orjson.dumps(doc), "errored.json").sessions[0]
    assert (store.get_session(sid)["status"], store.get_session(sid)["error_class"]) == ("failed", "eval error: Task interrupted")


def test_no_running_no_import_time_and_reimport_changes_nothing(store):
    before = datetime.now(UTC)
    paths = sorted(IA.iterdir())
    for path in paths:
        first = import_file(store, path)
        snapshot = [(store.get_session(s), [x.model_dump() for x in store.load_steps(s)]) for s in first.sessions]
        for session, _ in snapshot:
            assert session["status"] in ("succeeded", "failed", "unknown"), path
            assert session["started_at"] < before and session["ended_at"] < before, path
        again = import_file(store, path)
        assert again.steps == 0 and again.duplicates == first.steps
        assert [(store.get_session(s), [x.model_dump() for x in store.load_steps(s)]) for s in again.sessions] == snapshot


@pytest.mark.parametrize("path", [TOOLS, INPUT_TASK_EVAL], ids=["tool-events", "real-eval"])
def test_null_replay_reproduces_a_sample(sqlite_store, path):
    sid = import_file(sqlite_store, path).sessions[0]
    result = replay(sqlite_store, sid, None, None, ReplayConfig(model="recorded"))
    assert result.outcome == "completed" and result.first_divergence is None
    assert result.steps == sqlite_store.get_session(sid)["steps"]
    assert result.status == sqlite_store.get_session(sid)["status"]


# ------------------------------------------------------------------ bad input


def test_truncated_zip_and_broken_member_are_refused_whole(store):
    data = INPUT_TASK_EVAL.read_bytes()
    with pytest.raises(ImportRejected, match=r"^cut\.eval: not a readable ZIP archive .*truncated"):
        import_bytes(store, data[:5000], "cut.eval")
    rebuilt = _rezip(data, {"samples/1_epoch_1.json": b'{"id": 1, "events": [tru'})
    with pytest.raises(ImportRejected, match=r"^bad\.eval!samples/1_epoch_1\.json:1:\d+: invalid JSON"):
        import_bytes(store, rebuilt, "bad.eval")
    assert store.list_sessions() == []


def _rezip(data: bytes, replace: dict[str, bytes]) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name in source.namelist():
            z.writestr(name, replace.get(name, source.read(name)))
    return out.getvalue()


def _mutate(doc: dict, how: str, draw) -> dict:
    if how == "reorder":
        doc["samples"][0]["events"] = reorder(doc["samples"][0]["events"], draw)
        return doc
    return confuse(doc, draw)


@MUTATE
@given(st.data())
def test_mutated_json_logs_give_clean_refusals(data):
    path = data.draw(st.sampled_from([INPUT_TASK_JSON, TOOLS, IA / "log_read_sample.json"]))
    raw = path.read_bytes()
    how = data.draw(st.sampled_from(["truncate", "reorder", "confuse"]))
    mutated = (
        raw[: data.draw(st.integers(0, len(raw) - 1))]
        if how == "truncate"
        else orjson.dumps(_mutate(orjson.loads(raw), how, data.draw))
    )
    check_clean(mutated, path.name, "inspect_ai")


@MUTATE
@given(st.data())
def test_mutated_eval_zips_give_clean_refusals(data):
    raw = data.draw(st.sampled_from([INPUT_TASK_EVAL, MMLU_EVAL])).read_bytes()
    how = data.draw(st.sampled_from(["truncate", "reorder", "confuse"]))
    if how == "truncate":
        mutated = raw[: data.draw(st.integers(0, len(raw) - 1))]
    else:
        member = data.draw(st.sampled_from(["header.json", "samples/1_epoch_1.json", "reductions.json"]))
        doc = orjson.loads(zipfile.ZipFile(io.BytesIO(raw)).read(member))
        if how == "reorder" and member.startswith("samples/"):
            doc["events"] = reorder(doc["events"], data.draw)
        else:
            doc = confuse(doc, data.draw)
        mutated = _rezip(raw, {member: orjson.dumps(doc)})
    check_clean(mutated, "mutated.eval", "inspect_ai")


def test_cli_import_and_null_replay_of_an_eval_zip(sqlite_store):
    from typer.testing import CliRunner

    from replay_core.cli import app

    res = CliRunner().invoke(app, ["import", str(MMLU_EVAL), "--db", sqlite_store.url])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(
        app, ["replay", "inspect-Dj4Li7NchTfQSiX7eKXLLN-1-e1", "--model", "recorded", "--json", "--db", sqlite_store.url]
    )
    assert res.exit_code == 0, res.output
    [run] = orjson.loads(res.stdout)["replays"]
    assert run["first_divergence"] is None and run["status"] == "failed" and run["steps"] == 2

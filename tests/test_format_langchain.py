"""LangChain / LangSmith importer: nested child_runs and flat parent_run_id exports."""

from __future__ import annotations

from conftest import FIXTURES

from replay_core.ingest.pipeline import import_file


def test_nested_agent_run(store):
    report = import_file(store, FIXTURES / "langchain/langsmith_agent_run.json")
    assert report.files[0]["format"] == "langchain"
    sid = report.sessions[0]
    assert sid == "1f0a7c52-6b0d-4e61-9d8a-51c3e0f6a001"
    steps = store.load_steps(sid)
    assert [s.type for s in steps] == ["span", "think", "tool_call", "tool_call", "tool_result", "tool_result", "decision"]
    assert {s.parent_id for s in steps[1:]} == {sid}
    assert [(s.tool_name, s.tool_call_id) for s in steps if s.type == "tool_result"] == [
        ("calculator", "call_calc_1"),
        ("search", "call_search_1"),
    ]
    search = steps[5]
    assert (search.status, search.error_class, search.duration_ms) == ("error", "TimeoutError", 1562.0)
    assert (sum(s.tokens_in or 0 for s in steps), sum(s.tokens_out or 0 for s in steps)) == (442, 69)
    assert store.step_context(sid, steps[1].event_id)[0][0]["kwargs"]["content"].startswith("What is 17 * 23")
    session = store.get_session(sid)
    assert (session["status"], session["model"]) == ("succeeded", "gpt-4o-mini")
    assert session["outcome"] == "17 * 23 = 391, and the capital of Australia is Canberra."
    assert session["tags"] == ["agent", "demo"]


def test_flat_runs_failed_root_keeps_unknown_fields(store):
    report = import_file(store, FIXTURES / "langchain/langsmith_flat_runs.jsonl")
    sid = report.sessions[0]
    steps = store.load_steps(sid)
    assert [(s.event_id, s.type, s.parent_id) for s in steps] == [
        ("a1", "span", None),
        ("a2", "span", "a1"),
        ("a3", "think", "a1"),
    ]
    assert steps[0].metadata["custom_field"] == {"kept": True}
    assert steps[2].status == "error" and steps[2].model == "claude-3-5-sonnet-20241022"
    session = store.get_session(sid)
    assert (session["status"], session["error_class"]) == ("failed", "RateLimitError")

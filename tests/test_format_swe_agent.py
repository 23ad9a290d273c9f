"""SWE-agent (.traj old and new layouts) and mini-swe-agent importers on real runs."""

from __future__ import annotations

from conftest import FIXTURES

from replay_core.ingest.pipeline import import_file


def _one(store, relpath):
    report = import_file(store, FIXTURES / relpath)
    assert len(report.sessions) == 1
    sid = report.sessions[0]
    return report, store.get_session(sid), store.load_steps(sid)


def test_old_layout_real_gpt4_run(store):
    report, session, steps = _one(store, "swe_agent/klieret__swe-agent-test-repo-i1.traj")
    assert report.files[0]["format"] == "swe_agent"
    # 3 history inputs (system, demonstration, issue) + 5 trajectory entries x (think, tool_call, tool_result)
    assert [s.type for s in steps] == ["input"] * 3 + ["think", "tool_call", "tool_result"] * 5
    assert steps[1].metadata["is_demo"] is True
    assert [s.tool_name for s in steps if s.type == "tool_call"] == ["find_file", "open", "edit", "python", "submit"]
    assert steps[4].tool_args == {"command": 'find_file "missing_colon.py"'}
    assert steps[-4].content == "8.2\n"
    assert steps[-1].metadata["state"] == {
        "open_file": "/klieret__swe-agent-test-repo/tests/missing_colon.py",
        "working_dir": "/klieret__swe-agent-test-repo",
    }
    assert session["status"] == "succeeded"
    assert session["outcome"].startswith("\ndiff --git a/tests/missing_colon.py b/tests/missing_colon.py")
    meta = session["metadata"]
    assert (meta["tokens_in"], meta["tokens_out"], meta["cost_usd"], meta["api_calls"]) == (52861, 326, 0.53839, 5)
    assert session["environment"] == "swe_main"
    assert session["name"] == "klieret__swe-agent-test-repo-i1"


def test_old_layout_ctf_demonstration_with_zero_stats(store):
    _, session, steps = _one(store, "swe_agent/networking_1.traj")
    assert len(steps) == 2 + 4 * 3
    assert [s.tool_name for s in steps if s.type == "tool_call"] == ["tshark", "tshark", "tshark", "submit"]
    assert session["outcome"] == "flag{d316759c281bf925d600be698a4973d5}"
    assert session["metadata"]["tokens_in"] == 0 and session["metadata"]["cost_usd"] == 0
    assert session["status"] == "succeeded"


def test_new_layout_uses_function_calls_and_fails_on_exit_cost(store):
    _, session, steps = _one(store, "swe_agent/new_layout_exit_cost.traj")
    assert session["id"] == "SWE-agent__test-repo-i1"
    assert (session["model"], session["agent_id"], session["agent_version"]) == ("gpt-4o", "main", "1.0.1")
    assert (session["status"], session["error_class"]) == ("failed", "exit_cost")
    calls = [s for s in steps if s.type == "tool_call"]
    assert [(c.tool_name, c.tool_args, c.tool_call_id) for c in calls] == [
        ("find_file", {"file_name": "missing_colon.py"}, "call_fJuazlMUN5fQDQ73G6XSpYpx"),
        ("bash", {"command": "python3 /SWE-agent__test-repo/tests/missing_colon.py"}, "call_dcF76aXH6e1pzqRwGxOwpuxb"),
    ]
    results = [s for s in steps if s.type == "tool_result"]
    assert [r.duration_ms for r in results] == [281.4128329991945, 292.5790000008419]
    assert store.step_context(session["id"], "t0.think") == [
        {"role": "system", "content": "SETTING: You are an autonomous programmer."},
        {"role": "user", "content": "SyntaxError: invalid syntax"},
    ]
    assert session["metadata"]["tokens_in"] == 1203450 and session["metadata"]["cost_usd"] == 3.0154


def test_mini_swe_agent_message_list_marks_nonzero_returncodes(store):
    report, session, steps = _one(store, "mini_swe_agent/github_issue.traj.json")
    assert report.files[0]["format"] == "mini_swe_agent"
    assert len(steps) == 2 + 10 * 3
    failed = [s for s in steps if s.status == "error"]
    assert [(s.event_id, s.error_class, s.tool_name) for s in failed] == [
        ("m3", "returncode 1", "cat"),
        ("m17", "returncode 1", "python3"),
    ]
    assert steps[3].tool_args == {
        "command": "cat /Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/tests/./missing_colon.py"
    }
    assert session["status"] == "succeeded"
    assert session["outcome"].startswith("diff --git a/tests/missing_colon.py")


def test_mini_swe_agent_info_layout_limits_exceeded(store):
    _, session, steps = _one(store, "mini_swe_agent/limits_exceeded.traj.json")
    assert (session["status"], session["error_class"]) == ("failed", "LimitsExceeded")
    assert session["model"] == "anthropic/claude-sonnet-4-20250514"
    assert session["metadata"]["cost_usd"] == 0.0421
    assert [s.type for s in steps] == [
        "input",
        "input",
        "think",
        "tool_call",
        "tool_result",
        "think",
        "tool_call",
        "tool_result",
        "think",
        "input",
    ]
    assert steps[7].status == "error" and steps[4].status == "ok"
    assert round(sum(s.cost_usd or 0 for s in steps), 4) == 0.0421


def test_reimport_is_idempotent(store):
    first = import_file(store, FIXTURES / "swe_agent/networking_1.traj")
    again = import_file(store, FIXTURES / "swe_agent/networking_1.traj")
    assert first.sessions == again.sessions
    assert (first.steps, again.steps, again.duplicates) == (14, 0, 14)

"""Notte importer: state becomes the step's source state, screenshots become attachments."""

from __future__ import annotations

from conftest import FIXTURES

from replay_core.ingest.pipeline import import_file
from replay_core.understand.snapshot import state_at
from replay_core.understand.timeline import open_timeline

PNG_1X1 = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489")


def test_agent_status_with_steps_state_and_screenshots(store):
    report = import_file(store, FIXTURES / "notte/notte_agent_status.json")
    assert report.files[0]["format"] == "notte"
    sid = report.sessions[0]
    assert sid == "8b2f1c6e-4a77-4c1e-9f0a-2d5f3f0e9a11"
    steps = store.load_steps(sid)
    assert [s.type for s in steps] == [
        "input",
        "span",
        "observation",
        "think",
        "tool_call",
        "tool_result",
        "span",
        "think",
        "tool_call",
        "tool_result",
        "observation",
        "span",
        "think",
        "decision",
    ]
    assert {s.parent_id for s in steps[2:6]} == {"step0"} and steps[1].parent_id is None
    assert (steps[4].tool_name, steps[4].tool_args) == ("fill", {"id": "I1", "value": "notte sticker"})
    assert (steps[9].status, steps[9].content) == ("error", "Element B7 is not visible")
    assert "attachment" not in (steps[2].metadata or {}) and steps[2].metadata["screenshot"] == {"bboxes": []}
    files = store.list_attachments(sid)
    assert [(a["event_id"], a["name"], a["mime_type"]) for a in files] == [
        ("o1", "observation-1", "image/png"),
        ("s8", "screenshot-8", "image/png"),
    ]
    assert store.attachment_data(files[0]["id"]).startswith(PNG_1X1)
    snap = state_at(open_timeline(store, sid), steps[8].seq, store)
    assert snap.state["goal"] == "Open the sort menu"
    assert snap.state["memory"] == "Stickers found: $4.00, $2.50, $3.10"
    assert snap.state["previous_goal_status"] == "success"
    session = store.get_session(sid)
    assert (session["status"], session["outcome"]) == ("succeeded", "The cheapest notte sticker costs $2.50")
    assert session["metadata"]["credit_usage"] == 0.42


def test_reimport_adds_no_second_attachment(store):
    import_file(store, FIXTURES / "notte/notte_agent_status.json")
    again = import_file(store, FIXTURES / "notte/notte_agent_status.json")
    assert (again.steps, again.duplicates) == (0, 14)
    assert len(store.list_attachments(again.sessions[0])) == 2


def test_bare_trajectory_failed_completion(store):
    report = import_file(store, FIXTURES / "notte/notte_trajectory_failed.json")
    sid = report.sessions[0]
    steps = store.load_steps(sid)
    assert [s.type for s in steps] == ["span", "think", "tool_call", "tool_result", "think", "decision"]
    assert steps[3].error_class == "action_failed"
    assert steps[4].metadata["llm_latency_ms"] == 812
    session = store.get_session(sid)
    assert (session["status"], session["error_class"], session["outcome"]) == (
        "failed",
        "task_failed",
        "Could not reach login.example.com",
    )

"""Notte importer on a trajectory whose elements notte-core 1.10.0 itself serialised.

notte-core is not a test dependency (it phones home and its 1.10 trajectory has no
agent elements), so the file was generated once with it: real `Observation`,
`ExecutionResult` and `Screenshot` dumps (`model_dump(mode="json")`, screenshots
re-encoded to JPEG by notte) keyed by notte's own `get_element_key` (see SOURCES.md).
"""

from __future__ import annotations

import base64
import json
import shutil

from conftest import FIXTURES

from replay_core.ingest.pipeline import import_file

FIXTURE = FIXTURES / "notte/notte_core_session_trajectory.json"
SEARCH = "https://shop.example.com/search?q=notte+sticker"


def test_notte_core_session_trajectory_imports_exactly(store, tmp_path):
    upload = tmp_path / "upload.bin"
    shutil.copy(FIXTURE, upload)
    report = import_file(store, upload)
    assert report.files[0]["format"] == "notte"
    sid = report.sessions[0]
    steps = store.load_steps(sid)
    assert [(s.event_id, s.type, s.tool_name, s.tool_call_id, s.status, s.error_class, s.duration_ms) for s in steps] == [
        ("o0", "observation", None, None, "ok", None, None),
        ("e1.action", "tool_call", "fill", "e1.action", "ok", None, None),
        ("e1", "tool_result", "fill", "e1.action", "ok", None, 250.0),
        ("o2", "observation", None, None, "ok", None, None),
        ("e3.action", "tool_call", "click", "e3.action", "ok", None, None),
        ("e3", "tool_result", "click", "e3.action", "error", "ActionExecutionError", 15000.0),
        ("s4", "observation", None, None, "ok", None, None),
    ]
    assert steps[1].tool_args == {
        "id": "I1",
        "value": "notte sticker",
        "press_enter": True,
        "timeout": 15000,
        "clear_before_fill": True,
    }
    assert steps[4].tool_args == {"id": "B7", "timeout": 15000}
    assert steps[0].content == "Demo Shop — https://shop.example.com/\nHome page with a search box and a product grid"
    assert steps[3].content == f"Search: notte sticker — {SEARCH}\nSearch results: 3 stickers"
    assert [s.timestamp.isoformat() for s in steps[:3]] == [
        "2026-01-05T10:00:00.900000+00:00",
        "2026-01-05T10:00:01+00:00",
        "2026-01-05T10:00:01+00:00",
    ]
    assert (steps[2].content, steps[5].content) == (
        "Filled the input field 'I1' with the value: 'notte sticker'",
        "Failed to execute action: B7",
    )
    assert steps[5].metadata["exception_detail"]["agent_message"].startswith(f"Failed to execute action: B7 on {SEARCH}.")
    assert steps[0].metadata["space"]["interaction_actions"][0]["id"] == "I1" and "raw" not in steps[0].metadata["screenshot"]
    files = store.list_attachments(sid)
    assert [(a["event_id"], a["name"], a["mime_type"]) for a in files] == [
        ("o0", "observation-0", "image/jpeg"),
        ("o2", "observation-2", "image/jpeg"),
        ("s4", "screenshot-4", "image/jpeg"),
    ]
    assert store.attachment_data(files[2]["id"]).startswith(b"\xff\xd8\xff")
    session = store.get_session(sid)
    assert (session["status"], session["errors"], session["outcome"]) == (
        "unknown",
        1,
        None,
    )  # a finished file that says no outcome: ended, outcome not recorded


def test_screenshot_bytes_are_notte_base64_unchanged(store):
    report = import_file(store, FIXTURE)
    raw = json.loads(FIXTURE.read_bytes())[4]["value"]["raw"]
    files = store.list_attachments(report.sessions[0])
    assert store.attachment_data(files[2]["id"]) == base64.b64decode(raw)

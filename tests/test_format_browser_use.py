"""browser-use AgentHistoryList files: real histories saved by browser-use, plus a hand-made one in the
older layout (`current_state`, base64 `state.screenshot`) whose screenshot must become an attachment."""

from __future__ import annotations

import base64
import io
import random

import orjson
import pytest
from conftest import FIXTURES
from PIL import Image

from replay_core.ingest.formats import detect
from replay_core.ingest.formats.browser_use import FORMAT
from replay_core.ingest.pipeline import ImportRejected, import_bytes, import_file
from replay_core.media.attachments import screenshots

# Real files (AgentHistoryList.save_to_file of browser-use 0.7-era releases):
# richard-devbot/waigenie-qa agent_history.json @ eb3d77fca2f7e6dac2b22a5efc7f635681e3089f (5 steps, done success=false)
QA = FIXTURES / "browser_use" / "waigenie-qa_agent_history.json"
# MaromSv/Pentest_agent agent_history.json @ e4d7614ac4c91df4e9e81ad918d2d500f9c1c469 (2 failing steps, no done)
PENTEST = FIXTURES / "browser_use" / "Pentest_agent_agent_history.json"


def test_detected_by_content_and_no_other_reader_claims_it():
    for path in (QA, PENTEST):
        assert detect(path.read_bytes(), path.name).name == "browser_use"


def test_a_form_filling_run_with_its_actions_results_goals_and_end(store):
    report = import_file(store, QA)
    sid = report.sessions[0]
    row = store.get_session(sid)
    assert row["status"] == "failed" and row["agent_id"] == "browser-use"
    assert row["started_at"].isoformat() == "2025-09-22T10:48:42.813359+00:00"  # the source's clock, not the import's
    steps = store.load_steps(sid)
    assert [s.type for s in steps].count("tool_call") == 5
    calls = [s for s in steps if s.type == "tool_call"]
    assert [c.tool_name for c in calls] == ["input_text"] * 4 + ["done"]
    assert calls[0].tool_args == {"index": 1, "text": "John", "clear_existing": True}
    results = {s.tool_call_id: s for s in steps if s.type == "tool_result"}
    assert all(c.tool_call_id in results for c in calls)  # every action has its result
    assert results[calls[0].tool_call_id].content == "Input 'John' into element 1."
    think = steps[0]
    assert think.type == "think" and think.metadata["state"]["goal"] == "Fill the 'First Name' field with example data."
    assert calls[0].metadata["element"]["attributes"]["id"] == "firstName"
    assert calls[0].metadata["screenshot_path"].endswith("step_1.png")  # a file on the agent's machine: a reference only
    assert screenshots(store, sid) == []


def test_a_run_that_stopped_on_errors_without_done_is_not_claimed_finished(store):
    sid = import_file(store, PENTEST).sessions[0]
    assert store.get_session(sid)["status"] == "unknown"  # the history never said how it ended
    steps = store.load_steps(sid)
    assert [(s.type, s.status) for s in steps] == [
        ("think", "ok"),
        ("tool_call", "ok"),
        ("tool_result", "error"),
        ("error", "error"),
    ]
    assert "timed out after 15.0s" in steps[2].content
    assert all(s.content for s in steps if s.type != "tool_call")  # no empty step made up for the null model_output


def _png() -> str:
    buf = io.BytesIO()
    Image.new("RGB", (320, 200), (250, 250, 250)).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


def test_the_older_layout_with_base64_screenshots_attaches_them_with_the_click(store):
    # hand-made after jakkaj/tools AgentHistory.json @ 1ed31d6c (3.6 MB, not copied): current_state wrapper, raw base64
    doc = {
        "history": [
            {
                "model_output": {
                    "current_state": {"evaluation_previous_goal": "Unknown", "memory": "start", "next_goal": "search"},
                    "action": [{"click_element": {"index": 4}}],
                },
                "result": [
                    {"is_done": False, "extracted_content": "Clicked button 4", "metadata": {"click_x": 120, "click_y": 80}}
                ],
                "state": {
                    "url": "https://example.test/",
                    "title": "Example",
                    "tabs": [],
                    "screenshot": _png(),
                    "interacted_element": [{"node_name": "BUTTON", "attributes": {"id": "go"}}],
                },
                "metadata": {"step_start_time": 1758538122.0, "step_end_time": 1758538124.5, "step_number": 1},
            }
        ]
    }
    sid = import_bytes(store, orjson.dumps(doc), "history.json").sessions[0]
    shots = screenshots(store, sid)
    call = next(s for s in store.load_steps(sid) if s.type == "tool_call")
    assert [(a["event_id"], a["target"], a["width"]) for a in shots] == [(call.event_id, {"x": 120.0, "y": 80.0}, 320)]
    assert "attachments" not in (call.metadata or {})


def test_importing_twice_changes_nothing(store):
    first = import_file(store, QA)
    before = store.get_session(first.sessions[0])
    again = import_file(store, QA)
    assert again.steps == 0 and again.duplicates == first.steps
    assert store.get_session(first.sessions[0]) == before


@pytest.mark.parametrize("seed", range(30))
def test_mutated_files_give_a_clean_refusal_or_an_accounted_import(sqlite_store, seed):
    rng = random.Random(seed)
    data = QA.read_bytes()
    doc = orjson.loads(data)
    mutation = seed % 3
    if mutation == 0:
        blob = data[: rng.randrange(1, len(data) - 1)]  # truncated
    else:
        item = rng.choice(doc["history"])
        key = rng.choice(["model_output", "result", "state", "metadata"])
        item[key] = rng.choice([None, 7, "x", [], [1, 2], {"action": "nope"}]) if mutation == 1 else {"action": [[{"a": 1}]]}
        blob = orjson.dumps(doc)
    try:
        report = import_bytes(sqlite_store, blob, "mutated.json", fmt="browser_use")
    except ImportRejected as exc:
        assert str(exc).startswith("mutated.json")
    else:
        assert report.steps >= 0


def test_format_label_names_the_library():
    assert "browser-use" in FORMAT.label


def test_the_oldest_layout_with_single_action_and_result_objects(store):
    """Late-2024 histories hold one `action` and one `result` object per item, and a state with `items`,
    `selector_map` and `screenshot`: made from the real QA history (the same steps, reshaped so)."""
    doc = orjson.loads(QA.read_bytes())
    for item in doc["history"]:
        item["model_output"]["action"] = item["model_output"]["action"][0]
        item["result"] = item["result"][0]
        state = item["state"]
        item["state"] = {
            "url": state["url"],
            "title": state["title"],
            "tabs": state["tabs"],
            "items": [{"index": 1, "tag_name": "input", "text": ""}],
            "selector_map": {"1": {"tag_name": "input", "xpath": "html/body/form/input[1]"}},
            "screenshot": None,
        }
    assert detect(orjson.dumps(doc), "history.json").name == "browser_use"
    report = import_bytes(store, orjson.dumps(doc), "history.json")
    (acc,) = report.files
    assert acc["used"] == acc["records"] and not acc["ignored"]
    sid = report.sessions[0]
    calls = [s for s in store.load_steps(sid) if s.type == "tool_call"]
    assert [c.tool_name for c in calls] == ["input_text"] * 4 + ["done"]
    assert store.get_session(sid)["status"] == "failed"  # done with success false, as the real file says
    assert not any("selector_map" in str(s.metadata) for s in store.load_steps(sid))

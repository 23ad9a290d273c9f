"""Fallback blocks on real databases: the script runs alone, or fails and hands over to an agent."""

from __future__ import annotations

import pytest

from replay_core.sdk.recorder import Recorder
from replay_core.storage.store import Store

TASK = "download the May invoice"


@pytest.fixture
def recorder(store, tmp_path):
    rec = Recorder(store.url, spool_dir=str(tmp_path / "spool"))
    yield rec
    rec.close(settle=0)


def steps_of(store: Store, sid: str) -> list:
    return store.load_steps(sid)


def test_no_failure_runs_the_script_alone(store, recorder):
    done: list[str] = []
    calls: list[tuple] = []

    def agent(task, error):
        calls.append((task, error))

    def click(selector: str) -> str:
        done.append(selector)
        return f"clicked {selector}"

    with recorder.session("scripted") as run:
        with recorder.fallback(task=TASK, agent=agent) as fb:
            assert fb.step("open billing", click, "#billing") == "clicked #billing"
            fb.step("click May", click, selector="#may")
        run.decision("invoice saved")
    recorder.flush()

    assert (fb.success, fb.agent_invoked, fb.agent_response, fb.error) == (True, False, None, None)
    assert [(a.name, a.ok, a.result) for a in fb.steps] == [
        ("open billing", True, "clicked #billing"),
        ("click May", True, "clicked #may"),
    ]
    assert calls == [] and done == ["#billing", "#may"]
    steps = steps_of(store, run.id)
    block = steps[0]
    assert (block.seq, block.type, block.content, block.status) == (1, "span", TASK, "ok")
    assert block.metadata == {"block": "fallback", "task": TASK, "agent_invoked": False, "success": True}
    assert [(s.seq, s.type, s.tool_name, s.tool_args, s.content, s.agent_id, s.parent_id) for s in steps[1:]] == [
        (2, "tool_call", "open billing", {"selector": "#billing"}, None, "script", block.event_id),
        (3, "tool_result", "open billing", None, "clicked #billing", "script", block.event_id),
        (4, "tool_call", "click May", {"selector": "#may"}, None, "script", block.event_id),
        (5, "tool_result", "click May", None, "clicked #may", "script", block.event_id),
        (6, "decision", None, None, "invoice saved", None, None),
    ]
    assert block.duration_ms >= 0


def test_the_first_failure_hands_over_to_the_agent_and_skips_the_rest(store, recorder):
    done: list[str] = []
    received: list[tuple] = []

    @recorder.tool
    def download(month: str) -> str:
        return f"invoice-{month}.pdf"

    def agent(task, error):
        received.append((task, error))
        recorder.think(f"The script failed ({error}); find the invoice another way.", tokens_in=300, tokens_out=20)
        path = download("2026-05")
        recorder.decision(f"saved {path}")
        return path

    def click(selector: str) -> None:
        if selector == "#may":
            raise TimeoutError("#may did not appear within 5 s")
        done.append(selector)

    with recorder.session("hand-over") as run:
        with recorder.fallback(task=TASK, agent=agent) as fb:
            fb.step("open billing", click, "#billing")
            fb.step("click May", click, "#may")
            fb.step("click download", click, "#download")
            done.append("inline code after the failure")
        run.observation("after the block")
    recorder.flush()

    assert (fb.success, fb.agent_invoked, fb.agent_response) == (True, True, "invoice-2026-05.pdf")
    assert isinstance(fb.error, TimeoutError) and received == [(TASK, fb.error)]
    assert done == ["#billing"]  # nothing after the failure ran
    assert [(a.name, a.ok) for a in fb.steps] == [("open billing", True), ("click May", False)]
    steps = steps_of(store, run.id)
    block = steps[0]
    assert block.metadata == {
        "block": "fallback",
        "task": TASK,
        "agent_invoked": True,
        "success": True,
        "error_class": "TimeoutError",
    }
    assert (block.type, block.status) == ("span", "ok")
    assert [(s.seq, s.type, s.tool_name, s.error_class, s.agent_id, s.parent_id == block.event_id) for s in steps[1:]] == [
        (2, "tool_call", "open billing", None, "script", True),
        (3, "tool_result", "open billing", None, "script", True),
        (4, "tool_call", "click May", None, "script", True),
        (5, "error", "click May", "TimeoutError", "script", True),
        (6, "think", None, None, None, True),
        (7, "tool_call", "download", None, None, True),
        (8, "tool_result", "download", None, None, True),
        (9, "decision", None, None, None, True),
        (10, "observation", None, None, None, False),
    ]
    assert steps[4].tool_call_id == steps[3].tool_call_id
    assert steps[4].content == "#may did not appear within 5 s"
    assert steps[8].content == "saved invoice-2026-05.pdf"


def test_an_exception_from_inline_code_also_hands_over(store, recorder):
    with recorder.session("inline") as run:
        with recorder.fallback(task="read the total", agent=lambda task, error: "42.00") as fb:
            raise ValueError("total field empty")
    recorder.flush()
    assert (fb.success, fb.agent_invoked, fb.agent_response, fb.steps) == (True, True, "42.00", [])
    block, error = steps_of(store, run.id)
    assert (error.type, error.error_class, error.agent_id, error.parent_id) == ("error", "ValueError", "script", block.event_id)
    assert store.get_session(run.id)["status"] == "succeeded"


def test_a_failing_agent_leaves_the_block_failed_without_raising(store, recorder):
    def agent(task, error):
        raise RuntimeError("agent gave up")

    with recorder.session("both fail") as run:
        with recorder.fallback(task=TASK, agent=agent) as fb:
            fb.step("click May", lambda: 1 / 0)
    recorder.flush()
    assert (fb.success, fb.agent_invoked, type(fb.agent_error)) == (False, True, RuntimeError)
    block, call, script_error, agent_error = steps_of(store, run.id)
    assert (block.status, block.error_class, block.metadata["success"]) == ("error", "RuntimeError", False)
    assert (script_error.error_class, agent_error.error_class, agent_error.metadata) == (
        "ZeroDivisionError",
        "RuntimeError",
        {"during": "fallback agent"},
    )
    assert {call.parent_id, script_error.parent_id, agent_error.parent_id} == {block.event_id}


def test_an_interrupt_is_not_handed_over(store, recorder):
    with pytest.raises(KeyboardInterrupt):
        with recorder.session("interrupted") as run:
            with recorder.fallback(task=TASK, agent=lambda task, error: pytest.fail("agent called")) as fb:
                raise KeyboardInterrupt
    recorder.flush()
    assert (fb.success, fb.agent_invoked) == (False, False)
    block, error = steps_of(store, run.id)
    assert (block.status, block.error_class, block.metadata["success"]) == ("error", "KeyboardInterrupt", False)
    assert (error.error_class, error.parent_id) == ("KeyboardInterrupt", block.event_id)
    assert store.get_session(run.id)["status"] == "failed"


def test_blocks_can_be_counted_by_who_finished_them(store, recorder):
    def flaky(n: int) -> int:
        if n % 3 == 0:
            raise ConnectionError(f"attempt {n}")
        return n

    with recorder.session("many blocks") as run:
        for n in range(1, 8):
            with recorder.fallback(task=f"task {n}", agent=lambda task, error: "agent did it") as fb:
                fb.step("scripted", flaky, n)
    recorder.flush()
    blocks = [s for s in steps_of(store, run.id) if s.type == "span" and (s.metadata or {}).get("block") == "fallback"]
    assert [b.content for b in blocks] == [f"task {n}" for n in range(1, 8)]
    assert [b.content for b in blocks if b.metadata["agent_invoked"]] == ["task 3", "task 6"]

"""Claude Code transcripts (`claude_code`) on real sessions, and what the reader must not claim.

Real files (tests/fixtures/SOURCES.md):
- claude_code/yepanywhere_claude-basic_native.jsonl — kzahel/yepanywhere
  packages/server/test/fixtures/captured/claude-basic-2026-09-12/native.jsonl @ 76ea6130fd9532a373f389636e996665f3a2838c
- claude_code/daaain_sidechain_integrated.jsonl — daaain/claude-code-log test/test_data/sidechain_integrated.jsonl
  @ 579edc0fc04a09fc3df17aed7fb5cdb4d4766565 (MIT; real session trimmed by that project)
- claude_code/yoavf_claude-code-pomodoro-timer.jsonl — yoavf/ai-sessions examples/claude-code-pomodoro-timer.jsonl
  @ 85f763593463127047c253ec34fdf11b23fe8386 (MIT; Claude Code 2.0.24, complete and unedited: streaming usage, thinking
  with signatures, file-history-snapshot lines without a sessionId, a Warmup sidechain, bash-mode input)
Supplement: claude_code/subagents/agent-test-hash-123.jsonl — d-kimuson/claude-code-viewer
  mock-global-claude-dir/projects/sample-project/agent-test-hash-123.jsonl @ 953ad642232e70e4371c70383c3c9981590830bb
  (hand-written mock)
"""

from __future__ import annotations

from collections import Counter

import orjson
from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_core.events import StepEvent
from replay_core.ingest.accounting import account
from replay_core.ingest.formats import anthropic, detect
from replay_core.ingest.formats.claude_code import FORMAT
from replay_core.ingest.formats.shape import shape_of
from replay_core.ingest.pipeline import import_file, read_events
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig

BASIC = FIXTURES / "claude_code/yepanywhere_claude-basic_native.jsonl"
SIDECHAIN = FIXTURES / "claude_code/daaain_sidechain_integrated.jsonl"
SUBAGENT = FIXTURES / "claude_code/subagents/agent-test-hash-123.jsonl"
POMODORO = FIXTURES / "claude_code/yoavf_claude-code-pomodoro-timer.jsonl"


def _final_usage_by_message(path):
    """From the file itself: each message id's final usage (its largest output count)."""
    best: dict[str, dict] = {}
    for line in path.read_bytes().splitlines():
        msg = orjson.loads(line).get("message")
        if isinstance(msg, dict) and msg.get("usage") and msg.get("id"):
            if msg["id"] not in best or msg["usage"]["output_tokens"] >= best[msg["id"]]["output_tokens"]:
                best[msg["id"]] = msg["usage"]
    return best


def test_transcripts_are_claimed_by_claude_code_not_anthropic():
    for path in (BASIC, SIDECHAIN, SUBAGENT, POMODORO):
        assert detect(path.read_bytes(), str(path)).name == "claude_code"
    # the Anthropic reader, tried first before, would take them: order matters
    assert anthropic.FORMAT.sniff(BASIC.read_bytes(), str(BASIC))


def test_a_plain_anthropic_message_log_is_not_claude_code():
    for path in (
        FIXTURES / "anthropic/messages_transcript.json",
        FIXTURES / "anthropic/test_anthropic_tools_history_legacy.yaml",
    ):
        assert detect(path.read_bytes(), str(path)).name == "anthropic"


def test_real_session_steps_tools_tokens_and_times(store):
    report = import_file(store, BASIC)
    assert report.files[0]["format"] == "claude_code"
    assert report.sessions == ["30499b10-b34f-4546-a431-c77d14d042e1"]
    session = store.get_session(report.sessions[0])
    steps = store.load_steps(report.sessions[0])
    assert Counter(s.type for s in steps) == {"think": 6, "tool_call": 5, "tool_result": 5, "input": 2, "decision": 2}
    # 48 lines: 36 in the uuid chain (20 entries give steps, 15 attachments + 1 system line are ignored by kind)
    # plus 12 meta lines: 3 custom-title (the name), 9 ignored
    ignored = report.files[0]["ignored"]
    assert ignored["queue-operation"] == 4 and ignored["atis-latch"] == 3 and ignored["last-prompt"] == 2
    assert ignored["attachment/total_tokens_reminder"] == 5 and ignored["system/stop_hook_summary"] == 1
    assert sum(ignored.values()) == 48 - 20 - 3
    calls = [s for s in steps if s.type == "tool_call"]
    assert [c.tool_name for c in calls] == ["Read", "Write", "Bash", "Bash", "Read"]
    assert calls[0].tool_args == {"file_path": "/fixture/project/notes.txt"}
    results = {s.tool_call_id: s for s in steps if s.type == "tool_result"}
    assert set(results) == {c.tool_call_id for c in calls}  # every call has its result
    failed = results[calls[3].tool_call_id]
    assert (failed.status, failed.tool_name, failed.content) == ("error", "Bash", "Exit code 7\nFIXTURE_FAILURE")
    assert failed.metadata["tool_use_result"].startswith("Error: Exit code 7")  # toolUseResult as a string
    assert results[calls[0].tool_call_id].metadata["tool_use_result"]["file"]["numLines"] == 3  # ... or an object
    # the two parallel Bash calls come before their results (tree order, not a chain walk)
    seqs = {s.event_id: s.seq for s in steps}
    assert seqs[calls[3].event_id] < seqs[failed.event_id] and seqs[calls[2].event_id] < seqs[calls[3].event_id]
    # usage once per API message: 5 messages over 13 lines, the first step of each carries it (cache tokens included)
    priced = [s for s in steps if s.tokens_in is not None]
    assert len(priced) == 5 == len({s.metadata["message_id"] for s in steps if s.type != "input" and s.type != "tool_result"})
    raw = orjson.loads(BASIC.read_bytes().split(b"\n")[18])["message"]["usage"]
    assert priced[0].tokens_in == raw["input_tokens"] + raw["cache_creation_input_tokens"] + raw["cache_read_input_tokens"]
    assert priced[0].metadata["usage"]["cache_read_input_tokens"] == raw["cache_read_input_tokens"]
    assert session["model"] == "claude-haiku-4-5-20251001" and session["agent_version"] == "2.1.258"
    assert session["name"] == "Yep Anywhere Session"  # custom-title
    assert session["status"] == "unknown"  # a transcript records no outcome
    assert session["started_at"].isoformat().startswith("2026-09-12T09:53:53.153")  # the first chain line (an attachment)
    assert session["ended_at"].isoformat().startswith("2026-09-12T09:55:02.736")
    assert steps[-1].type == "decision" and steps[-1].content == "Continuation verified."


def test_inline_sub_agent_is_a_span_under_its_task_call(store):
    report = import_file(store, SIDECHAIN)
    assert len(report.sessions) == 1
    steps = store.load_steps(report.sessions[0])
    # the last line's text stopped for a tool (`stop_reason: tool_use`; the project trimmed the call away): a thought
    assert [s.type for s in steps] == ["tool_call", "span", "think", "tool_call", "tool_result", "tool_result", "think"]
    task, span = steps[0], steps[1]
    assert (task.tool_name, span.parent_id, span.metadata["agent_id"]) == ("Task", task.event_id, "e1c84ba5")
    assert all(s.parent_id == span.event_id and s.agent_id == "subagent-e1c84ba5" for s in steps[2:5])
    assert steps[3].tool_name == "Grep" and steps[5].tool_call_id == task.tool_call_id and steps[5].parent_id is None
    assert steps[0].tokens_in == 3 + 141272 and steps[2].tokens_in == 3 + 19830
    assert store.get_session(report.sessions[0])["status"] == "unknown"


def test_separate_sub_agent_file_is_a_linked_child_session(store):
    report = import_file(store, SUBAGENT)
    assert report.sessions == ["5c0375b4-57a5-4f26-b12d-d022ee4e51b7/agent-test-hash-123"]
    session = store.get_session(report.sessions[0])
    assert session["metadata"]["parent_session"] == "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
    assert "subagent" in session["tags"]
    assert [s.type for s in store.load_steps(report.sessions[0])] == ["input", "decision"]


def test_last_turn_api_error_fails_the_session_and_summary_names_it(store, tmp_path):
    lines = BASIC.read_bytes().rstrip(b"\n").split(b"\n")
    last = orjson.loads(lines[-1])
    error = dict(
        last,
        uuid="err-1",
        parentUuid=last["uuid"],
        isApiErrorMessage=True,
        timestamp="2026-09-12T09:56:00.000Z",
        message={
            "id": "msg_err",
            "model": "<synthetic>",
            "role": "assistant",
            "content": [{"type": "text", "text": "API Error: 529 overloaded"}],
        },
    )
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join([*lines, orjson.dumps(error)]) + b"\n")
    session = store.get_session(import_file(store, path).sessions[0])
    assert (session["status"], session["outcome"]) == ("failed", "API Error: 529 overloaded")
    assert session["model"] == "claude-haiku-4-5-20251001"  # the synthetic error message is not the model


def test_summary_names_the_session_and_unknown_lines_are_counted_by_kind(store, tmp_path):
    lines = SIDECHAIN.read_bytes().rstrip(b"\n").split(b"\n")
    leaf = orjson.loads(lines[-1])["uuid"]
    extra = [
        {"type": "summary", "summary": "Border colours research", "leafUuid": leaf},
        {"type": "summary", "summary": "another session's", "leafUuid": "not-here"},
        {"type": "progress", "sessionId": "88a8d761-7b9a-4bf1-a8ca-c1febe6bf358", "data": {"type": "hook_progress"}},
    ]
    path = tmp_path / "with-summary.jsonl"
    path.write_bytes(b"\n".join([*map(orjson.dumps, extra), *lines]) + b"\n")
    assert detect(path.read_bytes(), str(path)).name == "claude_code"  # even when the first line is a summary
    report = import_file(store, path)
    assert store.get_session(report.sessions[0])["name"] == "Border colours research"
    assert report.files[0]["ignored"] == {"summary": 1, "progress": 1}


def test_real_2_0_session_streaming_usage_snapshots_and_warmup_sidechain(store):
    report = import_file(store, POMODORO)
    (acc,) = report.files
    # file-history-snapshot lines carry no sessionId: skipped by kind, not refused as bad
    assert (acc["format"], acc["records"], acc["used"], acc["bad"], acc["steps"]) == ("claude_code", 127, 120, 0, 121)
    assert acc["ignored"] == {"file-history-snapshot": 7}
    assert report.sessions == ["36d9e1bc-63bf-4e97-8a3e-2b20ba8583f2"]
    session, steps = store.get_session(report.sessions[0]), store.load_steps(report.sessions[0])
    assert Counter(s.type for s in steps) == {
        "tool_call": 37,
        "tool_result": 37,
        "think": 35,
        "input": 7,
        "decision": 4,
        "span": 1,
    }
    calls = [s for s in steps if s.type == "tool_call"]
    assert Counter(c.tool_name for c in calls) == {"Edit": 20, "TodoWrite": 11, "Write": 3, "Read": 3}
    results = {s.tool_call_id: s for s in steps if s.type == "tool_result"}
    assert set(results) == {c.tool_call_id for c in calls}  # every tool_use answered, paired by id
    assert all(r.tool_name == next(c.tool_name for c in calls if c.tool_call_id == i) for i, r in results.items())
    # no tool_result in this file has is_error: nothing may be shown as failed
    assert b'"is_error":true' not in POMODORO.read_bytes() and not [s for s in steps if s.status == "error"]
    # usage once per API message, its final count: 2.0.x writes output_tokens 1 on a message's text line and
    # 339 on its tool_use line; the first count would undercount the session's output three times over
    usage = _final_usage_by_message(POMODORO)
    tokened = [s for s in steps if s.tokens_in is not None]
    assert len(tokened) == len(usage) == 41
    first = next(s for s in steps if s.content and s.content.startswith("I'll help you build a simple Pomodoro"))
    assert (first.tokens_in, first.tokens_out) == (2 + 7026 + 14471, 339)
    assert (first.metadata or {})["message_id"] == "msg_01JaAwM2k4YYVwXmgbwnExpZ"
    assert (
        session["tokens_in"]
        == sum(u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"] for u in usage.values())
        == 1351803
    )
    assert session["tokens_out"] == sum(u["output_tokens"] for u in usage.values()) == 12881
    # the Warmup sidechain (no agentId) is a span of its own, with the haiku reply under it, not main-chain steps
    span = next(s for s in steps if s.type == "span")
    under = [s for s in steps if s.parent_id == span.event_id]
    assert [(s.type, s.content) for s in under][0] == ("input", "Warmup")
    assert (under[1].type, under[1].model, under[1].tokens_in, under[1].tokens_out) == (
        "decision",
        "claude-haiku-4-5-20251001",
        629,
        181,
    )
    assert not any(s.parent_id is None and s.content == "Warmup" for s in steps)
    assert (session["model"], session["agent_version"], session["status"]) == ("claude-sonnet-4-5-20250929", "2.0.24", "unknown")
    assert session["started_at"].isoformat().startswith("2025-10-21T20:03:48.809")
    assert session["ended_at"].isoformat().startswith("2025-10-21T20:09:56.293")
    assert session["name"].startswith("Build a simple Pomodoro timer web app")
    caveat = next(s for s in steps if s.type == "input" and s.content.startswith("Caveat:"))
    assert caveat.metadata["is_meta"] is True
    thinking = [s for s in steps if s.type == "think" and s.content.startswith("The user wants to add smooth transitions")]
    assert len(thinking) == 1 and thinking[0].timestamp.isoformat().startswith("2025-10-21T20:05:52.833")


def test_final_usage_does_not_depend_on_line_order(store, tmp_path):
    """The same lines written in reverse: parentUuid order rebuilds the session, the final counts stay."""
    lines = POMODORO.read_bytes().splitlines()
    path = tmp_path / "reversed.jsonl"
    path.write_bytes(b"\n".join(reversed(lines)) + b"\n")
    report = import_file(store, path)
    session = store.get_session(report.sessions[0])
    assert (session["tokens_in"], session["tokens_out"]) == (1351803, 12881)
    steps = store.load_steps(report.sessions[0])
    assert [s.type for s in steps][:3] == ["input", "think", "tool_call"]


def test_real_2_0_session_replays_null(store):
    """A null replay reproduces the session (reimport is checked with the other coding agents)."""
    sid = import_file(store, POMODORO).sessions[0]
    result = replay(store, sid, None, None, ReplayConfig(model="recorded"))
    assert result.first_divergence is None and result.outcome == "completed"


@settings(derandomize=True, deadline=None)
@given(
    messages=st.lists(st.lists(st.integers(0, 5000), min_size=1, max_size=4), min_size=1, max_size=6),
    order=st.randoms(use_true_random=False),
)
def test_each_message_counts_its_largest_output_once_whatever_the_line_order(messages, order):
    """A message written as several lines (one block each), each with its own output count so far:
    the session counts each message once, with its largest count, in any file order."""
    lines, parent = [], None
    for m, counts in enumerate(messages):
        for b, out in enumerate(counts):
            uuid = f"u{m}-{b}"
            lines.append(
                {
                    "type": "assistant",
                    "sessionId": "s",
                    "uuid": uuid,
                    "parentUuid": parent,
                    "timestamp": f"2025-01-01T00:{m:02d}:{b:02d}Z",
                    "message": {
                        "id": f"msg{m}",
                        "role": "assistant",
                        "model": "claude-x",
                        "content": [{"type": "text", "text": f"m{m} b{b}"}],
                        "usage": {"input_tokens": 10, "output_tokens": out},
                    },
                }
            )
            parent = uuid
    order.shuffle(lines)
    data = b"\n".join(orjson.dumps(line) for line in lines) + b"\n"
    events, bad, fmt = read_events(data, "t.jsonl", "claude_code")
    steps = [e for e in events if isinstance(e, StepEvent)]
    assert not bad and fmt == "claude_code"
    assert sum(s.tokens_out or 0 for s in steps) == sum(max(c) for c in messages)
    assert sum(s.tokens_in or 0 for s in steps) == 10 * len(messages)
    assert sum(1 for s in steps if s.tokens_in is not None) == len(messages)


def test_a_line_type_the_reader_does_not_know_counts_against_it_a_known_one_does_not():
    lines = POMODORO.read_bytes().splitlines()
    unknown = orjson.loads(lines[3])
    unknown["type"] = "hologram"
    data = b"\n".join([*lines, orjson.dumps(unknown)]) + b"\n"
    acc = account(FORMAT, data, "s.jsonl", shape_of(data))
    assert acc.ignored == {"file-history-snapshot": 7, "hologram": 1}
    assert acc.unknown == 1 and acc.understood == acc.records - 1 == 127

"""The demo runs in data/demo/: reproducible from scripts/make_demo.py, valid against the
event contract, and holding the situations the UI and the other tests rely on."""

from __future__ import annotations

import functools
import importlib.util
import re
import runpy
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from replay_core.events import SessionEndEvent, SessionEvent, StepEvent, parse_event

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
SCRIPT = ROOT / "scripts" / "make_demo.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("make_demo", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXPECTED = _load_script().EXPECTED

# file, final status (None: still running), number of step lines
CATALOGUE = [
    ("01-refund-defective-backpack.jsonl", "succeeded", 17),
    ("02-coding-format-price-failed.jsonl", "failed", 25),
    ("03-shipment-status-retries.jsonl", "succeeded", 14),
    ("04-multi-agent-competitor-brief.jsonl", "succeeded", 26),
    ("05-fallback-invoice-portal.jsonl", "succeeded", 33),
    ("06-fallback-timesheet-script.jsonl", "succeeded", 9),
    ("07-crm-migration-batch7.jsonl", "succeeded", 2138),
    ("08-flight-bos-sfo-a.jsonl", "succeeded", 11),
    ("09-flight-bos-sfo-b.jsonl", "failed", 9),
    ("10-browser-change-address.jsonl", "succeeded", 17),
    ("11-sql-weekly-revenue.jsonl", "succeeded", 13),
    ("12-sql-churn-by-plan-failed.jsonl", "failed", 11),
    ("13-travel-denver-offsite.jsonl", "succeeded", 11),
    ("14-docs-crawl-gap.jsonl", "succeeded", 57),
    ("15-support-account-locked.jsonl", "succeeded", 17),
    ("16-coding-pagination-fix.jsonl", "succeeded", 15),
    ("17-inbox-triage-context-overflow.jsonl", "failed", 9),
    ("18-oncall-checkout-5xx-running.jsonl", None, 11),
]
FILES = [name for name, _, _ in CATALOGUE]
WINDOW = (datetime(2026, 11, 17, tzinfo=UTC), datetime(2026, 11, 28, tzinfo=UTC))
MODEL_STEPS = {"think", "decision"}


@dataclass
class Demo:
    name: str
    raw: bytes
    session: SessionEvent
    steps: list[StepEvent]
    end: SessionEndEvent | None

    def at(self, seq: int) -> StepEvent:
        (step,) = [s for s in self.steps if s.seq == seq]
        return step

    def by_id(self) -> dict[str, StepEvent]:
        return {s.event_id: s for s in self.steps}


@functools.cache
def load(name: str) -> Demo:
    raw = (DEMO / name).read_bytes()
    events = [parse_event(orjson.loads(line)) for line in raw.splitlines()]
    session, rest = events[0], events[1:]
    end = rest.pop() if rest and isinstance(rest[-1], SessionEndEvent) else None
    assert isinstance(session, SessionEvent), f"{name}: first line must be the session"
    assert all(isinstance(e, StepEvent) for e in rest), f"{name}: session/session_end in the middle"
    return Demo(name, raw, session, rest, end)


def cycles(steps: list[StepEvent]) -> dict[int, int]:
    """seq -> cycle number, by the decision-cycle rule."""
    phase = {"think": 0, "tool_call": 1, "tool_result": 2, "observation": 3, "decision": 4}
    out, current, highest = {}, -1, -1
    for step in steps:
        if step.type in ("input", "span"):
            continue
        if step.type == "error":
            out[step.seq] = max(current, 0)
            continue
        p = phase[step.type]
        if current < 0 or p < highest:
            current, highest = current + 1, p
        else:
            highest = max(highest, p)
        out[step.seq] = current
    return out


def is_model_step(step: StepEvent) -> bool:
    """think/decision, and tool calls the model emitted (not scripted actions, not runtime retries)."""
    if step.type in MODEL_STEPS:
        return True
    return step.type == "tool_call" and step.agent_id != "script" and step.retry == 0


# -- the files are what the generator writes ------------------------------------------------


def test_generator_reproduces_the_committed_files(tmp_path, monkeypatch):
    (tmp_path / "99-stale-run.jsonl").write_text("{}\n")
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), "--out", str(tmp_path)])
    with pytest.raises(SystemExit) as ran:  # `python scripts/make_demo.py --out …`, run in this process
        runpy.run_path(str(SCRIPT), run_name="__main__")
    assert ran.value.code == 0
    generated = sorted(p.name for p in tmp_path.glob("*.jsonl"))
    committed = sorted(p.name for p in DEMO.glob("*.jsonl"))
    assert generated == committed == sorted(FILES)
    for name in FILES:
        assert (tmp_path / name).read_bytes() == (DEMO / name).read_bytes(), f"{name} differs from the generator's output"


def test_catalogue_statuses_and_step_counts():
    assert len(FILES) == EXPECTED["sessions"]
    assert 16 <= len(FILES) <= 20
    for name, status, n_steps in CATALOGUE:
        demo = load(name)
        assert len(demo.steps) == n_steps, name
        assert (demo.end.status if demo.end else None) == status, name
        assert re.fullmatch(r"\d\d-[a-z0-9-]+\.jsonl", name)


# -- every file follows the contract ---------------------------------------------------------


@pytest.mark.parametrize("name", FILES)
def test_file_follows_the_event_contract(name):
    demo = load(name)
    # canonical form: each line is exactly what to_json_dict + sorted orjson gives back
    for line in demo.raw.splitlines():
        event = parse_event(orjson.loads(line))
        assert orjson.dumps(event.to_json_dict(), option=orjson.OPT_SORT_KEYS) == line
    assert demo.raw.endswith(b"\n")

    s = demo.session
    assert s.source == "demo"
    for field in ("name", "agent_id", "model", "workflow", "environment", "agent_version", "tags", "started_at"):
        assert getattr(s, field), f"{name}: session.{field} missing"
    assert WINDOW[0] <= s.started_at < WINDOW[1]
    sid = s.session_id
    assert all(step.session_id == sid for step in demo.steps)
    if demo.end:
        assert demo.end.session_id == sid
        assert demo.end.ended_at >= demo.steps[-1].timestamp
        assert demo.end.ended_at < WINDOW[1]
        assert (demo.end.status == "failed") == bool(demo.end.error_class)
        assert demo.end.outcome

    seqs = [step.seq for step in demo.steps]
    assert seqs[0] == 1 and seqs == sorted(set(seqs))
    ids = [step.event_id for step in demo.steps]
    assert all(ids) and len(set(ids)) == len(ids)
    stamps = [step.timestamp for step in demo.steps]
    assert stamps == sorted(stamps) and stamps[0] >= s.started_at and stamps[-1] < WINDOW[1]
    assert all(step.duration_ms is not None for step in demo.steps)

    seen: dict[str, StepEvent] = {}
    calls: dict[str, StepEvent] = {}
    for step in demo.steps:
        if is_model_step(step):
            assert step.model and step.tokens_in and step.tokens_out and step.cost_usd is not None, f"{name} seq {step.seq}"
        else:
            assert step.tokens_in is None and step.cost_usd is None, f"{name} seq {step.seq}: tokens on a non-model step"
        if step.status == "ok":
            assert step.error_class is None
        else:
            assert step.error_class, f"{name} seq {step.seq}: {step.status} without error_class"
        if step.type in ("tool_call", "tool_result"):
            assert step.tool_name and step.tool_call_id and step.tool_args is not None
        if step.type == "tool_call":
            assert step.tool_call_id not in calls
            calls[step.tool_call_id] = step
        if step.type == "tool_result":
            call = calls.get(step.tool_call_id)
            assert call is not None, f"{name} seq {step.seq}: result without a call"
            assert (call.tool_name, call.tool_args, call.retry) == (step.tool_name, step.tool_args, step.retry)
            assert isinstance(step.content, str) and step.content
        if step.type in ("think", "decision", "input", "observation", "error", "span"):
            assert step.content, f"{name} seq {step.seq}: empty content"
        if step.parent_id is not None:
            parent = seen[step.parent_id]  # parents come first
            if step.retry:
                assert parent.type in ("tool_call", "error")
            else:
                assert parent.type == "span"
        if step.context is not None:
            assert step.type == "think"
            assert step.context and all(set(m) == {"role", "content"} for m in step.context)
            assert step.context[0]["role"] == "system" and step.context[-1]["role"] in ("user", "tool")
        seen[step.event_id] = step


def test_dimensions_have_variety():
    sessions = [load(name).session for name in FILES]
    models = {s.model for s in sessions}
    assert {"gpt-4o", "gpt-4o-mini", "claude-sonnet-4"} <= models
    assert any(m.startswith("ollama/") for m in models)
    assert {s.environment for s in sessions} == {"prod", "staging", "dev"}
    assert len({s.agent_version for s in sessions}) >= 3
    assert len({s.agent_id for s in sessions}) >= 10
    days = {s.started_at.date() for s in sessions}
    assert len(days) >= 8
    statuses = [load(name).end.status if load(name).end else None for name in FILES]
    assert statuses.count("failed") >= 3 and statuses.count(None) == 1
    with_context = [name for name in FILES if any(step.context for step in load(name).steps)]
    assert len(with_context) >= 4


def test_no_secrets_in_demo_content():
    patterns = [
        rb"sk-[A-Za-z0-9_-]{8,}",
        rb"AKIA[0-9A-Z]{12,}",
        rb"gh[pousr]_[A-Za-z0-9]{20,}",
        rb"xox[abpr]-",
        rb"eyJ[A-Za-z0-9_-]{10,}\.",
        rb"-----BEGIN",
        rb"(?i)bearer\s+[A-Za-z0-9._-]{8,}",
        rb"(?i)(password|passwd|secret|api_key|apikey|authorization|cookie|access_token)\\?\"?\s*[:=]",
        rb"://[^/\s\"]+:[^/\s\"@]+@",
    ]
    for name in FILES:
        raw = load(name).raw
        for pattern in patterns:
            assert not re.search(pattern, raw), f"{name} matches {pattern!r}"
        assert all(step.redacted == 0 for step in load(name).steps)


# -- the situations the runs were made for ------------------------------------------------


def test_refund_run():
    spec = EXPECTED["refund"]
    demo = load(spec["file"])
    assert 12 <= len(demo.steps) <= 20
    first = demo.steps[0]
    assert first.type == "input" and "refund" in first.content and "NW-238841" in first.content
    tools = [s.tool_name for s in demo.steps if s.type == "tool_call"]
    assert tools[:2] == ["get_order", "search_policy"] and "issue_refund" in tools
    approval = demo.at(spec["approval_seq"])
    assert approval.type == "input" and approval.metadata["approval"] is True
    refund = next(s for s in demo.steps if s.tool_name == "issue_refund" and s.type == "tool_call")
    assert refund.seq > approval.seq and refund.tool_args["approval_id"] == approval.metadata["approval_id"]
    assert demo.steps[-1].type == "decision" and "RF-90412" in demo.steps[-1].content
    assert all(s.status == "ok" for s in demo.steps)
    assert demo.steps[1].context[0]["role"] == "system"
    assert demo.end.status == "succeeded"


def test_coding_run_fails_three_cycles_after_a_bad_read():
    spec = EXPECTED["coding_failure"]
    demo = load(spec["file"])
    culprit = demo.at(spec["culprit_seq"])
    # the culprit looks fine: a successful read, no flag on it
    assert culprit.type == "tool_result" and culprit.tool_name == "read_file" and culprit.status == "ok"
    assert culprit.metadata is None and culprit.error_class is None
    # ... but its content contradicts what search_code found just before
    search = next(s for s in demo.steps if s.type == "tool_result" and s.tool_name == "search_code")
    assert search.seq < culprit.seq
    assert "format_price(amount: Decimal, *" in search.content and "rounding" in search.content
    assert "def format_price(amount, locale=" in culprit.content and "rounding" not in culprit.content
    # the agent builds on it: rewrites the file without the rounding parameter
    write = next(s for s in demo.steps if s.type == "tool_call" and s.tool_name == "write_file")
    assert culprit.seq < write.seq < spec["first_error_seq"]
    assert "rounding" not in write.tool_args["content"]
    errors = [s for s in demo.steps if s.status == "error"]
    first = errors[0]
    assert first.seq == spec["first_error_seq"]
    assert first.type == "tool_result" and first.tool_name == "run_tests" and first.error_class == spec["error_class"]
    assert "unexpected keyword argument 'rounding'" in first.content
    cycle = cycles(demo.steps)
    assert cycle[first.seq] - cycle[culprit.seq] == spec["cycles_between"]
    assert demo.steps[-1].type == "error" and len(errors) >= 3
    assert demo.end.status == "failed" and demo.end.error_class == spec["error_class"]


def test_retries_run():
    spec = EXPECTED["retries"]
    demo = load(spec["file"])
    calls = [s for s in demo.steps if s.type == "tool_call" and s.tool_name == "http_get"]
    results = [s for s in demo.steps if s.type == "tool_result" and s.tool_name == "http_get"]
    assert [c.retry for c in calls] == list(range(spec["tool_retries"] + 1))
    assert len({orjson.dumps(c.tool_args, option=orjson.OPT_SORT_KEYS) for c in calls}) == 1
    assert all(c.parent_id == calls[0].event_id for c in calls[1:])
    assert [(r.status, r.error_class) for r in results] == [("error", "TimeoutError")] * spec["tool_retries"] + [("ok", None)]
    assert [r.retry for r in results] == [c.retry for c in calls]
    limit = demo.at(spec["rate_limit_seq"])
    assert limit.type == "error" and limit.error_class == "RateLimitError" and limit.status == "error"
    after = demo.at(spec["rate_limit_seq"] + 1)
    assert after.type == "think" and after.retry == 1 and after.parent_id == limit.event_id and after.status == "ok"
    assert demo.end.status == "succeeded"


def test_multi_agent_spans():
    spec = EXPECTED["multi_agent"]
    demo = load(spec["file"])
    by_id = demo.by_id()
    spans = {s.agent_id: s for s in demo.steps if s.type == "span"}
    assert sorted(spans) == sorted(spec["agents"])
    root = spans["orchestrator"]
    assert root.parent_id is None
    assert spans["researcher"].parent_id == root.event_id and spans["writer"].parent_id == root.event_id
    for step in demo.steps:
        if step.type == "input":
            continue
        if step.type != "span":
            assert by_id[step.parent_id].type == "span"
            assert step.agent_id == by_id[step.parent_id].agent_id  # each agent signs its own steps
        # every step hangs under the orchestrator
        node = step
        while node.parent_id:
            node = by_id[node.parent_id]
        assert node.event_id == root.event_id
        if step.type == "span":  # a span covers its children
            kids = [s for s in demo.steps if s.parent_id == step.event_id]
            assert kids
            end = step.timestamp.timestamp() * 1000 + step.duration_ms
            assert all(k.timestamp.timestamp() * 1000 + k.duration_ms <= end + 1 for k in kids)
    for agent in ("researcher", "writer"):
        kids = [s for s in demo.steps if s.parent_id == spans[agent].event_id]
        assert {"think", "tool_call", "tool_result", "decision"} <= {k.type for k in kids}
    assert len({s.model for s in demo.steps if s.model}) >= 2


def test_fallback_block_where_the_agent_takes_over():
    spec = EXPECTED["fallback_agent"]
    demo = load(spec["file"])
    failed = demo.at(spec["failed_script_seq"])
    assert failed.agent_id == "script" and failed.type == "tool_result" and failed.status == "error"
    block = demo.by_id()[failed.parent_id]
    assert block.type == "span"
    assert block.metadata == {"block": "fallback", "task": block.metadata["task"], "agent_invoked": True, "success": True}
    children = [s for s in demo.steps if s.parent_id == block.event_id]
    scripted = [s for s in children if s.seq <= failed.seq]
    agent = [s for s in children if s.seq > failed.seq]
    assert all(s.agent_id == "script" and s.model is None and s.tokens_in is None for s in scripted)
    assert [s.status for s in scripted] == ["ok"] * (len(scripted) - 1) + ["error"]
    assert agent and all(s.agent_id == demo.session.agent_id for s in agent)
    assert {"think", "tool_call", "tool_result", "decision"} <= {s.type for s in agent}
    assert all(s.status == "ok" for s in agent)
    # the steps right after the failure are the agent's, still inside the block
    assert demo.at(failed.seq + 1) in agent and demo.at(failed.seq + 1).type == "think"
    other_blocks = [s for s in demo.steps if s.type == "span" and s is not block]
    assert other_blocks and all(b.metadata["agent_invoked"] is False for b in other_blocks)
    assert demo.end.status == "succeeded"


def test_fallback_block_where_the_script_succeeds():
    demo = load(EXPECTED["fallback_script_only"]["file"])
    blocks = [s for s in demo.steps if s.type == "span"]
    assert len(blocks) == 1
    (block,) = blocks
    assert block.metadata["block"] == "fallback" and block.metadata["task"]
    assert block.metadata["agent_invoked"] is False and block.metadata["success"] is True
    children = [s for s in demo.steps if s.parent_id == block.event_id]
    assert len(children) == len(demo.steps) - 1
    assert all(s.agent_id == "script" and s.status == "ok" and s.model is None for s in children)
    assert demo.end.status == "succeeded"


def test_long_run():
    spec = EXPECTED["long_run"]
    demo = load(spec["file"])
    assert len(demo.steps) >= spec["min_steps"]
    assert len(demo.raw) <= spec["max_bytes"]
    assert demo.end.status == "succeeded"
    cycle = cycles(demo.steps)
    assert max(cycle.values()) + 1 >= 500
    errors = [s for s in demo.steps if s.status == "error"]
    assert 5 <= len(errors) <= 100
    assert {e.error_class for e in errors} == {"TimeoutError", "ValidationError"}
    retried = [s for s in demo.steps if s.retry]
    assert retried and all(s.tool_name == "migrate_account" for s in retried)
    assert demo.steps[-1].type == "decision"


def test_running_run():
    demo = load(EXPECTED["running"]["file"])
    assert demo.end is None
    last = demo.steps[-1]
    assert last.type == "tool_call"
    assert not any(s.type == "tool_result" and s.tool_call_id == last.tool_call_id for s in demo.steps)
    latest_elsewhere = max(load(n).steps[-1].timestamp for n in FILES if n != demo.name)
    assert demo.session.started_at > latest_elsewhere
    assert last.timestamp < WINDOW[1]


def test_pair_of_runs_diverges_at_the_expected_step():
    spec = EXPECTED["divergence"]
    a, b = (load(name) for name in spec["files"])
    k = spec["divergence_seq"]
    assert (a.session.name, a.session.workflow) == (b.session.name, b.session.workflow)
    assert a.session.session_id != b.session.session_id and a.session.started_at != b.session.started_at

    def comparable(step: StepEvent) -> dict:
        return step.model_dump(exclude={"session_id", "timestamp"})

    before_a = [comparable(s) for s in a.steps if s.seq < k]
    before_b = [comparable(s) for s in b.steps if s.seq < k]
    assert len(before_a) == k - 1 and before_a == before_b
    at_a, at_b = a.at(k), b.at(k)
    assert at_a.type == at_b.type == "tool_call" and at_a.tool_name == at_b.tool_name == "search_flights"
    assert at_a.tool_args != at_b.tool_args
    assert [a.end.status, b.end.status] == spec["statuses"]


def test_browser_run_records_state():
    demo = load(EXPECTED["browser_state"]["file"])
    states = [s.metadata["state"] for s in demo.steps if s.metadata and "state" in s.metadata]
    assert len(states) >= 4
    assert all(set(st) == {"goal", "memory", "page_summary"} and all(st.values()) for st in states)
    assert len({st["goal"] for st in states}) == 1
    assert len({st["memory"] for st in states}) >= 3 and len({st["page_summary"] for st in states}) >= 3
    assert any(s.type == "observation" for s in demo.steps)


def test_blocked_step_and_human_approval():
    spec = EXPECTED["blocked"]
    blocked = [(name, s) for name in FILES for s in load(name).steps if s.status == "blocked"]
    assert len(blocked) == 1
    name, step = blocked[0]
    assert (name, step.seq) == (spec["file"], spec["blocked_seq"])
    assert step.type == "tool_result" and "denied by approver" in step.content
    approvals = [s for name in FILES for s in load(name).steps if s.metadata and s.metadata.get("approval") is True]
    assert len(approvals) == 1 and approvals[0].type == "input"


def test_gap_only_where_expected():
    spec = EXPECTED["gap"]
    for name in FILES:
        seqs = [s.seq for s in load(name).steps]
        missing = sorted(set(range(1, seqs[-1] + 1)) - set(seqs))
        assert missing == (spec["missing_seqs"] if name == spec["file"] else []), name

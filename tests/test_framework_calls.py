"""Each model and tool call of every framework capture, read as the run went: the tools with the arguments the
model asked for, each tool's result as text, and the context at each model step equal to the messages that
model call received (`run.model_calls` in the capture's manifest, written by the scripted model server).

What the spans do not carry stays empty and is marked (`metadata.not_recorded`), never guessed or shown as
an empty value: AutoGen's own spans and CrewAI's wrappers have no model calls, openai-v2's default
conventions record no message content, and its `events` mode puts the content in /v1/logs.
"""

from __future__ import annotations

import gzip
import importlib.util
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from framework_captures import FRAMEWORKS, ORDERS, Posted, by_order, captures, manifest, post, requests

from replay_core.ingest.formats import otel
from replay_core.storage.store import Store
from replay_core.understand.snapshot import state_at
from replay_core.understand.timeline import open_timeline
from replay_core.whatif.recording import Recording

_SERVERS = Path(__file__).parents[1] / "scripts" / "capture_frameworks" / "servers.py"
_spec = importlib.util.spec_from_file_location("capture_servers", _SERVERS)
servers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(servers)  # stdlib only: how the scripted model counted the tool results it was sent

RESULTS = {"get_weather": "Sunny, 21 °C in Paris", "get_time": "14:05 (CET) in Paris"}
ERROR_TEXT = "time service unavailable for Paris"
ANSWER_TOOLS = {"smolagents": {"final_answer"}}  # a framework's own tool for its answer, not one of the script's
NO_MODEL_SPANS = {("autogen", "own"), ("crewai", "wrappers")}  # the framework's own spans, without the model calls
NO_CONTENT = {("openai-v2", "default"), ("openai-v2", "events")}  # spans without message content (events: in /v1/logs)
NO_TOOL_IO = {("autogen", "own")}  # tool spans with neither arguments nor results
LATER_RESULTS = {"autogen-openllmetry-slow", "logfire-openai-slow"}  # tool spans without output, read from the next batch


def _ordered_params() -> list:
    return [by_order(order, name, order) for name in captures() for order in ORDERS]


@dataclass(frozen=True)
class Read:
    """What posting one capture in one order stored, read once and shared by the tests (which only read it)."""

    steps: list  # the run's steps (set-up traces aside)
    posted: Posted
    every_step: list  # every session's steps
    shown: dict  # per model step's seq: its Snapshot at that step
    replayed: dict  # per model step's seq: the messages a replay from there sends first


def _read(store, name: str, order: str = "captured") -> Read:
    posted = post(store, name, order, seed=7)
    by_session = {sid: store.load_steps(sid) for sid in store.session_ids()}
    runs = [sid for sid, steps in by_session.items() if any(s.type != "span" for s in steps)]
    assert len(runs) <= 1, runs
    steps = by_session[runs[0]] if runs else []
    shown, replayed = {}, {}
    if runs:
        timeline = open_timeline(store, runs[0])
        for step in (s for s in steps if s.type == "think"):
            shown[step.seq] = state_at(timeline, step.seq, store)
            replayed[step.seq] = Recording(timeline, store, step.seq, step.seq).messages([])
    every = [s for steps_of in by_session.values() for s in steps_of]
    return Read(steps, posted, every, shown, replayed)


@pytest.fixture(scope="module")
def read(tmp_path_factory, sqlite_template):
    """`read(name, order)`: the capture posted to a SQLite store of its own, once per module."""
    done: dict[tuple[str, str], Read] = {}

    def get(name: str, order: str = "captured") -> Read:
        if (name, order) not in done:
            path = tmp_path_factory.mktemp("capture") / "replay.db"
            shutil.copyfile(sqlite_template, path)
            store = Store(f"sqlite:///{path}")
            try:
                done[(name, order)] = _read(store, name, order)
            finally:
                store.close()
        return done[(name, order)]

    return get


def _kind(name: str) -> tuple[str, str]:
    m = manifest(name)
    return m["framework"], m["mode"]


def _content_in_spans(name: str, posted) -> bool:
    kind = _kind(name)
    return kind not in NO_CONTENT or (kind == ("openai-v2", "events") and not posted.unsent)


def _tool_io_in_spans(name: str, posted) -> bool:
    return _content_in_spans(name, posted) and _kind(name) not in NO_TOOL_IO


def _text(content) -> str:
    return servers._text(content)


@pytest.mark.parametrize("name", captures())
def test_tool_calls_carry_the_arguments_the_model_asked_for(read, name):
    run = read(name)
    steps, posted = run.steps, run.posted
    skip = ANSWER_TOOLS.get(manifest(name)["framework"], set())
    calls = [s for s in steps if s.type == "tool_call" and s.tool_name not in skip]
    expected = manifest(name)["outcome"]["tool_calls"]
    assert [c.tool_name for c in calls] == [t["tool"] for t in expected]
    if _tool_io_in_spans(name, posted):
        assert [c.tool_args for c in calls] == [t["args"] for t in expected]
    else:  # not in the spans: left empty and said so
        assert all(c.tool_args is None and c.metadata["not_recorded"] == ["tool_args"] for c in calls)


@pytest.mark.parametrize("name", sorted(LATER_RESULTS))
def test_a_later_batch_restores_a_result_its_model_input_holds(name):
    """The reader's half of restoring a result across batches: the tool span's batch leaves the result waiting
    in the ledger, marked not recorded; the next batch, whose model call received it, replaces that step."""
    prior: dict[str, list[otel.PriorCall]] = {}
    restored: dict[str, str] = {}
    for request in requests(name):
        body = gzip.decompress(request.body) if request.content_encoding == "gzip" else request.body
        ledger = otel.Ledger(prior={t: list(calls) for t, calls in prior.items()})
        items = list(otel.events_from_spans(otel.spans_from_otlp(body, request.content_type), ledger))
        for step in (i for i in items if getattr(i, "type", None) == "tool_result"):
            assert step.content is not None or step.metadata["not_recorded"] == ["content"]
        for replace in (i for i in items if isinstance(i, otel.Replace)):
            assert replace.step.event_id == replace.old_event_id and replace.step.metadata["content_from"]
            restored[replace.step.tool_name] = replace.step.content
        for call in ledger.consumed:
            prior[call.trace_id].remove(call)
        for call in ledger.opened:
            prior.setdefault(call.trace_id, []).append(call)
    assert restored == RESULTS
    assert not any(prior.values())  # nothing left waiting


@pytest.mark.parametrize(("name", "order"), _ordered_params())
def test_each_tool_result_is_its_text(read, name, order):
    run = read(name, order)
    steps, posted = run.steps, run.posted
    m = manifest(name)
    skip = ANSWER_TOOLS.get(m["framework"], set())
    results = [s for s in steps if s.type == "tool_result" and s.tool_name not in skip]
    assert sorted(r.tool_name for r in results) == sorted(t["tool"] for t in m["outcome"]["tool_calls"])  # any order
    recorded = _tool_io_in_spans(name, posted)
    received = {m["tool_call_id"]: m["content"] for shown in run.shown.values() for m in shown.context if m["role"] == "tool"}
    for result in results:
        failed = m["variant"] == "tool-error" and result.tool_name == "get_time"
        if failed:  # the error the tool raised, or the text the framework handed the model in its place
            assert result.status == "error"
            assert ERROR_TEXT in result.content or result.content == received.get(result.tool_call_id), result.content
        elif recorded:
            assert (result.status, result.content) == ("ok", RESULTS[result.tool_name])
        else:
            assert result.content is None and result.metadata["not_recorded"] == ["content"]
    for result in (s for s in steps if s.type == "tool_result" and s.tool_name in skip):
        assert result.content == m["outcome"]["final_output"]


@pytest.mark.parametrize("name", captures())
def test_the_context_at_each_model_step_is_what_that_call_received(read, name):
    run = read(name)
    calls = manifest(name)["run"]["model_calls"]
    thinks = [s for s in run.steps if s.type == "think"]
    if _kind(name) in NO_MODEL_SPANS:
        assert thinks == []  # no model call is claimed where the spans hold none
        return
    assert len(thinks) == len(calls)
    for step, call in zip(thinks, calls, strict=True):
        shown = run.shown[step.seq]
        if not _content_in_spans(name, run.posted):
            assert step.context is None and step.metadata["not_recorded"] == ["context"]
            assert shown.context_source == "rebuilt"  # said to be rebuilt from the steps, not recorded
            continue
        messages = shown.context
        assert shown.context_source == "recorded", (step.seq, shown.agent.note())
        assert [m["role"] for m in messages] == call["roles_in"], step.seq
        assert _text(messages[-1].get("content"))[:120] == call["last_message_start"]
        assert len(servers._tool_results(messages)) == call["tool_results_seen"]
        assert all(isinstance(m.get("content"), str) for m in messages if m["role"] == "tool")
        assert run.replayed[step.seq] == messages  # what a replay from there sends


@pytest.mark.parametrize("name", captures())
def test_nothing_absent_is_shown_as_empty(read, name):
    """A step whose spans lacked a field has it empty and listed in `not_recorded`; none says "null" or "None"."""
    for step in read(name).every_step:
        assert step.content not in ("null", "None", "")
        missing = (step.metadata or {}).get("not_recorded", [])
        for field in missing:
            assert getattr(step, field) is None
        if step.type == "tool_result" and step.content is None:
            assert missing == ["content"]
        if step.type == "tool_call" and step.tool_args is None:
            assert missing == ["tool_args"]


@pytest.mark.parametrize(
    "name",
    [
        "smolagents-openinference-tool-error",
        "langgraph-openinference-ok",
        "autogen-openllmetry-ok",
        "pydantic-ai-v5-ok",
        "logfire-openai-slow",  # results waiting across batches in otlp_open_calls
    ],
)
def test_calls_read_the_same_on_both_databases(store, name):
    run = _read(store, name)
    calls = [(s.tool_name, s.tool_args) for s in run.steps if s.type == "tool_call" and s.tool_name != "final_answer"]
    assert calls == [(t["tool"], t["args"]) for t in manifest(name)["outcome"]["tool_calls"]]
    roles = [[m["role"] for m in shown.context] for shown in run.shown.values()]
    assert roles == [c["roles_in"] for c in manifest(name)["run"]["model_calls"]]


def test_every_capture_is_checked():
    assert len(captures()) == 51 and FRAMEWORKS.is_dir()


@pytest.mark.parametrize(
    "name", [n for n in captures() if n.startswith(("logfire-openai-", "openai-agents-")) and not n.endswith("-slow")]
)
def test_agent_model_and_tool_spans_read_as_such(read, name):
    """Logfire's spans named by template (`execute_tool {tool_name}`) and OpenAI Agents' nested workflow spans:
    model and tool steps under the agent's step, which names them."""
    steps = read(name).steps
    by_id = {s.event_id: s for s in steps}

    def chain(step):
        while step.parent_id in by_id:
            step = by_id[step.parent_id]
            yield step

    agent_steps = [s for s in steps if s.content in ("invoke_agent travel_assistant", "travel_assistant")]
    assert len(agent_steps) == 1 and agent_steps[0].type == "span" and agent_steps[0].agent_id == "travel_assistant"
    assert not any("{" in (s.content or "") for s in steps if s.type == "span")  # no template left unfilled
    work = [s for s in steps if s.type in ("think", "tool_call", "tool_result")]
    assert {s.type for s in work} == {"think", "tool_call", "tool_result"}
    for step in work:
        assert step.agent_id == "travel_assistant"
        assert any(a in agent_steps for a in chain(step)), step.seq


@pytest.mark.parametrize(
    ("name", "raw_input", "raw_output"),
    [
        ("langgraph-openinference-ok", "Paris", '"type": "tool"'),
        ("smolagents-openinference-ok", '"sanitize_inputs_outputs": true', None),
    ],
)
def test_what_the_tool_span_recorded_is_kept_beside_what_was_read(read, name, raw_input, raw_output):
    """Arguments taken from the model's call, or a result taken out of a serialised message: the span's own
    input and output stay in the step's metadata."""
    steps = read(name).steps
    call = next(s for s in steps if s.type == "tool_call" and s.tool_name == "get_weather")
    assert call.tool_args == {"city": "Paris"}
    kept = call.metadata["attributes"]
    assert raw_input in kept["input.value"]
    if raw_output:
        assert raw_output in kept["output.value"]
    else:
        assert "output.value" not in kept  # a plain result, read as it is

"""LangChain importer on run trees that langchain-core itself records.

A small tool-calling agent runs for real (a fake chat model from langchain_core, real
`@tool`s, one of which raises) under langchain-core's `RunCollectorCallbackHandler`;
the collected runs are written the two ways LangSmith holds them — nested
`child_runs` (langsmith's `Run` read schema) and flat runs with `parent_run_id` (what
the tracer posts) — and imported with format auto-detection.
`python tests/test_format_langchain_real.py` rewrites the committed fixture.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler
from langsmith import schemas

from replay_core.ingest.pipeline import import_file

FIXTURE = FIXTURES / "langchain/langchain_core_real_run.json"
MODEL = "fake-gpt-4o-mini"
QUESTION = "What is 17 * 23, and the weather in Canberra?"
ANSWER = "17 * 23 = 391; the weather service did not answer."


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@tool
def weather(city: str) -> str:
    """Current weather in a city."""
    raise TimeoutError(f"weather service timed out for {city}")


@tool
def read_file(path: str) -> str:
    """Read a local file."""
    raise PermissionError(f"not allowed to read {path}")


TOOLS = {t.name: t for t in (multiply, weather, read_file)}


def _agent(replies: list[AIMessage]) -> RunnableLambda:
    """A tool-calling loop: a timed-out tool is told to the model, any other tool error ends the run."""
    model = FakeMessagesListChatModel(responses=replies).bind(model=MODEL)

    def agent(question: str) -> str:
        messages = [HumanMessage(question)]
        while True:
            reply = model.invoke(messages)
            messages.append(reply)
            if not reply.tool_calls:
                return reply.content
            for call in reply.tool_calls:
                try:
                    messages.append(TOOLS[call["name"]].invoke(call))
                except TimeoutError as exc:
                    messages.append(ToolMessage(f"TimeoutError: {exc}", tool_call_id=call["id"], status="error"))

    return RunnableLambda(agent, name="agent")


def traced_runs() -> list:
    """Root runs of two traces: an answered question and a run that dies on a tool error."""
    collector = RunCollectorCallbackHandler()
    answered = _agent(
        [
            AIMessage(
                "",
                tool_calls=[
                    {"name": "multiply", "args": {"a": 17, "b": 23}, "id": "call_mul_1"},
                    {"name": "weather", "args": {"city": "Canberra"}, "id": "call_wx_1"},
                ],
                usage_metadata={"input_tokens": 52, "output_tokens": 31, "total_tokens": 83},
            ),
            AIMessage(ANSWER, usage_metadata={"input_tokens": 120, "output_tokens": 14, "total_tokens": 134}),
        ]
    )
    answered.invoke(QUESTION, config={"callbacks": [collector], "tags": ["demo"]})
    failing = _agent(
        [AIMessage("Reading it.", tool_calls=[{"name": "read_file", "args": {"path": "/etc/shadow"}, "id": "call_rf_1"}])]
    )
    with pytest.raises(PermissionError):
        failing.invoke("Show me /etc/shadow", config={"callbacks": [collector]})
    return collector.traced_runs


def nested(tree) -> dict:
    """A run as LangSmith's read schema holds it, children nested."""

    def convert(node) -> schemas.Run:
        kids = [convert(c) for c in node.child_runs]
        return schemas.Run(**node.model_dump(), child_runs=kids, child_run_ids=[k.id for k in kids] or None)

    return convert(tree).model_dump(mode="json")


def flat(tree) -> list[dict]:
    """A run and its descendants as separate records linked by `parent_run_id`."""
    return [tree.model_dump(mode="json"), *(r for c in tree.child_runs for r in flat(c))]


def _shape(store, sid: str) -> list[tuple]:
    return [
        (s.type, s.tool_name, s.tool_args, s.tool_call_id, s.status, s.error_class, s.content, s.model, s.tokens_in, s.tokens_out)
        for s in store.load_steps(sid)
    ]


ANSWERED = [
    ("span", None, None, None, "ok", None, "agent", None, None, None),
    ("think", None, None, None, "ok", None, "", MODEL, 52, 31),
    ("tool_call", "multiply", {"a": 17, "b": 23}, "call_mul_1", "ok", None, None, None, None, None),
    ("tool_call", "weather", {"city": "Canberra"}, "call_wx_1", "ok", None, None, None, None, None),
    ("tool_result", "multiply", None, "call_mul_1", "ok", None, "391", None, None, None),
    (
        "tool_result",
        "weather",
        None,
        "call_wx_1",
        "error",
        "TimeoutError",
        "TimeoutError('weather service timed out for Canberra')",
        None,
        None,
        None,
    ),
    ("decision", None, None, None, "ok", None, ANSWER, MODEL, 120, 14),
]
FAILED = [
    ("span", None, None, None, "error", "PermissionError", "agent", None, None, None),
    ("think", None, None, None, "ok", None, "Reading it.", MODEL, None, None),
    ("tool_call", "read_file", {"path": "/etc/shadow"}, "call_rf_1", "ok", None, None, None, None, None),
    (
        "tool_result",
        "read_file",
        None,
        "call_rf_1",
        "error",
        "PermissionError",
        "PermissionError('not allowed to read /etc/shadow')",
        None,
        None,
        None,
    ),
]


@pytest.mark.parametrize("layout", ["nested", "flat"])
def test_langchain_core_runs_import_exactly(store, tmp_path, layout):
    roots = traced_runs()
    doc = [nested(r) for r in roots] if layout == "nested" else [r for root in roots for r in flat(root)]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(doc))
    report = import_file(store, path)
    assert report.files[0]["format"] == "langchain"
    assert report.sessions == [str(r.trace_id) for r in roots]
    answered, failed = report.sessions
    assert _shape(store, answered) == ANSWERED
    assert _shape(store, failed) == FAILED
    steps = store.load_steps(answered)
    assert [s.event_id for s in steps[:2]] == [answered, str(roots[0].child_runs[0].id)]
    assert {s.parent_id for s in steps[1:]} == {answered} and steps[0].parent_id is None
    assert "Traceback (most recent call last)" in steps[5].metadata["error"]
    assert store.step_context(answered, steps[1].event_id) == [f"Human: {QUESTION}"]
    session = store.get_session(answered)
    assert (session["status"], session["outcome"], session["model"], session["tags"]) == ("succeeded", ANSWER, MODEL, ["demo"])
    assert (session["tokens_in"], session["tokens_out"], session["errors"]) == (172, 45, 1)
    session = store.get_session(failed)
    assert (session["status"], session["error_class"], session["outcome"]) == (
        "failed",
        "PermissionError",
        "PermissionError('not allowed to read /etc/shadow')",
    )


def test_committed_fixture_is_what_langchain_core_writes(store):
    """The committed file imports to the same steps as a fresh run, so it has not drifted from the library."""
    report = import_file(store, FIXTURE)
    assert report.files[0]["format"] == "langchain"
    assert [_shape(store, sid) for sid in report.sessions] == [ANSWERED, FAILED]
    fresh = [nested(r) for r in traced_runs()]
    written = json.loads(FIXTURE.read_bytes())
    assert [sorted(r) for r in written] == [sorted(r) for r in fresh]
    assert written[0]["child_runs"][0]["extra"]["metadata"]["lc_versions"] == {"langchain-core": "1.8.1"}


if __name__ == "__main__":
    Path(FIXTURE).write_text(json.dumps([nested(r) for r in traced_runs()], indent=1) + "\n")

"""The MCP server, through the official SDK's own client: in process (every tool on the demo runs, answers
checked against the library's own), over stdio (`agent-replay mcp` as a process) and over streamable
HTTP at /mcp on a served app with API tokens and roles, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import httpx2
import pytest
from test_recorder import TOKEN, Served

from replay_core.mcp.answers import DEFAULT_CHARS
from replay_core.mcp.server import build
from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.storage.filters import SessionFilter
from replay_core.understand.compare import compare
from replay_core.understand.explain import explain
from replay_core.understand.snapshot import state_at
from replay_core.understand.timeline import open_timeline

FAILED_FLIGHT, GOOD_FLIGHT = "demo-09-flight-bos-sfo-b", "demo-08-flight-bos-sfo-a"
SQLITE_ONLY = pytest.mark.parametrize("store", ["sqlite"], indirect=True)


def mcp_client(target, **options):
    """The SDK's client; the SDK is imported here, not at collection: every pytest-xdist worker collects
    this module, and the import takes most of a second."""
    from mcp import Client

    return Client(target, **options)


def call(server_or_target, tool: str, args: dict | None = None, **client_options):
    """One tool call through the SDK's client, on a fresh connection."""

    async def go():
        async with mcp_client(server_or_target, **client_options) as client:
            return await client.call_tool(tool, args or {})

    return asyncio.run(go())


def text(result) -> str:
    return result.content[0].text


@SQLITE_ONLY
def test_search_runs_lists_what_the_store_lists_with_paging(demo):
    srv = build(lambda: demo)
    failed = demo.list_sessions(SessionFilter(status="failed"), limit=100)
    result = call(srv, "search_runs", {"status": "failed", "limit": 2})
    assert not result.is_error
    assert [r["id"] for r in result.structured_content["runs"]] == [r["id"] for r in failed[:2]]
    assert result.structured_content["total"] == len(failed) > 2
    assert "call search_runs again with offset=2" in text(result)
    rest = call(srv, "search_runs", {"status": "failed", "limit": 50, "offset": 2})
    assert [r["id"] for r in rest.structured_content["runs"]] == [r["id"] for r in failed[2:]]
    found = call(srv, "search_runs", {"query": "BOS"})
    assert FAILED_FLIGHT in [r["id"] for r in found.structured_content["runs"]]
    bad = call(srv, "search_runs", {"status": "exploded"})
    assert bad.is_error and "status: expected one of" in text(bad)


def test_get_run_tells_asked_did_ended_why(demo):
    srv = build(lambda: demo)
    result = call(srv, "get_run", {"run_id": FAILED_FLIGHT, "first_steps": 3})
    tl = open_timeline(demo, FAILED_FLIGHT)
    body = text(result)
    assert f"Asked: {tl.first_input().content}" in body
    assert "Ended: failed" in body and explain(demo, FAILED_FLIGHT).cause_line() in body
    assert [s["seq"] for s in result.structured_content["steps"]] == [1, 2, 3]
    assert f"call get_steps with run_id={FAILED_FLIGHT!r}, start=4" in body


@SQLITE_ONLY
def test_steps_window_and_query(demo):
    srv = build(lambda: demo)
    around = call(srv, "get_steps", {"run_id": FAILED_FLIGHT, "around": 6, "count": 3})
    assert [s["seq"] for s in around.structured_content["steps"]] == [5, 6, 7]
    found = call(srv, "get_steps", {"run_id": FAILED_FLIGHT, "query": "search_flights"})
    seqs = [s["seq"] for s in found.structured_content["steps"]]
    tl = open_timeline(demo, FAILED_FLIGHT)
    assert seqs == [s.seq for s in tl.steps if "search_flights" in (s.content or "") or s.tool_name == "search_flights"]
    out = call(srv, "get_steps", {"run_id": FAILED_FLIGHT, "start": 999})
    assert out.is_error and "has no step 999: its steps run 1–9" in text(out)


def test_state_at_step_is_the_state_view(demo):
    srv = build(lambda: demo)
    result = call(srv, "get_state_at_step", {"run_id": FAILED_FLIGHT, "step": 6})
    snap = state_at(open_timeline(demo, FAILED_FLIGHT), 6, demo)
    got = result.structured_content
    assert [m["message"] for m in got["context"]] == snap.context
    assert [m["origin"] for m in got["context"]] == snap.agent.origins
    assert got["totals"] == snap.totals
    assert snap.context[0]["content"][:60] in text(result)
    missing = call(srv, "get_state_at_step", {"run_id": "no-such-run", "step": 1})
    assert missing.is_error and "no run 'no-such-run'" in text(missing)


def test_explain_compare_and_similar_failures_are_the_librarys(demo):
    srv = build(lambda: demo)
    why = call(srv, "explain_failure", {"run_id": FAILED_FLIGHT})
    expected = explain(demo, FAILED_FLIGHT)
    assert [link["seq"] for link in why.structured_content["chain"]] == [link.seq for link in expected.chain]
    assert expected.cause_line() in text(why) and "Turning point: step 6" in text(why)
    ok = call(srv, "explain_failure", {"run_id": GOOD_FLIGHT})
    assert ok.is_error  # a succeeded run has nothing to explain: said, not invented

    diff = call(srv, "compare_runs", {"run_a": GOOD_FLIGHT, "run_b": FAILED_FLIGHT})
    first = compare(demo, GOOD_FLIGHT, FAILED_FLIGHT).first_divergence
    assert diff.structured_content["first_divergence"] == first.summary
    assert text(diff).startswith(f"First divergence ({first.kind}): {first.summary}")

    similar = call(srv, "find_similar_failures", {"run_id": FAILED_FLIGHT})
    assert FAILED_FLIGHT in similar.structured_content["pattern"]["runs"]
    assert "failed the same way" in text(similar)


@SQLITE_ONLY
def test_resources_and_prompts(demo):
    srv = build(lambda: demo)

    async def go():
        async with mcp_client(srv) as client:
            templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
            run = await client.read_resource(f"agent-replay://runs/{FAILED_FLIGHT}")
            step = await client.read_resource(f"agent-replay://runs/{FAILED_FLIGHT}/steps/6")
            prompts = [p.name for p in (await client.list_prompts()).prompts]
            prompt = await client.get_prompt("debug_failed_run", {"run_id": FAILED_FLIGHT})
            return templates, run, step, prompts, prompt

    templates, run, step, prompts, prompt = asyncio.run(go())
    assert templates == ["agent-replay://runs/{run_id}", "agent-replay://runs/{run_id}/steps/{step}"]
    assert run.contents[0].text.startswith(f"Run {FAILED_FLIGHT}")
    assert step.contents[0].text.startswith(f"State of {FAILED_FLIGHT} at step 6")
    assert prompts == ["debug_failed_run", "compare_with_last_good"]
    assert "explain_failure" in prompt.messages[0].content.text


@SQLITE_ONLY
def test_roles_and_audit_over_stdio_role(demo, monkeypatch):
    """Without an HTTP request the caller is the CLI's role: a viewer reads but cannot replay or share,
    and every call, refused ones included, is in the audit log under the tool's name."""
    monkeypatch.setenv("AGENT_REPLAY_CLI_ROLE", "viewer")
    srv = build(lambda: demo)
    assert not call(srv, "get_run", {"run_id": FAILED_FLIGHT}).is_error
    refused = call(srv, "replay_from_step", {"run_id": FAILED_FLIGHT, "model": "recorded", "budget_usd": 1})
    assert refused.is_error and "viewers may not launch replays" in text(refused)
    share = call(srv, "create_share_link", {"run_id": FAILED_FLIGHT})
    assert share.is_error and "viewers may not make share links" in text(share)
    lines = demo.audit_entries(limit=10)
    assert [(e["action"], e["outcome"]) for e in lines[:3]] == [
        ("mcp:create_share_link", "denied"),
        ("mcp:replay_from_step", "denied"),
        ("mcp:get_run", "ok"),
    ]


@SQLITE_ONLY
def test_replay_from_step_checks_budget_and_credentials_then_replays(demo, monkeypatch):
    from openai_server import OpenAIServer

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    srv = build(lambda: demo)
    no_key = call(srv, "replay_from_step", {"run_id": FAILED_FLIGHT, "model": "openai/gpt-4o-mini", "budget_usd": 1})
    assert no_key.is_error and "No credentials" in text(no_key) and "OPENAI_API_KEY" in text(no_key)
    for wrong in (0, -1, float("nan")):  # NaN travels as JSON null: refused by the schema, the others by the tool
        refused = call(srv, "replay_from_step", {"run_id": FAILED_FLIGHT, "model": "recorded", "budget_usd": wrong})
        assert refused.is_error and "budget_usd" in text(refused), wrong
    recorded = call(srv, "replay_from_step", {"run_id": FAILED_FLIGHT, "model": "recorded", "budget_usd": 0.01})
    assert not recorded.is_error, text(recorded)
    replayed = recorded.structured_content["replay"]
    assert demo.get_session(replayed["session"])["replay_of"] == FAILED_FLIGHT
    assert f"compare_runs run_a={FAILED_FLIGHT!r} run_b={replayed['session']!r}" in text(recorded)
    with OpenAIServer() as fake:
        fake.default = fake.text("Stopping here.")  # every turn answered the same way
        live = call(
            srv,
            "replay_from_step",
            {"run_id": FAILED_FLIGHT, "model": "openai/fake", "api_base": fake.base_url, "from_step": 8, "budget_usd": 1},
        )
        assert not live.is_error, text(live)
        assert live.structured_content["replay"]["model_calls"] == len(fake.requests) >= 1  # what it says is what it spent


@pytest.fixture(scope="module")
def long_run(tmp_path_factory):
    """A SQLite database holding one 100,000-step run."""
    from replay_core.events import SessionEvent, StepEvent
    from replay_core.ingest.pipeline import ingest
    from replay_core.storage.store import Store

    store = Store(f"sqlite:///{tmp_path_factory.mktemp('long')}/long.db")
    events: list = [SessionEvent(session_id="long", name="a very long run")]
    for i in range(50_000):
        events.append(StepEvent(session_id="long", type="think", content=f"thinking about item {i} " * 4))
        events.append(StepEvent(session_id="long", type="tool_call", tool_name="search", tool_args={"q": f"item {i}"}))
    events.append(StepEvent(session_id="long", type="think", content="a thought a megabyte long " * 40_000))
    events.append(StepEvent(session_id="long", type="tool_call", tool_name="write", tool_args={"text": "x" * 500_000}))
    ingest(store, events)
    return store


@pytest.mark.load
def test_every_answer_on_a_100000_step_run_is_bounded(long_run):
    srv = build(lambda: long_run)
    for tool, args in [
        ("get_run", {"run_id": "long", "first_steps": 500}),
        ("get_steps", {"run_id": "long", "start": 50_000, "count": 500}),
        ("get_steps", {"run_id": "long", "query": "item 4"}),
        ("get_state_at_step", {"run_id": "long", "step": 99_999}),
        ("get_state_at_step", {"run_id": "long", "step": 100_002}),
        ("get_steps", {"run_id": "long", "start": 99_990}),
        ("search_runs", {"query": "item"}),
    ]:
        result = call(srv, tool, args)
        assert not result.is_error, (tool, text(result))
        assert len(text(result)) <= DEFAULT_CHARS, tool
        assert len(json.dumps(result.structured_content)) <= 4 * DEFAULT_CHARS, tool  # the data is bounded too
        assert any(w in text(result) for w in ("more", "left out", "[cut:")) or tool == "search_runs", tool
    whole = call(
        srv, "get_steps", {"run_id": "long", "start": 100_002, "count": 1, "content_chars": 150_000, "max_chars": 200_000}
    )
    assert "[cut: 500," in text(whole) and len(text(whole)) > 100_000  # more of one step, when asked
    bigger = call(srv, "get_state_at_step", {"run_id": "long", "step": 99_999, "max_chars": 100_000})
    assert DEFAULT_CHARS < len(text(bigger)) <= 100_000
    too_big = call(srv, "get_steps", {"run_id": "long", "max_chars": 10**7})
    assert too_big.is_error and "max_chars: expected 1,000 to 200,000" in text(too_big)


def test_stdio_server_answers_as_a_process(demo):
    """`agent-replay mcp` started the way an MCP client starts it, talking over its stdin and stdout."""
    from mcp.client.stdio import StdioServerParameters

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "AGENT_REPLAY_CLI_ROLE": "viewer"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "replay_core.cli", "mcp", "--db", demo.url], env=env)
    result = call(params, "explain_failure", {"run_id": FAILED_FLIGHT})
    assert not result.is_error, text(result)
    assert "Turning point: step 6" in text(result)


VIEWER_TOKEN = "viewer-token-for-tests-0123456789"


def test_http_mcp_takes_api_tokens_and_their_roles(store, demo):
    """/mcp on a served app: no token 401, a viewer reads and is refused a replay, an editor may."""
    from mcp.client.streamable_http import streamable_http_client

    app = create_app(demo, access=Access(api_tokens=(TOKEN, VIEWER_TOKEN), token_roles=("editor", "viewer")))
    with Served(app) as base:
        assert httpx2.post(f"{base}/mcp", json={}).status_code == 401

        def as_(token: str, tool: str, args: dict):
            async def go():
                async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
                    async with mcp_client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
                        return await client.call_tool(tool, args)

            return asyncio.run(go())

        seen = as_(VIEWER_TOKEN, "search_runs", {"status": "failed"})
        assert not seen.is_error and FAILED_FLIGHT in [r["id"] for r in seen.structured_content["runs"]]
        refused = as_(VIEWER_TOKEN, "replay_from_step", {"run_id": FAILED_FLIGHT, "model": "recorded", "budget_usd": 1})
        assert refused.is_error and "viewers may not launch replays" in text(refused)
        done = as_(TOKEN, "replay_from_step", {"run_id": FAILED_FLIGHT, "model": "recorded", "budget_usd": 1})
        assert not done.is_error, text(done)
    who = {(e["action"], e["outcome"]): e["who"] for e in demo.audit_entries(limit=20)}
    assert who[("mcp:replay_from_step", "denied")] != who[("mcp:replay_from_step", "ok")]
    assert who[("mcp:replay_from_step", "denied")].startswith("api token ")


@SQLITE_ONLY
def test_a_model_driven_agent_finds_why_demo_09_failed_through_the_tools(demo):
    """An agent loop over litellm, its model the local scripted server: it is offered the MCP tools as
    function tools, calls search_runs then explain_failure, and answers from what the tools told it."""
    from openai_server import OpenAIServer

    from replay_core.whatif.provider import load_litellm

    litellm = load_litellm()
    srv = build(lambda: demo)

    def answer_from(payload: dict):
        """The scripted model: first look for failed flight runs, then ask why the first failed, then answer."""
        tool_messages = [m for m in payload["messages"] if m["role"] == "tool"]
        if not tool_messages:
            return fake.tool_calls(("search_runs", {"status": "failed", "query": "flight"}))
        if len(tool_messages) == 1:
            run_id = tool_messages[0]["content"].split("\n- ", 1)[1].split(" ·", 1)[0]
            return fake.tool_calls(("explain_failure", {"run_id": run_id}))
        explained = tool_messages[-1]["content"].splitlines()
        turning = next(line for line in explained if line.startswith("Turning point"))
        return fake.text(f"{explained[0].split(' ', 1)[0]} failed. {turning}")

    async def agent() -> tuple[str, list[str]]:
        async with mcp_client(srv) as client:
            listed = (await client.list_tools()).tools
            tools = [
                {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}
                for t in listed
            ]
            messages: list[dict] = [{"role": "user", "content": "Why did my last flight search run fail?"}]
            called = []
            for _ in range(5):
                response = await asyncio.to_thread(
                    litellm.completion, model="openai/fake", api_base=fake.base_url, api_key="x", messages=messages, tools=tools
                )
                message = response.choices[0].message
                if not message.tool_calls:
                    return message.content, called
                messages.append(message.model_dump(exclude_none=True))
                for tc in message.tool_calls:
                    called.append(tc.function.name)
                    result = await client.call_tool(tc.function.name, json.loads(tc.function.arguments))
                    messages.append({"role": "tool", "tool_call_id": tc.id, "content": result.content[0].text})
            raise AssertionError("the agent did not answer")

    with OpenAIServer() as fake:
        fake.route("fake", answer_from)
        final, called = asyncio.run(agent())
    assert called == ["search_runs", "explain_failure"]
    assert FAILED_FLIGHT in final and "step 6" in final and "2025-12-17" in final
    assert {"search_runs", "explain_failure", "get_state_at_step"} <= {t["function"]["name"] for t in fake.requests[0]["tools"]}


def test_experiment_queue_verdict_and_share_link_through_the_tools(demo, monkeypatch):
    """The tools that act, each as the role it needs: an editor runs an experiment (the run's own answers:
    no key, no cost) and makes a link that opens; a reviewer holds a queue item and its verdict is saved
    under the reviewer's own identity."""
    from replay_core.team import queues, shares
    from replay_core.whatif import dataset

    dataset.create(demo, "flights", [dataset.Case(FAILED_FLIGHT), dataset.Case(GOOD_FLIGHT)])
    srv = build(lambda: demo)
    done = call(srv, "run_experiment", {"dataset": "flights", "models": ["recorded"], "budget_usd": 0.5, "wait_seconds": 120})
    assert not done.is_error, text(done)
    assert done.structured_content["status"] == "done"
    [variant] = done.structured_content["variants"]
    assert variant["cases"] == 2 and "2 of 2 replays done" in text(done)
    again = call(srv, "get_experiment", {"experiment_id": done.structured_content["experiment_id"]})
    assert again.structured_content["variants"] == done.structured_content["variants"]

    link = call(srv, "create_share_link", {"run_id": FAILED_FLIGHT, "expires": "1d"})
    assert not link.is_error, text(link)
    opened = shares.open_link(demo, link.structured_content["token"], count=False)
    assert opened["target"] == {"session": FAILED_FLIGHT}

    qid = queues.create(demo, "flights to review", ids=[FAILED_FLIGHT])["id"]
    monkeypatch.setenv("AGENT_REPLAY_CLI_ROLE", "reviewer")
    held = call(srv, "review_queue_next", {"queue_id": qid})
    assert not held.is_error, text(held)
    item = held.structured_content["item"]
    assert "Verdicts: Good, Bad, Needs attention." in text(held)
    assert item["session_id"] == FAILED_FLIGHT
    saved = call(srv, "submit_verdict", {"queue_id": qid, "item_id": item["id"], "verdict": "Bad", "note": "wrong year"})
    assert not saved.is_error, text(saved)
    reviews = queues.results(demo, qid)["items"][0]["reviews"]
    assert [(r["verdict"], r["note"]) for r in reviews] == [("Bad", "wrong year")]
    refused = call(srv, "create_share_link", {"run_id": FAILED_FLIGHT})
    assert refused.is_error and "reviewers may not make share links" in text(refused)

"""How every agent framework's captured run (tests/fixtures/frameworks) ends when stored: its status,
its error, its final answer as the text a person reads, and the cost of each model call, checked
against what the capture's manifest says the run did (`outcome`, `run.model_calls`).

What a capture's spans do not carry is asserted absent (the reader must not make it up).
"""

from __future__ import annotations

import json

import pytest
from framework_captures import ORDERS, by_order, captures, manifest, post, requests
from hypothesis import given
from hypothesis import strategies as st

from replay_core.ingest import pricing
from replay_core.ingest.formats.otel.answers import readable
from replay_core.understand.timeline import open_timeline

# Captures whose spans hold no final answer, and why.
NO_ANSWER = {
    "autogen-own": "autogen-core's own spans record no model call and no output",
    "openai-v2-default": "the v1.30 conventions record no message content",
}
# Captures whose spans hold no model call.
NO_MODEL_CALLS = {
    "autogen-own": "autogen-core's own spans",
    "crewai-wrappers": "the instrumentor's default mode makes no LLM spans",
}


def _cause(name: str, causes: dict[str, str]) -> str | None:
    return next((why for prefix, why in causes.items() if name.startswith(prefix)), None)


def the_run(store) -> dict:
    """The capture's run: the stored run with the most steps (AutoGen also sends its agent's set-up trace)."""
    return max(store.list_sessions(limit=50), key=lambda s: s["steps"])


def _orders(name: str) -> tuple[str, ...]:
    """Every order for a capture whose spans came in several requests; one is all another has."""
    return ORDERS if sum(r.path.endswith("/traces") for r in requests(name)) > 1 else ("captured",)


@pytest.mark.parametrize(("name", "order"), [by_order(order, name, order) for name in captures() for order in _orders(name)])
def test_every_framework_run_ends_as_the_framework_says(sqlite_store, name, order):
    """Whatever order the batches arrive in (a slow run's spans come in several)."""
    done = post(sqlite_store, name, order, seed=7)
    expected, run = manifest(name)["outcome"], the_run(sqlite_store)
    if expected["status"] == "raised":  # Pydantic AI and LangGraph end the run with the tool's error
        error_class, message = expected["error"].split(": ", 1)
        assert (run["status"], run["error_class"], run["outcome"]) == ("failed", error_class, message)
        return
    assert expected["status"] == "completed"
    assert (run["status"], run["error_class"]) == ("succeeded", None)  # even when a tool failed on the way
    in_logs_only = any(r.path == "/v1/logs" for r in done.unsent)  # GenAI events: the content went to /v1/logs
    if _cause(name, NO_ANSWER) or in_logs_only:
        assert run["outcome"] is None  # not in what was received: nothing made up
    else:
        assert run["outcome"] == expected["final_output"]


TOOL_ERRORS = [c for c in captures() if c.endswith("tool-error")]


@pytest.mark.parametrize("name", TOOL_ERRORS)
def test_the_failed_tool_stays_an_error_step(sqlite_store, name):
    post(sqlite_store, name)
    steps = sqlite_store.load_steps(the_run(sqlite_store)["id"])
    failed = [s for s in steps if s.tool_name == "get_time" and s.type == "tool_result"]
    assert [s.status for s in failed] == ["error"]
    assert failed[0].content  # the error, or what the framework told the model instead (OpenAI Agents)


@pytest.mark.parametrize("name", captures())
def test_every_model_call_is_a_step_with_its_cost(sqlite_store, name):
    """From the span when it carries one (Pydantic AI's and Logfire's `operation.cost`), else priced
    from litellm's list prices and marked estimated; the run's cost is their sum, estimated if any is."""
    post(sqlite_store, name)
    run = the_run(sqlite_store)
    thinks = [s for s in sqlite_store.load_steps(run["id"]) if s.tokens_in is not None]
    if _cause(name, NO_MODEL_CALLS):
        assert thinks == [] and run["cost_usd"] is None  # no call, no cost: not a zero
        return
    calls = manifest(name)["run"]["model_calls"]
    assert len(thinks) == len(calls)
    for step in thinks:
        given_cost = (step.metadata.get("attributes") or {}).get("operation.cost")
        assert given_cost is None  # read into the step's cost, not left beside it
        price = pricing.list_price(step.model)
        listed = step.tokens_in * price[0] + step.tokens_out * price[1]
        assert step.cost_usd == pytest.approx(listed, rel=1e-9)
    own_cost = name.startswith(("pydantic-ai", "logfire"))
    assert [pricing.is_estimated(s.metadata) for s in thinks] == [not own_cost] * len(thinks)
    assert run["cost_usd"] == pytest.approx(sum(s.cost_usd for s in thinks))
    timeline = open_timeline(sqlite_store, run["id"])
    assert timeline.session["cost_estimated"] is (not own_cost)


# ---------------------------------------------------------------------------- answers as text

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40).filter(str.strip)
LANGCHAIN_MESSAGE = st.builds(
    lambda kind, content: {"type": kind, "data": {"content": content, "type": kind}},
    st.sampled_from(["human", "ai", "tool", "system"]),
    st.one_of(TEXT, st.just("")),
)


@given(st.lists(LANGCHAIN_MESSAGE, max_size=8), TEXT)
def test_a_graph_states_answer_is_its_last_assistant_text(messages, last):
    """LangGraph's output is the whole state: its answer is the last AI message with text, never the dump."""
    state = {"messages": [*messages, {"type": "ai", "data": {"content": last}}, {"type": "tool", "data": {"content": "x"}}]}
    assert readable(json.dumps(state)) == last


def test_crewai_outputs_read_as_their_raw_text():
    assert readable('{"raw": "Sunny.", "pydantic": null, "tasks_output": []}') == "Sunny."
    assert readable({"description": "the task", "raw": "Sunny.", "agent": "a"}) == "Sunny."
    assert readable("plain text") == "plain text"
    assert readable({"messages": [{"type": "human", "data": {"content": "hi"}}]}) is None  # no answer in the state


@given(st.integers(0, 10**7), st.integers(0, 10**6))
def test_an_estimate_is_the_list_price_of_the_tokens(tokens_in, tokens_out):
    price = pricing.list_price("gpt-4o-mini")
    assert price is not None and pricing.list_price("openai/gpt-4o-mini") == price
    assert pricing.estimate("gpt-4o-mini", tokens_in, tokens_out) == pytest.approx(tokens_in * price[0] + tokens_out * price[1])
    assert pricing.estimate("no-such-model-anywhere", tokens_in, tokens_out) is None
    assert pricing.estimate("gpt-4o-mini", None, None) is None


# ---------------------------------------------------------------------------- where an estimated cost is shown


def test_an_estimated_cost_says_so_in_the_cli_and_the_api(store):
    import orjson
    from starlette.testclient import TestClient
    from typer.testing import CliRunner

    from replay_core.cli import app
    from replay_core.server.api import create_app
    from replay_core.server.auth import Access

    runs = {}
    for name in ("openai-agents-openinference-ok", "pydantic-ai-v5-ok"):  # priced here; the span's own cost
        before = set(store.session_ids())
        post(store, name)
        (runs[name],) = set(store.session_ids()) - before
    for name, estimated in (("openai-agents-openinference-ok", True), ("pydantic-ai-v5-ok", False)):
        sid = runs[name]
        shown = CliRunner().invoke(app, ["show", sid, "--db", store.url])
        assert shown.exit_code == 0, shown.output
        assert ("cost 0.0001 (estimated from list prices)" in shown.stdout) is estimated, shown.stdout
        body = orjson.loads(CliRunner().invoke(app, ["show", sid, "--json", "--db", store.url]).stdout)
        assert body["session"]["cost_estimated"] is estimated
        assert [s["metadata"].get("cost_estimated", False) for s in body["steps"] if s["type"] == "think"] == [estimated] * 3
        with TestClient(create_app(store, access=Access(api_tokens=("t",)))) as client:
            run = client.get(f"/api/v1/sessions/{sid}", headers={"Authorization": "Bearer t"}).json()
        assert run["session"]["cost_estimated"] is estimated and run["session"]["cost_usd"] == pytest.approx(0.0001206)


def test_a_cost_the_span_gives_is_kept_and_an_unknown_model_stays_unpriced(sqlite_store):
    """Only a missing cost is estimated, and only from a list price: an unpriced model's cost stays
    unknown (None), never a guess or a zero."""
    from replay_core.ingest.formats import otlp_export
    from replay_core.ingest.pipeline import import_bytes

    def span(n: int, attrs: dict) -> dict:
        return {
            "traceId": f"{n:032x}",
            "spanId": f"{n:016x}",
            "name": "chat",
            "startTimeUnixNano": str(1767225600_000000000 + n),
            "endTimeUnixNano": str(1767225601_000000000 + n),
            "attributes": otlp_export.key_values({"gen_ai.operation.name": "chat", **attrs}),
        }

    usage = {"gen_ai.usage.input_tokens": 1000, "gen_ai.usage.output_tokens": 100}
    spans = [
        span(1, {"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.cost": 0.5, **usage}),
        span(2, {"gen_ai.request.model": "my-own-fine-tune", **usage}),
        span(3, {"gen_ai.request.model": "gpt-4o-mini", **usage}),
    ]
    body = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]}
    import_bytes(sqlite_store, json.dumps(body).encode(), "spans.json")
    found = {}
    for n in (1, 2, 3):
        (step,) = sqlite_store.load_steps(f"{n:032x}")
        found[n] = (step.cost_usd, pricing.is_estimated(step.metadata))
    price_in, price_out = pricing.list_price("gpt-4o-mini")
    assert found == {1: (0.5, False), 2: (None, False), 3: (pytest.approx(1000 * price_in + 100 * price_out), True)}


def test_pricing_at_ingest_never_imports_litellm(tmp_path):
    """Importing litellm takes seconds: an ingest reads its bundled price map as JSON instead."""
    import subprocess
    import sys
    from pathlib import Path

    tests = Path(__file__).parent
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from framework_captures import post\n"
        "from replay_core.storage.store import Store\n"
        "store = Store('sqlite:///' + sys.argv[2])\n"
        "post(store, 'openai-agents-openinference-ok')\n"
        "(run,) = store.list_sessions()\n"
        "assert run['cost_usd'] and 'litellm' not in sys.modules, (run['cost_usd'], 'litellm' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tests), str(tmp_path / "x.db")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]

"""The Langfuse SDK's spans (tests/fixtures/frameworks/langfuse-sdk-*, captured from langfuse 5.2.0) read as
the GenAI ones: generations are model calls with their model, tokens, context and answer; tools are tool
calls with the keyword arguments and results; the agent is the run; and what a span does not carry is
not made up (no cost in these spans: Langfuse prices on its server)."""

from __future__ import annotations

import pytest
from framework_captures import ORDERS, post

from replay_core.ingest.formats import otel
from replay_core.ingest.formats.otel.langfuse import normalise

CAPTURES = ("langfuse-sdk-ok", "langfuse-sdk-tool-error", "langfuse-sdk-slow")


def _steps(store, sid):
    contexts = store.step_contexts(sid)
    return [(s, contexts.get(s.event_id)) for s in store.load_steps(sid)]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("capture", CAPTURES)
def test_a_langfuse_run_has_its_model_calls_tokens_and_tools(sqlite_store, capture, order):
    done = post(sqlite_store, capture, order, seed=5)
    assert done.unsent == []
    [run] = sqlite_store.list_sessions()
    assert (run["name"], run["agent_id"], run["model"]) == ("travel_assistant", "travel_assistant", "gpt-4o-mini-2024-07-18")
    assert (run["tokens_in"], run["tokens_out"]) == (660, 36)
    assert run["status"] == "succeeded"
    steps = _steps(sqlite_store, run["id"])
    kinds = [(s.type, s.tool_name or "") for s, _ in steps]
    if capture.endswith("-slow"):  # several batches, the root last: where late spans are placed is the OTLP ordering's
        steps.sort(key=lambda sc: sc[0].timestamp)
        kinds = sorted(kinds)
    assert (
        kinds
        == [
            ("span", ""),
            ("think", ""),
            ("tool_call", "get_weather"),
            ("tool_result", "get_weather"),
            ("think", ""),
            ("tool_call", "get_time"),
            ("tool_result", "get_time"),
            ("think", ""),
        ]
        if not capture.endswith("-slow")
        else sorted(
            [
                ("span", ""),
                ("think", ""),
                ("think", ""),
                ("think", ""),
                ("tool_call", "get_weather"),
                ("tool_call", "get_time"),
                ("tool_result", "get_weather"),
                ("tool_result", "get_time"),
            ]
        )
    )
    thinks = [(s, c) for s, c in steps if s.type == "think"]
    assert [(s.tokens_in, s.tokens_out) for s, _ in thinks] == [(120, 11), (220, 12), (320, 13)]
    assert [[m["role"] for m in c] for _, c in thinks] == [
        ["system", "user"],
        ["system", "user", "assistant", "tool"],
        ["system", "user", "assistant", "tool", "assistant", "tool"],
    ]
    assert thinks[1][1][3]["content"] == "Sunny, 21 °C in Paris"
    calls = [s for s, _ in steps if s.type == "tool_call"]
    assert [(c.tool_args, c.tool_call_id) for c in calls] == [
        ({"city": "Paris"}, "call_get_weather_1"),
        ({"city": "Paris"}, "call_get_time_2"),
    ]
    results = [s for s, _ in steps if s.type == "tool_result"]
    assert results[0].content == "Sunny, 21 °C in Paris"
    if capture == "langfuse-sdk-tool-error":
        assert (results[1].status, results[1].content) == ("error", "time service unavailable for Paris")
        assert run["outcome"] == "In Paris it is sunny and 21 °C; I could not get the local time."
    else:
        assert results[1].content == "14:05 (CET) in Paris"
        assert run["outcome"] == "In Paris it is sunny and 21 °C, and the local time is 14:05."
    assert thinks[-1][0].content == run["outcome"]
    # no cost in these spans (Langfuse prices generations on its own server): none claimed from them
    assert all(s.cost_usd is None or (s.metadata or {}).get("cost_estimated") for s, _ in steps)


def test_what_is_not_translated_stays_in_the_step_metadata(sqlite_store):
    post(sqlite_store, "langfuse-sdk-ok")
    [run] = sqlite_store.list_sessions()
    think = next(s for s in sqlite_store.load_steps(run["id"]) if s.type == "think")
    kept = think.metadata["attributes"]
    assert '"temperature": 1' in kept["langfuse.observation.model.parameters"]
    assert "get_weather" in kept["gen_ai.tool.definitions"]
    assert not [k for k in kept if k.startswith("langfuse.observation.") and k.split(".")[2] in ("input", "output", "type")]


def _span(attributes: dict, **fields) -> otel.Span:
    base = dict(
        trace_id="ab" * 16,
        span_id="cd" * 8,
        parent_id=None,
        name="answer",
        start_ns=1,
        end_ns=2,
        status="unset",
        status_message=None,
        attributes=attributes,
    )
    return otel.Span(**(base | fields))


def test_cost_usage_level_and_trace_fields_are_said_in_the_common_names():
    span = normalise(
        _span(
            {
                "langfuse.observation.type": "generation",
                "langfuse.observation.model.name": "claude-x",
                "langfuse.observation.usage_details": '{"input": 43, "output": 2497, "total": 2540, "cache_read": 7}',
                "langfuse.observation.cost_details": '{"input": 0.001, "output": 0.02}',
                "langfuse.observation.input": "Say hi",
                "langfuse.observation.output": "hi",
                "langfuse.observation.level": "ERROR",
                "langfuse.observation.status_message": "rate limited",
                "langfuse.trace.name": "greeter",
                "langfuse.trace.tags": ["a", "b"],
                "langfuse.release": "1.4.0",
                "user.id": "u-1",
                "session.id": "chat-9",
            }
        )
    )
    a = span.attributes
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.response.model"] == "claude-x"
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (43, 2497)
    assert a["langfuse.observation.usage_details"] == '{"cache_read":7}'  # the detail beyond the counts
    assert a["gen_ai.usage.cost"] == pytest.approx(0.021)
    assert a["gen_ai.input.messages"] == '[{"role":"user","content":"Say hi"}]'
    assert a["gen_ai.output.messages"] == '[{"role":"assistant","content":"hi"}]'
    assert (span.status, span.status_message) == ("error", "rate limited")
    assert (a["user.id"], a["session.id"]) == ("u-1", "chat-9")  # already the common names
    session, think, end = otel.events_from_spans([span])
    assert (session.session_id, session.name, session.tags, session.agent_version) == ("chat-9", "greeter", ["a", "b"], "1.4.0")
    assert (think.type, think.model, think.tokens_in, think.cost_usd) == ("error", "claude-x", 43, pytest.approx(0.021))
    assert (end.status, end.outcome) == ("failed", "rate limited")


def test_a_span_without_langfuse_attributes_is_left_as_it_is():
    attributes = {"gen_ai.operation.name": "chat", "langfuse.observation.input": "kept"}
    span = normalise(_span(dict(attributes)))
    assert span.attributes == attributes


def test_positional_tool_arguments_are_kept_as_recorded():
    span = normalise(
        _span({"langfuse.observation.type": "tool", "langfuse.observation.input": '{"args": ["Paris"], "kwargs": {}}'})
    )
    assert span.attributes["gen_ai.tool.call.arguments"] == '{"args":["Paris"],"kwargs":{}}'
    assert span.attributes["gen_ai.operation.name"] == "execute_tool"


def test_the_key_pair_is_basic_auth_whose_secret_key_is_an_api_token():
    import base64

    from replay_core.server.auth import Access

    access = Access.load(env={"AGENT_REPLAY_API_TOKENS": "viewer:v-0000,e-0000"}, secrets={})
    basic = lambda pair: "Basic " + base64.b64encode(pair.encode()).decode()  # noqa: E731
    assert access.token_actor(basic("pk-lf-anything:e-0000")).role == "editor"
    assert access.token_actor(basic("pk-lf-anything:v-0000")).role == "viewer"
    assert access.token_actor(basic("e-0000:wrong")) is None  # the public key is not the secret
    assert access.token_actor(basic("no-colon-e-0000")) is None
    assert access.token_actor("Basic not base64!") is None
    assert access.token_actor("Bearer e-0000").role == "editor"

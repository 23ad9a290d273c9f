"""What-if replay through litellm against a scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import re
import threading

import orjson
import pytest
from conftest import FIXTURES
from openai_server import OpenAIServer, Reply
from typer.testing import CliRunner

from replay_core.cli import app
from replay_core.demo import load_demo, read_demo
from replay_core.ingest.formats import UnknownFormat
from replay_core.ingest.pipeline import ImportRejected, import_file
from replay_core.storage.store import SessionFilter
from replay_core.understand.compare import compare
from replay_core.understand.snapshot import rebuild_messages
from replay_core.understand.timeline import open_timeline
from replay_core.whatif.recording import MessageLog, Recording, canonical_args, request_key, split_turns
from replay_core.whatif.replay import ReplayError, estimate, open_recording, replay, replay_many
from replay_core.whatif.replay_config import Budget, ConfigError, ReplayConfig, configs_for, parse_params

FLIGHT = "demo-08-flight-bos-sfo-a"
FLIGHT_B = "demo-09-flight-bos-sfo-b"
CODING = "demo-02-coding-format-price-failed"
SEARCH_ARGS = {
    "adults": 1,
    "cabin": "economy",
    "depart_date": "2026-12-17",
    "destination": "SFO",
    "max_stops": 1,
    "origin": "BOS",
    "return_date": "2026-12-21",
    "sort": "price",
}
DEMO_IDS = sorted({ev.session_id for ev in read_demo()})


@pytest.fixture
def server():
    with OpenAIServer() as srv:
        yield srv


def live(server: OpenAIServer, **kwargs) -> ReplayConfig:
    """A config for the test server: fast backoff, short request timeout."""
    settings = {"model": "openai/fake-model", "api_base": server.base_url, "backoff_s": 0.01, "request_timeout_s": 5.0}
    return ReplayConfig(**{**settings, **kwargs})


def kinds(store, session_id: str) -> list[tuple[int, str]]:
    return [(s.seq, s.type) for s in store.load_steps(session_id)]


# ---------------------------------------------------------------------------- through the local server


def test_calls_the_recording_holds_are_answered_from_it(demo, server):
    server.script(
        server.tool_calls(("search_flights", SEARCH_ARGS), content="Search with the profile's constraints."),
        server.tool_calls(("get_fare_rules", {"offer_id": "OF-7Q2K1"}), content="Check the fare."),
        server.text("JetBlue via JFK at $318.40 is the cheapest."),
    )
    result = replay(demo, FLIGHT, 5, None, live(server, temperature=0.3))
    assert (result.outcome, result.status, result.steps, result.model_calls) == ("completed", "succeeded", 7, 3)
    assert kinds(demo, result.session) == [
        (5, "think"),
        (6, "tool_call"),
        (7, "tool_result"),
        (8, "think"),
        (9, "tool_call"),
        (10, "tool_result"),
        (11, "decision"),
    ]
    steps = demo.load_steps(result.session)
    original = {s.seq: s for s in demo.load_steps(FLIGHT)}
    assert steps[2].metadata == {"recorded": True, "source_seq": 7} and steps[2].content == original[7].content
    assert steps[5].metadata == {"recorded": True, "source_seq": 10}
    assert steps[2].tool_call_id == steps[1].tool_call_id == "call_0"  # the result answers the replay's own call
    assert (steps[0].tokens_in, steps[0].tokens_out, steps[0].cost_usd) == (30, 10, None)  # unknown price: unknown cost
    assert (result.tokens_in, result.tokens_out, result.cost_usd) == (80, 25, None)
    assert steps[0].metadata == {"live": True}
    # what the model saw: the recorded context at step 2 plus the steps rebuilt after it, and the run's tools
    first = server.requests[0]
    assert [m["role"] for m in first["messages"]] == ["system", "user", "assistant", "tool"]
    assert first["messages"][0]["content"].startswith("You are a travel assistant.")
    assert first["messages"][2]["tool_calls"][0]["function"]["name"] == "get_traveler_profile"
    assert first["messages"][3]["content"] == original[4].content
    assert [t["function"]["name"] for t in first["tools"]] == ["get_traveler_profile", "search_flights", "get_fare_rules"]
    assert first["temperature"] == 0.3
    assert server.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_0", "content": original[7].content}
    # the replay session
    row = demo.get_session(result.session)
    assert (row["replay_of"], row["replay_from"], row["replay_to"], row["source"]) == (FLIGHT, 5, 11, "replay")
    assert row["replay_config"]["model"] == "openai/fake-model" and row["replay_config"]["temperature"] == 0.3
    assert row["metadata"]["replay_outcome"] == "completed" and row["status"] == "succeeded"
    assert "replay" in row["tags"]
    # and its comparison with the original, cut to the replayed range
    div = result.first_divergence
    assert (div["a_seq"], div["b_seq"], div["kind"]) == (5, 5, "different text")
    assert div["summary"].startswith("Step 5: A thought “Origin BOS, destination SFO")
    assert div["summary"].endswith("B thought “Search with the profile's constraints.”.")
    assert compare(demo, FLIGHT, result.session).source_range == (5, 11)


def test_a_whole_run_replay_starts_from_the_context_the_run_recorded(demo, server):
    server.script(server.text("I would just book the first flight."))
    result = replay(demo, FLIGHT, None, None, live(server))
    recorded = demo.step_context(FLIGHT, demo.load_steps(FLIGHT)[1].event_id)
    assert server.requests[0]["messages"] == recorded  # system prompt and the user's request, not the input twice
    assert (result.outcome, result.status) == ("final_answer", "succeeded")
    assert kinds(demo, result.session) == [(1, "input"), (2, "decision")]
    assert demo.step_context(result.session, "r000002") == recorded  # what the model saw is kept with its answer


def test_a_call_the_recording_does_not_hold_diverges(demo, server):
    other = {**SEARCH_ARGS, "depart_date": "2025-12-17"}
    server.script(server.tool_calls(("search_flights", other)))
    result = replay(demo, FLIGHT, 5, None, live(server))
    assert (result.outcome, result.status, result.steps) == ("diverged", "incomplete", 1)
    assert result.message == f"the model called search_flights({canonical_args(other)}), which the recording does not hold"
    assert kinds(demo, result.session) == [(5, "tool_call")]
    row = demo.get_session(result.session)
    assert row["status"] == "incomplete" and row["metadata"]["replay_outcome"] == "diverged"
    assert row["outcome"] == f"Replay diverged: {result.message}"
    assert (result.first_divergence["a_seq"], result.first_divergence["b_seq"], result.first_divergence["kind"]) == (
        5,
        5,
        "missing step",
    )
    assert result.first_divergence["summary"].endswith("; B has no such step.")  # B went straight to the call
    second = compare(demo, FLIGHT, result.session).rows[1]
    assert (second.a.seq, second.b.seq, second.kind) == (6, 5, "different arguments")


def test_a_live_function_answers_what_the_recording_lacks(demo, server):
    seen = []

    def search_flights(**kwargs):
        seen.append(kwargs)
        return {"offers": []}

    other = {**SEARCH_ARGS, "depart_date": "2025-12-17"}
    server.script(server.tool_calls(("search_flights", other)), server.text("No flights on those dates."))
    result = replay(demo, FLIGHT, 5, None, live(server), live_tools={"search_flights": search_flights})
    assert seen == [other]
    assert (result.outcome, result.status) == ("final_answer", "succeeded")
    steps = demo.load_steps(result.session)
    assert [(s.seq, s.type) for s in steps] == [(5, "tool_call"), (6, "tool_result"), (7, "decision")]
    assert (steps[1].content, steps[1].metadata, steps[1].tool_call_id) == ('{"offers":[]}', {"live": True}, "call_0")
    assert steps[2].content == "No flights on those dates."


def test_a_rate_limit_is_retried_with_backoff(demo, server):
    server.script(server.error(429, "slow down", "rate_limit_error"), server.text("Done."))
    result = replay(demo, FLIGHT, 11, None, live(server))
    assert len(server.requests) == 2
    assert (result.outcome, result.status) == ("completed", "succeeded")
    step = demo.load_steps(result.session)[0]
    assert (step.type, step.content, step.metadata) == ("decision", "Done.", {"live": True, "provider_retries": 1})


def test_rate_limits_beyond_the_retries_fail_the_replay(demo, server):
    server.script(server.error(429, "slow down", "rate_limit_error"), server.error(429, "slow down", "rate_limit_error"))
    result = replay(demo, FLIGHT, 11, None, live(server, retries=1))
    assert len(server.requests) == 2
    assert (result.outcome, result.status, result.error_class) == ("provider_error", "failed", "rate_limit")
    row = demo.get_session(result.session)
    assert (row["status"], row["error_class"]) == ("failed", "rate_limit")
    [error] = demo.load_steps(result.session)
    assert (error.seq, error.type, error.status, error.error_class) == (11, "error", "error", "rate_limit")
    assert error.content == "Provider error from openai/fake-model: slow down"


@pytest.mark.parametrize(
    ("failure", "error_class"),
    [
        (OpenAIServer.error(500, "upstream exploded"), "server_error"),
        (Reply(status=502, body="<html>502 Bad Gateway</html>", content_type="text/html"), "server_error"),
        (OpenAIServer.error(401, "bad key", "invalid_api_key"), "auth"),
        (OpenAIServer.error(400, "no such parameter", "invalid_request_error"), "bad_request"),
        (OpenAIServer.malformed(), "bad_response"),
        (Reply(body="<html><body>Sign in to the proxy</body></html>", content_type="text/html"), "bad_response"),
        (Reply(drop=True), "connection"),
        (Reply(body={}, delay_s=1.5), "timeout"),
    ],
    ids=["server-error", "html-502", "auth", "bad-request", "malformed", "html-200", "connection-closed", "timeout"],
)
def test_a_provider_error_fails_the_replay_and_keeps_every_step(demo, server, failure, error_class):
    server.script(server.tool_calls(("search_flights", SEARCH_ARGS), content="Search."), failure)
    result = replay(demo, FLIGHT, 5, None, live(server, request_timeout_s=0.5))
    assert (result.outcome, result.status, result.error_class) == ("provider_error", "failed", error_class)
    assert kinds(demo, result.session) == [(5, "think"), (6, "tool_call"), (7, "tool_result"), (8, "error")]
    row = demo.get_session(result.session)
    assert (row["status"], row["error_class"]) == ("failed", error_class)
    assert row["outcome"] == f"Replay provider error: {result.message}"


def test_budgets_stop_a_replay(demo, server):
    server.script(server.tool_calls(("search_flights", SEARCH_ARGS), content="Search."))
    result = replay(demo, FLIGHT, 5, None, live(server, budget=Budget(max_steps=2)))
    assert (result.outcome, result.status, result.steps) == ("budget", "incomplete", 3)
    assert result.message == "step budget spent (3 of 2 steps)"

    server.script(server.tool_calls(("search_flights", SEARCH_ARGS), content="Search."))
    priced = live(server, input_cost_per_token=0.001, output_cost_per_token=0.002, budget=Budget(max_cost_usd=0.01))
    result = replay(demo, FLIGHT, 5, None, priced)
    assert (result.outcome, result.cost_usd) == ("budget", pytest.approx(30 * 0.001 + 10 * 0.002))
    assert result.message == "cost budget spent ($0.0500 of $0.0100)"
    assert demo.load_steps(result.session)[0].cost_usd == pytest.approx(0.05)

    server.script(Reply(body={}, delay_s=1.0))
    result = replay(demo, FLIGHT, 5, None, live(server, budget=Budget(timeout_s=0.3)))
    assert (result.outcome, result.status) == ("budget", "incomplete")
    assert result.message == "time budget spent (0.3 s) waiting for openai/fake-model"


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("replace", "Be brief."),
        (
            "append",
            "You are a travel assistant. Search with the tools, compare options and never book "
            "without explicit confirmation.\n\nBe brief.",
        ),
    ],
)
def test_the_system_prompt_is_replaced_or_appended(demo, server, mode, expected):
    server.script(server.text("Done."))
    result = replay(demo, FLIGHT, 11, None, live(server, system_prompt="Be brief.", system_mode=mode))
    messages = server.requests[0]["messages"]
    assert messages[0] == {"role": "system", "content": expected}
    assert sum(m["role"] == "system" for m in messages) == 1
    assert demo.get_session(result.session)["replay_config"]["system_prompt"] == "Be brief."


def test_the_api_key_is_read_from_the_named_variable_and_never_stored(demo, server, monkeypatch):
    monkeypatch.setenv("REPLAY_TEST_KEY", "sk-test-abcdefghijklmnop")
    server.script(server.text("Done."))
    result = replay(demo, FLIGHT, 11, None, live(server, api_key_env="REPLAY_TEST_KEY"))
    assert server.headers[0]["authorization"] == "Bearer sk-test-abcdefghijklmnop"
    row = demo.get_session(result.session)
    assert row["replay_config"]["api_key_env"] == "REPLAY_TEST_KEY"
    steps = [s.model_dump() for s in demo.load_steps(result.session)]
    stored = orjson.dumps([row, steps, demo.step_contexts(result.session)], default=str, option=orjson.OPT_NON_STR_KEYS)
    assert b"abcdefghijklmnop" not in stored
    monkeypatch.delenv("REPLAY_TEST_KEY")
    before = demo.count_sessions()
    with pytest.raises(ConfigError, match="environment variable REPLAY_TEST_KEY is not set"):
        replay(demo, FLIGHT, 11, None, live(server, api_key_env="REPLAY_TEST_KEY"))
    assert demo.count_sessions() == before


@pytest.mark.parametrize("workers", [1, 3])
def test_fan_out_runs_one_replay_session_per_model_within_the_limit(demo, server, workers):
    server.default = server.text("Done.", delay_s=0.3)  # long enough for more than `workers` at once to show
    server.hold_until = workers  # and no answer before `workers` are in flight
    seen, lock = [], threading.Lock()

    def progress(p):
        with lock:
            seen.append(p)

    configs = configs_for(["openai/model-a", "openai/model-b", "openai/model-c"], api_base=server.base_url)
    results = replay_many(demo, FLIGHT, 11, None, configs, max_workers=workers, on_progress=progress)
    assert [r.model for r in results] == ["openai/model-a", "openai/model-b", "openai/model-c"]
    assert len({r.session for r in results}) == 3 and all(r.status == "succeeded" for r in results)
    assert server.max_in_flight == workers
    assert sorted(r["model"] for r in server.requests) == ["model-a", "model-b", "model-c"]
    assert {p.session for p in seen if p.done} == {r.session for r in results}
    replays = demo.list_sessions(SessionFilter(replay_of=FLIGHT))
    assert sorted(r["model"] for r in replays) == ["openai/model-a", "openai/model-b", "openai/model-c"]


def test_recorded_answers_first_and_the_fallback_model_where_the_run_departs(demo, server):
    server.script(server.text("Found one offer: JetBlue at $318.40."), server.text("Cheapest: JetBlue, $318.40."))
    config = live(server, model="recorded", fallback_model="openai/fake-model", tool_mode="live")
    result = replay(demo, FLIGHT_B, None, None, config, live_tools={"search_flights": lambda **_: {"offers": ["OF-7Q2K1"]}})
    assert len(server.requests) == 2  # only after the live search result made the run depart
    steps = demo.load_steps(result.session)
    assert [(s.seq, s.type) for s in steps] == [
        (1, "input"),
        (2, "think"),
        (3, "tool_call"),
        (4, "tool_result"),
        (5, "think"),
        (6, "tool_call"),
        (7, "tool_result"),
        (8, "think"),
        (9, "decision"),
    ]
    assert [s.metadata for s in steps[1:6]] == [{"recorded": True, "source_seq": n} for n in (2, 3, 4, 5, 6)]
    assert steps[6].metadata == {"live": True} and steps[6].content == '{"offers":["OF-7Q2K1"]}'
    assert [s.content for s in steps[7:]] == ["Found one offer: JetBlue at $318.40.", "Cheapest: JetBlue, $318.40."]
    assert (result.outcome, result.status, result.cost_usd) == ("completed", "succeeded", None)
    assert (result.first_divergence["a_seq"], result.first_divergence["kind"]) == (7, "different result")


def test_recorded_without_fallback_diverges_where_the_recording_has_no_answer(demo):
    config = ReplayConfig(model="recorded", tool_mode="live")
    result = replay(demo, FLIGHT_B, None, None, config, live_tools={"search_flights": lambda **_: {"offers": []}})
    assert (result.outcome, result.status) == ("diverged", "incomplete")
    assert result.message == "the recording holds no answer for this context (it departs from the original run)"
    assert [s.seq for s in demo.load_steps(result.session)] == [1, 2, 3, 4, 5, 6, 7]


def test_done_when_the_failing_coding_run_replayed_with_another_model_names_its_first_divergence(demo, server):
    """The failing demo run replayed from its culprit cycle with another model, side by side with the original."""
    server.script(
        server.tool_calls(
            ("read_file", {"path": "tests/pricing/test_format.py"}),
            content="Before rewriting it, read the tests to learn the expected signature.",
        )
    )
    result = replay(demo, CODING, 8, None, live(server, model="openai/other-model"))
    assert (result.outcome, result.status) == ("diverged", "incomplete")
    assert result.session in [r["id"] for r in demo.list_sessions(SessionFilter(replay_of=CODING))]
    side_by_side = compare(demo, CODING, result.session)
    div = side_by_side.first_divergence
    assert (div.a_seq, div.b_seq, div.kind) == (8, 8, "different text")
    assert div.summary == (
        "Step 8: A thought “format_price is tiny: a float amount, a locale, and a hard-coded '$'. I'll add …”; "
        "B thought “Before rewriting it, read the tests to learn the expected signature.”."
    )
    assert result.first_divergence == div.to_dict()
    rows = [(r.a.seq if r.a else None, r.b.seq if r.b else None) for r in side_by_side.rows]
    assert rows == [(8, 8)] + [(seq, None) for seq in range(9, 26)] + [(None, 9)]


# ---------------------------------------------------------------------------- the null replay


@pytest.mark.parametrize("session_id", DEMO_IDS)
def test_null_replay_reproduces_every_demo_run(demo, session_id):
    result = replay(demo, session_id, None, None, ReplayConfig(model="recorded"))
    original = demo.get_session(session_id)
    assert result.outcome == "completed" and result.first_divergence is None
    assert result.steps == original["steps"] and result.cost_usd == 0.0
    expected = original["status"] if original["status"] in ("succeeded", "failed") else "incomplete"
    assert result.status == expected
    assert compare(demo, session_id, result.session).first_divergence is None


def test_null_replay_matches_with_an_edited_system_prompt_and_from_mid_run(demo):
    config = ReplayConfig(model="recorded", system_prompt="You are terse.")
    result = replay(demo, CODING, 8, 17, config)
    assert (result.outcome, result.first_divergence, result.steps) == ("completed", None, 10)
    assert result.status == "succeeded"  # the range ends before the run does: the original's outcome is not the replay's
    assert [s.seq for s in demo.load_steps(result.session)] == list(range(8, 18))


def real_samples() -> list[str]:
    """The real (not hand-made) files of tests/fixtures, as SOURCES.md lists them."""
    rows = [line.split("|") for line in (FIXTURES / "SOURCES.md").read_text().splitlines() if line.startswith("| ")]
    return sorted(
        r[1].strip() for r in rows if len(r) > 6 and r[6].strip().startswith("real") and (FIXTURES / r[1].strip()).exists()
    )


@pytest.mark.parametrize("sample", real_samples())
def test_null_replay_reproduces_every_real_sample_with_model_turns(sqlite_store, sample):
    try:
        report = import_file(sqlite_store, FIXTURES / sample)
    except (UnknownFormat, ImportRejected) as exc:  # attributes or protobuf text; a real file that gives no steps
        pytest.skip(f"{sample} is refused: {str(exc).splitlines()[0][:200]}")
    replayed = 0
    for sid in report.sessions:
        try:
            result = replay(sqlite_store, sid, None, None, ReplayConfig(model="recorded"))
        except ReplayError:  # a session without model output
            continue
        replayed += 1
        assert result.first_divergence is None, result.first_divergence
        assert result.steps == sqlite_store.get_session(sid)["steps"]
    if not replayed:
        pytest.skip(f"{sample} holds no model output (think, tool_call, decision) to replay")


# ---------------------------------------------------------------------------- recording, estimate, input


def test_message_log_equals_rebuilt_messages_at_every_step():
    by_session: dict[str, list] = {}
    for ev in read_demo():
        if ev.kind == "step":
            by_session.setdefault(ev.session_id, []).append(ev)
    for sid, steps in by_session.items():
        steps = sorted(steps, key=lambda s: s.seq)[:300]
        log = MessageLog([])
        for i, step in enumerate(steps):
            log.extend([step])
            assert log.messages() == rebuild_messages(steps[: i + 1]), (sid, step.seq)
            if i % 25 == 0:
                assert log.copy().key() == MessageLog([], steps[: i + 1]).key() == request_key(log.messages())


def test_turns_and_inferred_tool_schemas(demo):
    lead, turns = split_turns(demo.load_steps(FLIGHT))
    assert [s.seq for s in lead] == [1]
    assert [([s.seq for s in t.steps], [s.seq for s in t.env]) for t in turns] == [
        ([2, 3], [4]),
        ([5, 6], [7]),
        ([8, 9], [10]),
        ([11], []),
    ]
    rec = Recording(open_timeline(demo, FLIGHT), demo, 1, 11)
    search = next(t["function"] for t in rec.tools() if t["function"]["name"] == "search_flights")
    assert search["parameters"] == {
        "type": "object",
        "properties": {
            "adults": {"type": "integer"},
            "cabin": {"type": "string"},
            "depart_date": {"type": "string"},
            "destination": {"type": "string"},
            "max_stops": {"type": "integer"},
            "origin": {"type": "string"},
            "return_date": {"type": "string"},
            "sort": {"type": "string"},
        },
        "required": ["adults", "cabin", "depart_date", "destination", "max_stops", "origin", "return_date", "sort"],
    }
    assert rec.context_source == "recorded at step 2"


def test_recorded_tool_schemas_are_used_when_the_source_has_them(demo):
    from replay_core.events import SessionEvent
    from replay_core.ingest.pipeline import ingest

    schema = {"name": "search_flights", "description": "Search flights.", "input_schema": {"type": "object", "properties": {}}}
    ingest(demo, [SessionEvent(session_id=FLIGHT, metadata={"tools": [schema]})])
    assert open_recording(demo, FLIGHT, None, None).tools() == [
        {
            "type": "function",
            "function": {
                "name": "search_flights",
                "description": "Search flights.",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]


def test_estimate_before_launch(demo):
    configs = configs_for(["gpt-4o-mini", "openai/unknown-model", "recorded"])
    mini, unknown, recorded = estimate(demo, FLIGHT, 5, None, configs)
    model_steps = [s for s in demo.load_steps(FLIGHT) if s.seq >= 5 and s.type in ("think", "tool_call", "decision")]
    tokens_in, tokens_out = sum(s.tokens_in for s in model_steps), sum(s.tokens_out for s in model_steps)
    assert (mini.turns, mini.tokens_in, mini.tokens_out) == (3, tokens_in, tokens_out)
    assert mini.cost_usd == round(tokens_in * 0.15e-6 + tokens_out * 0.6e-6, 6)  # gpt-4o-mini list prices
    assert unknown.cost_usd is None and unknown.notes == ["no list price for openai/unknown-model: cost unknown"]
    assert recorded.cost_usd == 0.0


def test_bad_input_is_refused_before_anything_is_stored(demo):
    before = demo.count_sessions()
    with pytest.raises(ReplayError, match="no such session: nope"):
        replay(demo, "nope", None, None, ReplayConfig(model="recorded"))
    with pytest.raises(ReplayError, match=re.escape("steps 40–50 are outside the run (steps 1–11)")):
        replay(demo, FLIGHT, 40, 50, ReplayConfig(model="recorded"))
    with pytest.raises(ReplayError, match="--from 7 is after --to 5"):
        replay(demo, FLIGHT, 7, 5, ReplayConfig(model="recorded"))
    with pytest.raises(ReplayError, match="steps 4–4 of demo-08-flight-bos-sfo-a hold no model output"):
        replay(demo, FLIGHT, 4, 4, ReplayConfig(model="recorded"))
    assert demo.count_sessions() == before


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"model": ""}, "model: give a litellm model string"),
        ({"model": "x", "temperature": 3}, "temperature: must be between 0 and 2, got 3"),
        ({"model": "x", "api_key_env": "sk-live-123"}, "api_key_env: give the NAME of an environment variable"),
        ({"model": "x", "params": {"messages": []}}, "params: 'messages' is set by the replay itself"),
        ({"model": "x", "fallback_model": "y"}, "fallback_model: only meaningful with model 'recorded'"),
        ({"model": "x", "tool_mode": "sometimes"}, "tool_mode: expected one of recorded, live, none, got 'sometimes'"),
    ],
)
def test_config_errors_name_the_setting(settings, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        ReplayConfig(**settings)


def test_params_from_the_command_line():
    assert parse_params(["top_p=0.5", 'stop=["END"]', "user=ana"]) == {"top_p": 0.5, "stop": ["END"], "user": "ana"}
    with pytest.raises(ConfigError, match="params: expected NAME=VALUE, got 'top_p'"):
        parse_params(["top_p"])


def test_config_round_trips_through_its_stored_form():
    config = ReplayConfig(model="openai/x", temperature=0.1, api_base="http://127.0.0.1:1/v1", budget=Budget(max_steps=9))
    assert ReplayConfig.from_json(orjson.loads(orjson.dumps(config.to_json()))) == config
    with pytest.raises(ConfigError, match="colour: not a replay setting"):
        ReplayConfig.from_json({"model": "x", "colour": "red"})


# ---------------------------------------------------------------------------- CLI


def test_cli_replay_json_through_the_local_server(demo, server):
    if demo.dialect != "sqlite":
        pytest.skip("the CLI path is the same on both databases")
    server.default = server.text("Done.")
    res = CliRunner().invoke(
        app,
        [
            "replay",
            FLIGHT,
            "--from",
            "11",
            "--to",
            "11",
            "--model",
            "openai/fake-model",
            "--model",
            "recorded",
            "--api-base",
            server.base_url,
            "--param",
            "top_p=0.5",
            "--param",
            "seed=7",
            "--tool-mode",
            "none",
            "--json",
            "--db",
            demo.url,
        ],
    )
    assert res.exit_code == 0, res.output
    [request] = server.requests
    assert (request["top_p"], request["seed"], "tools" in request) == (0.5, 7, False)
    body = orjson.loads(res.stdout)
    assert [e["model"] for e in body["estimate"]] == ["openai/fake-model", "recorded"]
    live_run, null_run = body["replays"]
    assert {k: live_run[k] for k in ("status", "outcome", "steps", "tokens_in", "tokens_out", "cost_usd")} == {
        "status": "succeeded",
        "outcome": "completed",
        "steps": 1,
        "tokens_in": 20,
        "tokens_out": 5,
        "cost_usd": None,
    }
    assert live_run["first_divergence"]["kind"] == "different text" and live_run["first_divergence"]["a_seq"] == 11
    assert null_run["first_divergence"] is None and null_run["status"] == "succeeded"
    assert demo.get_session(live_run["session"])["replay_of"] == FLIGHT


def test_cli_replay_human_output_and_errors(sqlite_store, tmp_path):
    load_demo(sqlite_store, only_if_empty=False)
    res = CliRunner().invoke(app, ["replay", FLIGHT, "--model", "recorded", "--db", sqlite_store.url])
    assert res.exit_code == 0, res.output
    assert "estimate recorded: 4 model turns" in res.stdout and "first divergence: none" in res.stdout
    res = CliRunner().invoke(app, ["replay", FLIGHT, "--model", "recorded", "--from", "40", "--db", sqlite_store.url])
    assert res.exit_code == 1 and str(res.exception) == "steps 40–11 are outside the run (steps 1–11)"
    res = CliRunner().invoke(
        app, ["replay", FLIGHT, "--model", "recorded", "--system-prompt", str(tmp_path / "none.txt"), "--db", sqlite_store.url]
    )
    assert res.exit_code == 1 and str(res.exception).startswith("--system-prompt: cannot read")

"""A replay's own outcome, against its original: reproduced, diverged at step N, could not start (and why)."""

from __future__ import annotations

import pytest
from openai_server import OpenAIServer

from replay_core.storage.store import SessionFilter
from replay_core.understand.replay_outcome import describe, plain_error, replay_outcome
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig

CODING = "demo-02-coding-format-price-failed"
FLIGHT = "demo-08-flight-bos-sfo-a"


def test_a_null_replay_of_a_failed_run_reads_reproduced_and_is_not_counted_as_a_run(demo):
    before = demo.count_sessions()
    result = replay(demo, CODING, None, None, ReplayConfig(model="recorded"))
    row = demo.get_session(result.session)
    assert row["status"] == "failed"  # the original's outcome stands in the session row…
    assert replay_outcome(demo, row).text == "reproduced"  # …but the replay itself reproduced it
    assert demo.count_sessions() == before  # originals only by default
    assert demo.count_sessions(SessionFilter(include_replays=True)) == before + 1
    assert demo.count_sessions(SessionFilter(status="failed")) == 4
    assert [r["id"] for r in demo.list_sessions(SessionFilter(replay_of=CODING))] == [result.session]  # asked by name
    assert replay_outcome(demo, demo.get_session(CODING)) is None  # an original is not a replay


def test_a_diverging_replay_names_the_step(demo):
    with OpenAIServer() as server:
        server.script(server.tool_calls(("read_file", {"path": "tests/pricing/test_format.py"}), content="Read the tests first."))
        result = replay(demo, CODING, 8, None, ReplayConfig(model="openai/other", api_base=server.base_url, backoff_s=0.01))
    outcome = replay_outcome(demo, demo.get_session(result.session))
    assert (outcome.text, outcome.kind) == ("diverged at step 8", "diverged")


def test_a_replay_without_credentials_could_not_start(demo, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "AGENT_REPLAY_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    result = replay(demo, FLIGHT, 11, None, ReplayConfig(model="openai/gpt-4o-mini", retries=0, request_timeout_s=5))
    assert result.outcome == "provider_error"
    outcome = replay_outcome(demo, demo.get_session(result.session))
    assert (outcome.text, outcome.kind) == ("could not start: no credentials for openai", "could_not_start")
    assert outcome.raw == result.message and outcome.raw  # the provider's own words stay at hand


def test_a_provider_failure_after_the_first_answer_says_where_it_stopped(demo):
    with OpenAIServer() as server:
        server.script(server.tool_calls(("search_flights", {"x": 1}), content="Search."), server.error(500, "boom"))
        cfg = ReplayConfig(model="openai/m", api_base=server.base_url, backoff_s=0.01, tool_mode="live")
        result = replay(demo, FLIGHT, 5, None, cfg, live_tools={"search_flights": lambda **_: {"offers": []}})
    outcome = replay_outcome(demo, demo.get_session(result.session))
    assert (outcome.kind, outcome.text, outcome.raw) == ("stopped", "stopped at step 5: openai had a server error", "boom")


@pytest.mark.parametrize(
    ("error_class", "message", "text"),
    [
        ("timeout", "read timed out", "openai did not answer in time"),
        ("connection", "refused", "could not reach openai"),
        ("rate_limit", "slow down", "openai is refusing requests for now (too many requests)"),
        ("auth", "invalid api key provided", "no credentials for openai"),
        ("auth", "forbidden", "openai refused the credentials"),
        ("other", "Missing credentials. Please pass an `api_key`", "no credentials for openai"),
        ("other", "something odd", "the call to openai failed"),
    ],
)
def test_provider_errors_in_plain_words(error_class, message, text):
    assert plain_error(error_class, message, "openai/gpt-4o-mini") == text


def test_a_running_replay_and_a_different_outcome():
    assert describe(None, None, None, None, model="m", started=True).text == "still replaying"
    same_steps = {"a_seq": None, "b_seq": None, "kind": "different outcome"}
    assert describe("completed", "", None, same_steps, model="m", started=True).text == "same steps, different outcome"
    assert describe("budget", "", None, {"a_seq": 3, "b_seq": 4}, model="m", started=True).text == (
        "diverged at step 3, then stopped at its budget"
    )

"""The optional model-written paragraph of why a run failed (whatif/narrative.py), through litellm
against the local OpenAI-compatible server (tests/openai_server.py), and on the timeline page."""

from __future__ import annotations

import pytest
from apptest_helpers import FAILED_CODING, demo_store, page  # noqa: F401  (fixtures)
from openai_server import OpenAIServer

from replay_core import config
from replay_core.understand.explain import explain
from replay_core.whatif import narrative

TIMELINE = "pages/timeline.py"
PARAGRAPH = (
    "The agent trusted a search hit [step 4] that its own read of the file contradicted [step 7], then "
    "overwrote the file [step 9]; the tests failed [step 18] and it gave up [step 25]. See also [step 30]."
)


@pytest.fixture(autouse=True)
def fresh_cache():
    narrative._cache.clear()
    yield
    narrative._cache.clear()


@pytest.fixture
def server():
    with OpenAIServer() as s:
        yield s


def test_the_model_is_given_the_chain_and_its_cost_is_kept(demo_store, server):
    result = explain(demo_store, FAILED_CODING)
    server.script(server.text(PARAGRAPH, usage=(300, 60)))
    first = narrative.narrate(result, "openai/gpt-4o-mini", api_base=server.base_url)
    assert first.text == PARAGRAPH and first.tokens_in == 300 and first.tokens_out == 60
    assert first.cost_usd is not None and first.cost_usd > 0  # litellm's own price list for gpt-4o-mini
    assert first.cited == (4, 7, 9, 18, 25, 30) and first.not_in_chain == (30,)
    (sent,) = server.requests
    assert sent["messages"][0]["content"] == narrative.SYSTEM
    told = sent["messages"][1]["content"]
    for link in result.chain:
        assert f"[step {link.seq}] ({link.kind}) {link.summary}" in told
    assert result.cause_line() in told and "format_price" in told
    # asked again for the same explanation: no second call, same answer
    assert narrative.narrate(result, "openai/gpt-4o-mini", api_base=server.base_url) is first
    assert narrative.cached(result, "openai/gpt-4o-mini", server.base_url) is first and server.count() == 1


@pytest.mark.parametrize(
    ("reply", "error_class"),
    [
        (OpenAIServer.error(500, "upstream exploded"), "server_error"),
        (OpenAIServer.error(401, "invalid api key", kind="invalid_request_error"), "auth"),
        (OpenAIServer.malformed(), "bad_response"),
    ],
)
def test_a_provider_failure_is_said_in_plain_words(demo_store, server, reply, error_class):
    server.script(reply)
    with pytest.raises(narrative.NarrativeError) as caught:
        narrative.narrate(explain(demo_store, FAILED_CODING), "openai/fake-model", api_base=server.base_url)
    assert caught.value.error_class == error_class and caught.value.plain == narrative.PLAIN_ERRORS[error_class]
    assert narrative._cache == {}  # a failure is not kept: the next click asks again


def test_off_by_default_and_with_an_off_switch(monkeypatch):
    monkeypatch.delenv("AGENT_REPLAY_EXPLAIN_MODEL", raising=False)
    monkeypatch.delenv("AGENT_REPLAY_EXPLAIN_LLM", raising=False)
    assert config.explain_model() is None
    monkeypatch.setenv("AGENT_REPLAY_EXPLAIN_MODEL", "openai/gpt-4o-mini")
    assert config.explain_model() == "openai/gpt-4o-mini"
    for off in ("off", "0", "false", "No"):
        monkeypatch.setenv("AGENT_REPLAY_EXPLAIN_LLM", off)
        assert config.explain_model() is None


def plain(text: str) -> str:
    import re

    return re.sub(r"\\(.)", r"\1", text)


def configure(monkeypatch, server, model="openai/gpt-4o-mini"):
    monkeypatch.setenv("AGENT_REPLAY_EXPLAIN_MODEL", model)
    monkeypatch.setenv("AGENT_REPLAY_EXPLAIN_API_BASE", server.base_url)
    monkeypatch.delenv("AGENT_REPLAY_EXPLAIN_LLM", raising=False)


def test_the_timeline_shows_no_button_when_off(demo_store, monkeypatch):
    monkeypatch.delenv("AGENT_REPLAY_EXPLAIN_MODEL", raising=False)
    at = page(TIMELINE, params={"session": FAILED_CODING})
    assert not at.exception and not [b for b in at.button if b.key == "narrate"]


def test_the_timeline_asks_on_a_click_and_marks_the_paragraph_as_a_models(demo_store, monkeypatch, server):
    configure(monkeypatch, server)
    server.script(server.text(PARAGRAPH, usage=(300, 60)))
    at = page(TIMELINE, params={"session": FAILED_CODING})
    assert server.count() == 0  # the rule-based answer is drawn without waiting for a model
    assert any(m.value.startswith("**Asked:**") for m in at.markdown)
    # the cost is shown before the call: the prompt in, the paragraph's cap out, at gpt-4o-mini's list price
    tokens_in, at_most = narrative.estimate(explain(demo_store, FAILED_CODING), "openai/gpt-4o-mini")
    assert at_most == pytest.approx(tokens_in * 0.15e-6 + narrative.MAX_TOKENS * 0.60e-6)
    before = next(plain(c.value) for c in at.caption if c.value.startswith("Asking costs"))
    assert before == (
        f"Asking costs about {tokens_in:,} tokens in and at most {narrative.MAX_TOKENS} out: "
        f"at most ${at_most:.4f} at openai/gpt-4o-mini's list price."
    )
    at.button(key="narrate").click().run()
    assert not at.exception
    assert PARAGRAPH in [t.value for t in at.text]
    mark = next(plain(c.value) for c in at.caption if "Written by a model" in c.value)
    assert mark.startswith("✍️ Written by a model (openai/gpt-4o-mini) from the causal chain above, not by the rules")
    assert mark.endswith("$0.0001 · 300 tokens in / 60 out")  # 300 × $0.15/M + 60 × $0.60/M, rounded
    assert any("step 30, which the causal chain does not name" in plain(c.value) for c in at.caption)
    at.button(key="cited_9").click().run()
    assert at.session_state["step"] == 9
    at.run()  # re-rendering does not pay again
    assert server.count() == 1 and PARAGRAPH in [t.value for t in at.text]


def test_the_timeline_says_a_provider_failure_in_plain_words(demo_store, monkeypatch, server):
    configure(monkeypatch, server, model="openai/fake-model")
    server.script(server.error(500, "upstream exploded"))
    at = page(TIMELINE, params={"session": FAILED_CODING})
    at.button(key="narrate").click().run()
    assert not at.exception
    assert any(
        "No paragraph from openai/fake-model: The model's server failed while answering" in plain(e.value) for e in at.error
    )
    assert any("upstream exploded" in c.value for c in at.code)  # the provider's own words, behind a disclosure
    assert any(m.value.startswith("**Asked:**") and "**Why:**" in m.value for m in at.markdown)  # the rules' answer stays

"""Models offered for what-if replays: read from configuration, refused with the place named, checked before launch."""

from __future__ import annotations

import json

import pytest
from openai_server import OpenAIServer

from replay_core.whatif.models import RECORDED_OPTION, ModelOption, offered_models, readiness
from replay_core.whatif.replay_config import ConfigError


def test_the_env_list_and_the_file_together_each_model_once(tmp_path):
    path = tmp_path / "models.json"
    path.write_text(json.dumps([{"model": "openai/gpt-4o-mini", "name": "GPT-4o mini", "price_in": 0.15, "price_out": 0.6}]))
    found = offered_models(
        {"AGENT_REPLAY_MODELS_FILE": str(path), "AGENT_REPLAY_MODELS": "openai/gpt-4o-mini, anthropic/claude-x,"}
    )
    assert [o.model for o in found] == ["openai/gpt-4o-mini", "anthropic/claude-x", "recorded"]
    assert found[0].name == "GPT-4o mini" and found[0].provider == "openai" and found[-1] == RECORDED_OPTION
    assert found[0].settings() == {
        "api_base": None,
        "api_key_env": None,
        "input_cost_per_token": 0.15 / 1e6,
        "output_cost_per_token": 0.6 / 1e6,
    }
    assert offered_models({}) == [RECORDED_OPTION]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[{", "not valid JSON"),
        ('{"model": "x"}', "expected a list of models"),
        ('[{"model": "x", "colour": "red"}]', "model 1: 'colour' is not a model setting"),
        ('[{"name": "no model"}]', "model 1: model: give the model to call"),
        (
            '[{"model": "x"}, {"model": "y", "price_in": "cheap", "price_out": 1}]',
            "model 2: price_in: give USD per million tokens",
        ),
        ('[{"model": "x", "price_in": 1}]', "model 1: give both price_in and price_out, or neither"),
    ],
)
def test_a_bad_models_file_is_refused_with_the_place_named(tmp_path, text, message):
    path = tmp_path / "models.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as caught:
        offered_models({"AGENT_REPLAY_MODELS_FILE": str(path)})
    assert str(path) in str(caught.value)


def test_readiness_names_what_is_missing():
    assert readiness(RECORDED_OPTION, {}).ok
    no_key = readiness(ModelOption("anthropic/claude-3-5-haiku-latest", "Haiku", "anthropic"), {})
    assert (no_key.ok, no_key.reason, no_key.fix) == (
        False,
        "No credentials for anthropic are set up on this server.",
        "export ANTHROPIC_API_KEY=<…>",
    )
    named = readiness(ModelOption("openai/x", "X", "openai", api_key_env="TEAM_KEY"), {})
    assert (named.ok, named.fix) == (False, "export TEAM_KEY=<your openai key>")
    assert readiness(
        ModelOption("openai/x", "X", "openai", api_key_env="TEAM_KEY"), {"TEAM_KEY": "k"}
    ).ok  # the named key is passed on


def test_a_model_server_is_ready_when_it_answers():
    with OpenAIServer() as server:
        assert readiness(ModelOption("openai/m", "M", api_base=server.base_url), {}).ok
    gone = readiness(ModelOption("openai/m", "M", api_base=server.base_url), {}, timeout_s=0.5)
    assert not gone.ok and "does not answer" in gone.reason

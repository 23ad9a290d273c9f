"""The what-if page through the app (AppTest): range from the timeline, estimate, launch, results, links."""

from __future__ import annotations

from urllib.parse import parse_qs

import streamlit as st
from apptest_helpers import FAILED_CODING, component_data, demo_each_store, demo_store, page, texts  # noqa: F401  (fixtures)
from model_fixtures import local_server, no_provider  # noqa: F401  (fixtures)
from openai_server import OpenAIServer

from replay_core.understand.compare import compare
from ui.common import md

PAGE = "pages/whatif.py"


def links(at) -> list[tuple[str, str, dict]]:
    return [
        (pl.proto.page, pl.proto.label, {k: v[0] for k, v in parse_qs(pl.proto.query_string).items()})
        for pl in at.get("page_link")
    ]


def test_arriving_from_the_timeline_preselects_the_cycle_of_the_step(demo_store, no_provider):
    at = page(PAGE, params={"session": FAILED_CODING, "step": "8"})
    assert not at.exception
    [cycles] = at.select_slider
    assert cycles.value == (2, 7)  # cycle 3 (steps 8–10) to the last one
    assert "Steps 8–25: 18 steps, 6 model turns. The model starts from the context recorded at step 2." in texts(at)
    [models] = at.multiselect
    assert (models.options, models.value) == (["The run's own answers"], ["recorded"])
    [est] = at.dataframe
    assert est.value["model"].tolist() == ["recorded"] and est.value["cost (≈)"].tolist() == ["$0.0000"]


def test_without_a_provider_the_page_says_how_to_set_one_up_and_offers_recorded(demo_store, no_provider):
    at = page(PAGE, params={"session": FAILED_CODING})
    info = " ".join(i.value for i in at.info)
    assert info.startswith("No live model is set up on this server yet.") and "**the run's own answers**" in info
    assert "OPENAI_API_KEY" not in info and "litellm" not in info  # engineers' words only in the engineers' expander
    at.button(key="launch").click().run()
    [result] = at.session_state["whatif_results"]["results"]
    assert (result["model"], result["status"], result["first_divergence"]) == ("recorded", "failed", None)
    assert at.dataframe[-1].value["the original did"].tolist() == ["same steps as the replay"]


def test_launch_against_the_local_server_then_open_the_comparison(demo_each_store, local_server):
    local_server.script(
        local_server.tool_calls(("read_file", {"path": "tests/pricing/test_format.py"}), content="Read the tests first.")
    )
    at = page(PAGE, params={"session": FAILED_CODING, "step": "8"})
    assert not at.info  # a provider is set up: no advice shown
    [models] = at.multiselect
    assert models.options == ["openai/fake-model (openai)", "The run's own answers"] and models.value == []
    assert at.button(key="launch").disabled  # nothing to launch yet
    models.set_value(["openai/fake-model", "recorded"]).run()
    assert not at.warning  # the local server answers: nothing in the way
    assert at.dataframe[0].value["model"].tolist() == ["openai/fake-model", "recorded"]
    at.button(key="launch").click().run()
    assert not at.exception
    live_run, null_run = at.session_state["whatif_results"]["results"]
    assert (live_run["status"], live_run["outcome"], live_run["steps"]) == ("incomplete", "diverged", 2)
    assert (null_run["status"], null_run["first_divergence"]) == ("failed", None)
    table = at.dataframe[-1].value
    assert table["model"].tolist() == ["openai/fake-model", "recorded"]
    # where it left the original: what the original did there, and what the NEW model did (not the original again)
    assert table["the original did"].tolist()[0].startswith("step 8: thought “format_price is tiny")
    assert table["this model did"].tolist()[0] == "step 8: thought “Read the tests first.”"
    assert table["what happened"].tolist()[0] == "diverged at step 8"
    # the same as bubbles beside each other (drawn in Chromium by test_browser_playground.py)
    [original] = component_data(at, "whatif_said_0_original")["messages"]
    [new] = component_data(at, "whatif_said_0_new")["messages"]
    assert original["origin"] == "original · step 8" and original["parts"][0][1].startswith("format_price is tiny")
    assert new["origin"] == "openai/fake-model · step 8" and new["parts"] == [["line", "Read the tests first."]]
    assert table["cost"].tolist() == ["unknown", "$0.0000"]
    assert ("timeline", "Timeline of the openai/fake\\-model replay", {"session": live_run["session"]}) in links(at)
    assert (
        "compare",
        "Compare the openai/fake\\-model replay with the original",
        {"a": FAILED_CODING, "b": live_run["session"]},
    ) in links(at)
    assert local_server.requests[0]["model"] == "fake-model"

    cmp = page("pages/compare.py", params={"a": FAILED_CODING, "b": live_run["session"]})
    assert not cmp.exception
    expected = compare(demo_each_store, FAILED_CODING, live_run["session"]).first_divergence
    assert cmp.error[0].value == md(f"First divergence — different text: {expected.summary}")


def test_viewers_cannot_launch(demo_store, no_provider, monkeypatch):
    monkeypatch.setenv("AGENT_REPLAY_PASSWORD", "look")
    monkeypatch.setenv("AGENT_REPLAY_EDITOR_PASSWORD", "change")
    at = page(PAGE, params={"session": FAILED_CODING}, state={"role": "viewer"})
    assert at.button(key="launch").disabled
    assert "Only editors can launch replays (they cost money)." in texts(at)


def test_an_edited_system_prompt_is_shown_as_a_diff_against_the_original(demo_store, no_provider):
    at = page(PAGE, params={"session": FAILED_CODING})
    at.radio(key="prompt_mode").set_value("Edit it").run()
    at.text_area(key=f"prompt_{FAILED_CODING}").set_value("You are a careful coding agent. Read the tests first.").run()
    diff = at.code[0].value.splitlines()
    assert diff[:2] == ["--- original", "+++ replay"]
    assert diff[3].startswith("-You are a coding agent working in the shop-backend repository.")
    assert diff[4] == "+You are a careful coding agent. Read the tests first."


def test_other_litellm_parameters_must_be_a_json_object(demo_store, no_provider):
    at = page(PAGE, params={"session": FAILED_CODING})
    at.text_input(key="params").set_value("[1, 2]").run()
    assert at.error[0].value == md('Other litellm parameters: give a JSON object, e.g. {"top_p": 0.9}')
    assert at.button(key="launch").disabled


# ---------------------------------------------------------------------------- models from configuration, checked first


def warnings_and_fixes(at) -> tuple[list[str], list[str]]:
    return [w.value for w in at.warning], [c.value for c in at.code if c.language == "bash"]


def test_a_model_without_credentials_cannot_be_launched_and_says_how_to_fix_it(demo_store, no_provider, monkeypatch):
    monkeypatch.setenv("AGENT_REPLAY_MODELS", "openai/gpt-4o-mini")
    at = page(PAGE, params={"session": FAILED_CODING})
    at.multiselect(key="models").set_value(["openai/gpt-4o-mini"]).run()
    warnings, fixes = warnings_and_fixes(at)
    assert warnings == [md("openai/gpt-4o-mini cannot run now: No credentials for openai are set up on this server.")]
    assert fixes == ["export OPENAI_API_KEY=<…>"]
    assert at.button(key="launch").disabled
    assert "Estimate" not in [s.value for s in at.subheader]  # no estimate for a model that cannot run
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder-key")
    st.cache_data.clear()  # the page checks a model at most every 30 s
    at = page(PAGE, params={"session": FAILED_CODING})
    at.multiselect(key="models").set_value(["openai/gpt-4o-mini"]).run()
    assert not at.warning and not at.button(key="launch").disabled


def test_a_models_file_names_and_prices_the_models(demo_store, no_provider, monkeypatch, tmp_path):
    with OpenAIServer() as server:
        models = tmp_path / "models.toml"
        models.write_text(
            f'[[model]]\nmodel = "openai/fake-model"\nname = "Small model"\nprovider = "our server"\n'
            f'api_base = "{server.base_url}"\nprice_in = 0.5\nprice_out = 1.5\n'
        )
        monkeypatch.setenv("AGENT_REPLAY_MODELS_FILE", str(models))
        at = page(PAGE, params={"session": FAILED_CODING, "step": "8"})
        box = at.multiselect(key="models")
        assert box.options == ["Small model (our server) · $0.5 / $1.5 per million tokens", "The run's own answers"]
        box.set_value(["openai/fake-model"]).run()
        assert not at.warning
        [est] = at.dataframe
        assert est.value["cost (≈)"].tolist()[0].startswith("$")  # priced by the file, not "unknown"


def test_a_model_server_that_does_not_answer_blocks_launch(demo_store, no_provider, monkeypatch):
    from apptest_helpers import free_port

    monkeypatch.setenv("AGENT_REPLAY_API_BASE", f"http://127.0.0.1:{free_port()}/v1")  # nothing listens there
    monkeypatch.setenv("AGENT_REPLAY_MODELS", "openai/local-model")
    at = page(PAGE, params={"session": FAILED_CODING})
    at.multiselect(key="models").set_value(["openai/local-model"]).run()
    warnings, fixes = warnings_and_fixes(at)
    assert warnings == [
        md("openai/local-model cannot run now: The model server for openai/local-model does not answer (it may be stopped).")
    ]
    assert fixes and fixes[0].startswith("start the model server at http://127.0.0.1:")
    assert at.button(key="launch").disabled


def test_a_provider_error_reads_in_plain_words_with_the_raw_message_beside_it(demo_store, local_server):
    local_server.script(local_server.error(500, "upstream exploded"))
    at = page(PAGE, params={"session": FAILED_CODING, "step": "8"})
    at.multiselect(key="models").set_value(["openai/fake-model"]).run()
    at.button(key="launch").click().run()
    assert not at.exception
    table = at.dataframe[-1].value
    assert table["what happened"].tolist() == ["could not start: openai had a server error"]
    [said] = component_data(at, "whatif_said_0_new")["messages"]  # a bubble beside the original's step
    assert said["role"] == "error" and "upstream exploded" in said["parts"][0][1]
    assert "InternalServerError" not in table.to_string()


def test_a_null_replay_of_a_failed_run_reads_reproduced(demo_store, no_provider):
    at = page(PAGE, params={"session": FAILED_CODING})
    at.button(key="launch").click().run()
    assert at.dataframe[-1].value["what happened"].tolist() == ["reproduced"]  # not the original's "failed"

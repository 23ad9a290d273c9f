"""The playground page through the app (AppTest): a model call opened from the timeline's link, its messages edited,
run once against the scripted server, the answer beside the recorded one, and a missing key said before running."""

from __future__ import annotations

from apptest_helpers import FAILED_CODING, component_data, demo_each_store, demo_store, page, texts  # noqa: F401  (fixtures)
from model_fixtures import local_server, no_provider  # noqa: F401  (fixtures)

from ui.common import md

PAGE = "pages/playground.py"
FLIGHT = "demo-08-flight-bos-sfo-a"


def test_the_timeline_links_a_model_step_to_the_playground(demo_store):
    at = page("pages/timeline.py", params={"session": FLIGHT, "step": "11"})
    [link] = [pl for pl in at.get("page_link") if pl.proto.label == "Open in playground"]
    assert link.proto.page.endswith("playground") and "step=11" in link.proto.query_string
    at = page("pages/timeline.py", params={"session": FLIGHT, "step": "10"})  # a tool result: no model call to open
    assert not [pl for pl in at.get("page_link") if pl.proto.label == "Open in playground"]


def test_edit_run_and_read_the_answer_beside_the_recorded_one(demo_each_store, local_server):
    local_server.script(local_server.text("Book the Alaska nonstop."))
    at = page(PAGE, params={"session": FLIGHT, "step": "11"})
    assert not at.exception
    system = at.text_area(key=f"pg_system_{FLIGHT}@11")
    assert system.value.startswith("You are a travel assistant.")
    recorded = component_data(at, "pg_recorded")["messages"][0]
    assert recorded["origin"] == "assistant · recorded · gpt-4o" and "JetBlue" in recorded["parts"][0][1]
    system.set_value("Answer in five words.")
    at.button(key=f"pg_add_{FLIGHT}@11").click().run()  # a new user message at the end
    new = [ta for ta in at.text_area if ta.key.startswith("pg_text_")][-1]
    new.set_value("Nonstop only, please.")
    at.multiselect(key="models").set_value(["openai/fake-model"]).run()
    at.button(key="pg_run").click().run()
    assert not at.exception
    [sent] = local_server.requests
    assert sent["messages"][0] == {"role": "system", "content": "Answer in five words."}
    assert sent["messages"][-1] == {"role": "user", "content": "Nonstop only, please."}
    answer = component_data(at, "pg_answer")["messages"][0]
    assert answer["origin"] == "assistant · new · openai/fake-model" and answer["parts"] == [["line", "Book the Alaska nonstop."]]
    links = {pl.proto.label: pl.proto.query_string for pl in at.get("page_link")}
    assert f"a={FLIGHT}" in links["Compare with the original"] and "replay" in links["Open on the timeline"]


def test_a_removed_message_is_not_sent(demo_store, local_server):
    local_server.script(local_server.text("ok"))
    at = page(PAGE, params={"session": FLIGHT, "step": "11"})
    before = len([ta for ta in at.text_area if ta.key.startswith("pg_text_")])
    [first] = [b for b in at.button if b.key.startswith("pg_rm_")][:1]
    first.click().run()
    assert len([ta for ta in at.text_area if ta.key.startswith("pg_text_")]) == before - 1
    at.multiselect(key="models").set_value(["openai/fake-model"]).run()
    at.button(key="pg_run").click().run()
    [sent] = local_server.requests
    assert [m["role"] for m in sent["messages"]][:2] == ["system", "assistant"]  # the user's request is gone


def test_a_missing_key_is_said_before_running_with_its_fix(demo_store, no_provider, monkeypatch):
    monkeypatch.setenv("AGENT_REPLAY_MODELS", "openai/gpt-4o-mini")
    at = page(PAGE, params={"session": FLIGHT, "step": "11"})
    at.multiselect(key="models").set_value(["openai/gpt-4o-mini"]).run()
    assert [w.value for w in at.warning] == [
        md("openai/gpt-4o-mini cannot run now: No credentials for openai are set up on this server.")
    ]
    assert "export OPENAI_API_KEY=<…>" in texts(at)
    assert at.button(key="pg_run").disabled


def test_a_step_that_is_no_model_output_offers_the_model_steps(demo_store, no_provider):
    at = page(PAGE, params={"session": FLIGHT, "step": "10"})
    assert not at.exception
    assert "Step 10 is not a model" in texts(at)
    [picker] = [s for s in at.selectbox if s.label == "Model call"]
    assert picker.value is None and picker.options[-1].startswith("step 11 · ✅ Decision")


def test_viewers_read_and_edit_but_cannot_run(demo_store, local_server, monkeypatch):
    monkeypatch.setenv("AGENT_REPLAY_PASSWORD", "look")
    monkeypatch.setenv("AGENT_REPLAY_EDITOR_PASSWORD", "change")
    at = page(PAGE, params={"session": FLIGHT, "step": "11"}, state={"role": "viewer"})
    at.multiselect(key="models").set_value(["openai/fake-model"]).run()
    assert at.button(key="pg_run").disabled
    assert "Only editors can run a model (it costs money)." in " ".join(texts(at).split())
    assert local_server.requests == []

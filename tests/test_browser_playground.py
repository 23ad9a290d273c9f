"""Messages as a conversation and the playground, in headless Chromium: what the agent saw as bubbles by role with
its tool calls and results as cards (a long one folded: test_browser_timeline.py), the Raw JSON switch; one
model call edited, run against the scripted server and read beside the recorded answer, a missing key said first;
What-if's result as bubbles of both sides at the divergence.

On SQLite, in the app shared with the other reading modules (served_demo.py): what these tests check is what the
browser draws and sends; the pages' reads on PostgreSQL are the AppTests' on `demo_each_store` (test_page_timeline.py's
transcript, test_page_playground.py's, test_page_whatif.py's launch).

Screenshots go to test-output/browser/ (gitignored): chat-bubbles.png, chat-raw.png, playground.png.
"""

from __future__ import annotations

import pytest
from openai_server import OpenAIServer
from playwright.sync_api import expect
from served_demo import demo_app_to_read  # noqa: F401  (a fixture)
from test_browser import OUT, settled

pytestmark = pytest.mark.browser

FLIGHT = "demo-08-flight-bos-sfo-a"


@pytest.fixture
def served(demo_app_to_read) -> tuple[str, OpenAIServer]:
    """The demo runs served with two models: one on the scripted server, one hosted without a key."""
    return demo_app_to_read.base, demo_app_to_read.models


def opened(browser, base: str, path: str, shown: str):
    pg = browser.new_page(viewport={"width": 1440, "height": 1100})
    pg.goto(f"{base}/{path}")
    pg.get_by_text(shown).first.wait_for(timeout=60_000)
    settled(pg)
    return pg


def pick(pg, model: str) -> None:
    """The model picked in What-if's picker, as a person types it."""
    models = pg.locator(".st-key-models input")
    models.click()
    models.fill(model)
    models.press("Enter")
    models.press("Escape")
    settled(pg)


def test_what_the_agent_saw_reads_as_a_conversation_with_folds_and_raw_json(browser, served):
    base, _ = served
    OUT.mkdir(parents=True, exist_ok=True)
    pg = opened(browser, base, f"timeline?session={FLIGHT}&step=5", "Thought · step 5")
    chat = pg.locator(".st-key-transcript")
    for role in ("system", "user", "assistant", "tool"):
        expect(chat.locator(f".message.{role}").first).to_be_visible()
    user, assistant = chat.locator(".message.user").first.bounding_box(), chat.locator(".message.assistant").first.bounding_box()
    assert user["x"] > assistant["x"]  # the person's message on the right, the model's on the left
    call = chat.locator(".message.assistant .card.call").first
    expect(call).to_contain_text("Calls get_traveler_profile")
    expect(call.locator("pre")).to_have_text('traveler_id: "self"')  # arguments one a line
    expect(chat.locator(".message.tool.card.result").first).to_contain_text("Result of get_traveler_profile")
    pg.screenshot(path=str(OUT / "chat-bubbles.png"))
    # the exact stored JSON, then back to the bubbles
    chat.locator("button.raw-json").click()
    expect(chat.locator("button.raw-json")).to_have_attribute("aria-pressed", "true")
    expect(chat.locator(".message.raw").first).to_contain_text('"role": "system"')
    assert chat.locator(".card").count() == 0
    pg.screenshot(path=str(OUT / "chat-raw.png"))
    chat.locator("button.raw-json").click()
    expect(chat.locator(".card.call").first).to_be_visible()
    # the selected step has the switch too: the step as stored
    detail = pg.locator(".st-key-step_view")
    expect(detail.locator(".message.assistant")).to_contain_text("Origin BOS")
    detail.locator("button.raw-json").click()
    expect(detail.locator("pre").first).to_contain_text('"schema": "agent-replay/v1"')
    detail.locator("button.show-all").click()  # the stored step is long: its start, then all of it
    expect(detail.locator("pre").first).to_contain_text('"type": "think"')


def test_the_playground_edits_runs_and_shows_the_answer_beside_the_recorded_one(browser, served):
    base, server = served
    server.route("fake-model", lambda payload: server.text("Book the Alaska nonstop at 08:30."))
    # a hosted model without its key: said before anything runs, with the fix, and Run stays off
    pg = opened(browser, base, f"playground?session={FLIGHT}&step=11", "Recorded answer")
    pick(pg, "gpt-4o-mini")
    pg.get_by_text("No credentials for openai are set up on this server.").wait_for(timeout=90_000)  # litellm loads first
    settled(pg)
    expect(pg.locator(".st-key-pg_run button")).to_be_disabled()
    # the model on the scripted server: edit, run, read
    pg = opened(browser, base, f"playground?session={FLIGHT}&step=11", "Recorded answer")
    system = pg.get_by_label("System prompt")
    system.fill("Answer in one line.")
    system.press("Tab")
    settled(pg)
    pick(pg, "fake-model")
    expect(pg.locator(".st-key-pg_run button")).to_be_enabled(timeout=30_000)
    pg.locator(".st-key-pg_run button").click()
    answer = pg.locator(".st-key-pg_answer .message.assistant")
    answer.wait_for(timeout=60_000)
    expect(answer).to_contain_text("Book the Alaska nonstop at 08:30.")
    recorded = pg.locator(".st-key-pg_recorded .message.assistant")
    expect(recorded).to_contain_text("JetBlue")
    left, right = recorded.bounding_box(), answer.bounding_box()
    assert left["x"] + left["width"] <= right["x"] and abs(left["y"] - right["y"]) < 80  # side by side
    sent = [p for p in server.requests if p.get("model") == "fake-model"][-1]["messages"]
    assert sent[0] == {"role": "system", "content": "Answer in one line."}
    expect(pg.get_by_role("link", name="Compare with the original")).to_be_visible()
    pg.screenshot(path=str(OUT / "playground.png"), full_page=True)


def test_what_ifs_result_shows_each_side_at_the_divergence_as_bubbles(browser, served):
    """What the original did and what the new model did, where the replay left the original, as the timeline's bubbles
    with their Raw JSON; a provider's refusal as its own bubble, not a code box."""
    base, server = served
    server.route("fake-model", lambda payload: server.text("I would book the first flight listed."))
    pg = opened(browser, base, f"whatif?session={FLIGHT}", "Cycles to replay")
    pick(pg, "fake-model")
    launch = pg.get_by_role("button", name="Launch")
    expect(launch).to_be_enabled(timeout=60_000)
    launch.click()
    original, new = pg.locator(".st-key-whatif_said_0_original"), pg.locator(".st-key-whatif_said_0_new")
    new.locator(".message").wait_for(timeout=120_000)
    settled(pg)
    expect(original.locator(".message.assistant")).to_contain_text("Get the traveler's profile first")
    expect(new.locator(".message.assistant")).to_contain_text("I would book the first flight listed.")
    left, right = original.bounding_box(), new.bounding_box()
    assert left["x"] + left["width"] <= right["x"] and abs(left["y"] - right["y"]) < 40  # side by side
    assert pg.locator("[data-testid=stCode]").count() == 0  # no message printed in a code box
    new.locator("button.raw-json").click()
    expect(new.locator(".message.raw")).to_contain_text('"role": "assistant"')
    pg.locator(".st-key-whatif_said_0_new").scroll_into_view_if_needed()
    pg.screenshot(path=str(OUT / "whatif-bubbles.png"))
    # the provider refuses: its answer is a bubble of its own beside the original's step
    server.route("fake-model", lambda payload: server.error(401, "Incorrect API key provided: sk-fake", "invalid_request_error"))
    launch.click()
    refused = pg.locator(".st-key-whatif_said_0_new .message.error")
    refused.wait_for(timeout=120_000)
    expect(refused).to_contain_text("Incorrect API key provided")
    expect(refused.locator(".origin")).to_have_text("openai/fake-model · provider's answer")
    assert pg.locator("[data-testid=stCode]").count() == 0

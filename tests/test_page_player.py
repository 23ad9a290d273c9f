"""The visual replay on the timeline (AppTest): the browser demo's screenshots play, the filmstrip jumps,
a step without its own screenshot says so, and a run without screenshots shows no player."""

from __future__ import annotations

from apptest_helpers import cursor, demo_each_store, demo_store, page, texts  # noqa: F401  (fixtures)

from replay_core.demo import BROWSER_DEMO

TIMELINE = "pages/timeline.py"


def test_the_browser_demo_plays_its_screenshots(demo_each_store):
    """On both databases: the screenshots are read back as stored (tests/test_browser_player.py, on SQLite, draws them)."""
    at = page(TIMELINE, params={"session": BROWSER_DEMO, "step": "9"})
    assert not at.exception
    assert "What the agent saw on screen" in [h.value for h in at.subheader]
    assert len(at.get("image")) >= 2  # the large screenshot and the filmstrip thumbnails
    assert any("Red: where the agent acted" in c.value for c in at.caption)
    film = [b.label for b in at.button if b.key and b.key.startswith("film_")]
    assert "Step 9" in film and len(film) <= 8
    at.button(key="film_4").click().run()
    assert cursor(at) == 4


def test_a_step_without_a_screenshot_shows_the_last_one_dimmed(demo_store):
    at = page(TIMELINE, params={"session": BROWSER_DEMO, "step": "5"})
    assert any("No screenshot at step 5: showing the last one before it, dimmed." in c.value for c in at.caption)


def test_runs_without_screenshots_have_no_player(demo_store):
    at = page(TIMELINE, params={"session": "demo-02-coding-format-price-failed", "step": "3"})
    assert not at.exception
    assert "What the agent saw on screen" not in [h.value for h in at.subheader]

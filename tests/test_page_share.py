"""Share from where you are (AppTest): a link made on the timeline or on compare opens a page with the run's
header sentence, its Why, what reviewers said and the steps' content; a comparison shows both sides' content.
Still one target only: the run the Why compares with is not named."""

from __future__ import annotations

from apptest_helpers import FAILED_CODING, component_texts, demo_each_store, demo_store, page, texts  # noqa: F401  (fixtures)

from replay_core.demo import BROWSER_DEMO
from replay_core.storage.actor import Actor
from replay_core.team import shares
from ui.common import md

FLIGHT_A, FLIGHT_B = "demo-08-flight-bos-sfo-a", "demo-09-flight-bos-sfo-b"


def token_of(at, key: str) -> str:
    at.button(key=f"{key}_make").click().run()
    assert not at.exception
    return next(c.value for c in at.code if "/share?token=" in c.value).split("token=", 1)[1]


def test_a_run_shared_from_its_timeline_shows_the_header_why_verdict_and_steps(demo_each_store):
    demo_each_store.annotate(FLIGHT_B, "bad", "Searched last year's dates; should have asked", author="Dana")
    timeline = page("pages/timeline.py", params={"session": FLIGHT_B})
    token = token_of(timeline, f"share_{FLIGHT_B}")
    at = page("pages/share.py", params={"token": token})
    assert not at.exception
    assert at.error[0].value.startswith(md("Failed after 3 cycles"))  # the header sentence, in words
    why = next(m.value for m in at.markdown if "**Why:**" in m.value)
    assert "step 7" in why
    said = " ".join(m.value for m in at.markdown)
    assert md("Searched last year's dates; should have asked") in said and "Dana" in said
    assert any("search_flights" in t for t in component_texts(at))  # the steps, with their content
    shown = said + " ".join(component_texts(at)) + " ".join(e.label for e in at.expander)
    assert FLIGHT_A not in shown and md(FLIGHT_A) not in shown  # no other run named, let alone reachable
    assert not [b for b in at.button if b.key == "narrate"]  # no model call offered to a stranger


def test_a_comparison_shared_from_compare_shows_both_sides_content(demo_store):
    compare = page("pages/compare.py", params={"a": FLIGHT_A, "b": FLIGHT_B})
    token = token_of(compare, f"share_{FLIGHT_A}_{FLIGHT_B}")
    at = page("pages/share.py", params={"token": token})
    assert not at.exception
    pairs = next(d.value for d in at.dataframe if "A did" in d.value.columns)
    row = pairs[pairs["A step"] == 6].iloc[0]
    assert "2026-12-17" in row["A did"] and "2025-12-17" in row["B did"] and row["A did"].startswith("tool_call · search_flights")


def test_a_link_opens_past_the_door_and_once_revoked_says_so(demo_each_store, monkeypatch):
    """On both databases, what tests/test_browser_share.py's link shows in Chromium (on SQLite): the run without
    signing in, then, revoked, why it no longer opens; both openings audited."""
    monkeypatch.setenv("AGENT_REPLAY_PASSWORD", "look-only")
    editor = Actor("Eve", "editor", "test")
    name = demo_each_store.get_session(BROWSER_DEMO)["name"]
    made = shares.make(demo_each_store, shares.RUN, session=BROWSER_DEMO, actor=editor)
    at = page("pages/share.py", params={"token": made["token"]})
    assert not at.exception
    assert at.caption[0].value.startswith("Shared read-only from Agent Replay")
    assert md(name) in texts(at) and "This dashboard is private." not in texts(at)
    shares.revoke(demo_each_store, made["id"], actor=editor)
    at = page("pages/share.py", params={"token": made["token"]})
    assert at.title[0].value == "This link no longer opens" and at.error[0].value.startswith("This link was revoked on ")
    assert md(name) not in texts(at)
    opens = [e for e in demo_each_store.audit_entries(actions=["share"]) if e["who"] == f"share link {made['id']}"]
    assert [e["outcome"] for e in opens] == ["revoked", "ok"]

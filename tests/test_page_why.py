""" "Why it failed" in plain words, on the timeline (AppTest) and in the explanation: no raw JSON in the red banner,
the Why line never cut inside a value, the turning point told once, a context overflow blamed on its error's own
token figures, and an Errors count that adds up with the "Did" sentences."""

from __future__ import annotations

from apptest_helpers import demo_store, metric_cards, page  # noqa: F401  (fixtures)
from hypothesis import given
from hypothesis import strategies as st

from replay_core.understand.explain import explain, plain_words
from ui.common import md

TIMELINE = "pages/timeline.py"
FLIGHT_B = "demo-09-flight-bos-sfo-b"
OVERFLOW = "demo-17-inbox-triage-context-overflow"
SQL = "demo-12-sql-churn-by-plan-failed"


def why_line(at) -> str:
    return next(m.value for m in at.markdown if "**Why:**" in m.value)


def test_the_banner_tells_an_errors_json_in_words_and_the_why_keeps_values_whole(demo_store):
    at = page(TIMELINE, params={"session": FLIGHT_B})
    assert not at.exception
    banner = at.error[0].value
    assert "{" not in banner and "INVALID\\_DATE" in banner
    assert md("depart_date 2025-12-17 is in the past (INVALID_DATE)") in banner
    why = why_line(at)
    assert why.count("“") == why.count("”")  # no value cut open (“20…)
    chain = next(e for e in at.expander if e.label == "Causal chain and turning point")
    told = [m.value for m in chain.markdown]
    assert sum("parted from the successful run" in t or t.startswith("**Turning point**") for t in told) == 1


def test_a_context_overflow_is_blamed_on_its_errors_token_figures(demo_store):
    why = explain(demo_store, OVERFLOW).cause_line()
    assert "131,772 tokens" in why and "128,000" in why
    assert "spent the most tokens" not in why
    at = page(TIMELINE, params={"session": OVERFLOW})
    assert md("131,772 tokens") in why_line(at)


def test_the_errors_count_adds_up_with_the_did_sentences(demo_store):
    at = page(TIMELINE, params={"session": SQL})
    errors = next(c for c in metric_cards(at, "run_metrics") if c["label"].startswith("Errors"))
    assert (errors["label"], errors["value"]) == ("Errors (3 in tool calls, 1 of the run)", "4")
    did = next(m.value for m in at.markdown if "**Did:**" in m.value)
    assert "1 error recorded" in did and did.count("(failed") >= 1


@given(st.text(alphabet=st.characters(blacklist_characters="{}"), max_size=60))
def test_text_without_json_is_left_as_it_is(text):
    assert plain_words(text) == text


@given(st.text(min_size=1, max_size=40).filter(lambda t: t.strip() and "{" not in t), st.sampled_from(["E42", "BAD"]))
def test_an_error_object_is_told_by_its_message_and_code(message, code):
    import json

    told = plain_words(f"failed: {json.dumps({'error': code, 'message': message})}.")
    assert told == f"failed: {message} ({code})."


def _hue(colour: str) -> float:
    import colorsys

    r, g, b = (int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return colorsys.rgb_to_hls(r, g, b)[0] * 360


def test_the_selected_step_an_error_and_the_cause_are_told_apart_by_colour():
    from pathlib import Path

    from ui.timeline_view import STRIP_KINDS

    here, error, cause = (STRIP_KINDS[k][1] for k in ("you are here", "error", "cause"))
    for a, b in ((here, error), (here, cause), (error, cause)):
        apart = abs(_hue(a) - _hue(b))
        assert min(apart, 360 - apart) >= 60, (a, b)
    css = (Path(__file__).parent.parent / "ui" / "assets" / "components.css").read_text()
    current = next(line for line in css.splitlines() if line.startswith("button.step.current"))
    assert here in current  # the selected step in the list wears the strip's "you are here" colour, not red

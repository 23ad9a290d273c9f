"""The review page: runs by verdict with their notes, and marking a run."""

from __future__ import annotations

from apptest_helpers import FAILED_CODING, demo_store, empty_store, page  # noqa: F401  (fixtures)

from replay_core.storage.store import SessionFilter

REVIEW = "pages/review.py"


def test_the_queue_starts_empty(demo_store):
    at = page(REVIEW)
    assert not at.exception
    assert at.info[0].value == "No run is marked “🚩 Needs attention” right now."


def test_marking_a_run_puts_it_in_the_queue_with_its_note(demo_store):
    at = page(REVIEW)
    form = at.get("form")[0]
    form.selectbox[0].set_value(FAILED_CODING)
    form.radio[0].set_value("needs_attention")
    form.text_area[0].set_value("Tests expect a newer signature; check with the owner.")
    form.text_input[0].set_value("Sam")
    at.button(key="FormSubmitter:mark_run-Save note").click().run()
    assert not at.exception
    notes = demo_store.annotations(FAILED_CODING)
    assert [(n["label"], n["author"], n["event_id"]) for n in notes] == [("needs_attention", "Sam", None)]
    assert at.markdown[0].value == "**1 run** · 🚩 Needs attention"
    assert at.markdown[1].value.startswith("**PAY\\-412\\: add currency to format\\_price** · ❌ failed · 25 steps")
    assert at.markdown[2].value.startswith("🚩 Needs attention — Sam: Tests expect a newer signature; check with the owner\\. · ")
    assert [p.label for p in at.get("page_link")] == ["Open the timeline"]


def test_step_notes_name_their_step_and_states_come_from_the_link(demo_store):
    demo_store.annotate(FAILED_CODING, "bad", "ignored the test output", event_id="e0019", author="Ana")
    at = page(REVIEW, params={"review": "bad"})
    assert at.selectbox(key="_url_review").value == "bad"
    assert any(m.value.startswith("👎 Bad on step 19 — Ana: ignored the test output · ") for m in at.markdown)
    at = page(REVIEW, params={"review": "unreviewed"})
    assert at.markdown[0].value == f"**{demo_store.count_sessions(SessionFilter(review='unreviewed'))} runs** · Not reviewed yet"


def test_a_note_needs_a_run(demo_store):
    at = page(REVIEW)
    at.button(key="FormSubmitter:mark_run-Save note").click().run()
    assert "Pick the run the note is about." in [e.value for e in at.error]
    assert demo_store.count_sessions(SessionFilter(review="unreviewed")) == 18


def test_empty_database(empty_store):
    at = page(REVIEW)
    assert not at.exception
    assert at.info[0].value.startswith("No runs to review yet.")


def test_no_verdict_is_preselected_and_the_name_stays_after_a_save(demo_store):
    at = page(REVIEW)
    form = at.get("form")[0]
    assert form.radio[0].value is None
    form.selectbox[0].set_value(FAILED_CODING)
    form.text_input[0].set_value("Sam")
    at.button(key="FormSubmitter:mark_run-Save note").click().run()
    assert "Pick a verdict." in [e.value for e in at.error]
    assert demo_store.annotations(FAILED_CODING) == []
    form = at.get("form")[0]
    form.radio[0].set_value("bad")
    form.text_area[0].set_value("wrong signature")
    at.button(key="FormSubmitter:mark_run-Save note").click().run()
    assert not at.exception
    assert [(n["label"], n["author"]) for n in demo_store.annotations(FAILED_CODING)] == [("bad", "Sam")]
    form = at.get("form")[0]
    assert (form.selectbox[0].value, form.radio[0].value, form.text_area[0].value) == (None, None, "")
    assert form.text_input[0].value == "Sam"  # remembered
    at.switch_page("pages/runs.py").run()
    at.switch_page(REVIEW).run()
    assert at.get("form")[0].text_input[0].value == "Sam"  # and across pages

"""The review page: runs by verdict with their notes, and marking a run."""

from __future__ import annotations

from apptest_helpers import FAILED_CODING, demo_store, empty_store, page  # noqa: F401  (fixtures)

from replay_core.storage.store import SessionFilter

REVIEW = "pages/review.py"


def test_review_opens_on_the_runs_that_need_a_verdict(demo_store):
    at = page(REVIEW)
    assert not at.exception
    assert at.markdown[0].value == "**18 runs** · Not reviewed yet"  # none flagged: the runs nobody judged yet
    demo_store.annotate(FAILED_CODING, "needs_attention", "check the owner", author="Sam")
    at = page(REVIEW)
    assert at.markdown[0].value == "**1 run** · 🚩 Needs attention"  # flagged ones first when there are some
    at = page(REVIEW, params={"review": "good"})
    assert at.info[0].value == "No run is marked “👍 Good” right now."


def test_a_queue_verdict_shows_on_review_and_in_the_runs_review_column(demo_store):
    from replay_core.storage.actor import Actor
    from replay_core.team import queues

    qid = queues.create(demo_store, "failed runs", ids=[FAILED_CODING], actor=Actor("Eve", "editor", "test"))["id"]
    reviewer = Actor("Ana", "reviewer", "test")
    item = queues.next_item(demo_store, qid, "Ana", actor=reviewer)
    verdict = queues.get(demo_store, qid)["rubric"]["verdicts"][-1]
    queues.save_review(demo_store, qid, item["id"], "Ana", verdict, note="ignored the tests", actor=reviewer)
    at = page(REVIEW)
    lines = [m.value for m in at.markdown]
    assert any(v.startswith(f"“{verdict}” in queue failed runs — Ana: ignored the tests") for v in lines), lines
    runs = page("pages/runs.py").dataframe[0].value
    assert runs[runs["id"] == FAILED_CODING]["Review"].tolist() == [f"“{verdict}” (failed runs)"]


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

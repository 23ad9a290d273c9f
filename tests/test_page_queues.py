"""The review queues page and the share page through AppTest, on the demo runs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from apptest_helpers import FAILED_CODING, demo_each_store, demo_store, page, texts  # noqa: F401  (fixtures)

from replay_core.storage.actor import Actor
from replay_core.storage.store import SessionFilter
from replay_core.storage.tables import share_links
from replay_core.team import queues, shares

QUEUES, SHARE = "pages/queues.py", "pages/share.py"
EDITOR = Actor("Eve", "editor", "test")


@pytest.fixture
def door(monkeypatch):
    """A password, so the role in session_state is the signed-in one (and visitors without it are stopped)."""
    monkeypatch.setenv("AGENT_REPLAY_PASSWORD", "look-only")


def _failed_queue(store, **kw) -> dict:
    return queues.create(store, "failed runs", flt=SessionFilter(status="failed"), actor=EDITOR, **kw)


def test_an_editor_makes_a_queue_from_a_filter(demo_store):
    at = page(QUEUES)
    assert not at.exception
    assert "No review queue yet." in at.info[0].value
    form = at.get("form")[0]
    form.text_input[0].set_value("Failed this week")
    form.selectbox[0].set_value("failed")
    form.text_area[0].set_value("Right fix — the tests pass afterwards")
    at.button(key="FormSubmitter:new_queue-Make the queue").click().run()
    assert not at.exception
    made = queues.list_queues(demo_store)
    n = demo_store.count_sessions(SessionFilter(status="failed"))
    assert [(q["name"], q["items"]) for q in made] == [("Failed this week", n)]
    assert made[0]["rubric"]["criteria"] == [{"name": "Right fix", "description": "the tests pass afterwards"}]
    assert at.success[0].value == f"Queue “Failed this week” made with {n} runs\\."
    assert at.markdown[0].value.startswith(f"**Failed this week** · {n} runs · for anyone · 1 review each")


def test_a_reviewer_works_a_queue_with_the_verdict_keys(demo_each_store, door):
    qid = _failed_queue(demo_each_store)["id"]
    at = page(QUEUES, params={"queue": str(qid)}, state={"role": "reviewer", "reviewer": "Sam"})
    assert not at.exception
    first = queues.results(demo_each_store, qid)["items"][0]
    assert first["held_by"] == "Sam"  # opening it holds it
    assert at.radio(key=f"qv_{first['id']}").value is None  # nothing preselected
    at.button(key="queue_save").click().run()
    assert "Pick a verdict first" in at.error[0].value
    at.button(key=f"qk_{first['id']}_1").click().run()  # key 2: "Bad"
    assert at.radio(key=f"qv_{first['id']}").value == "Bad"
    at.text_area(key=f"qn_{first['id']}").set_value("ignored the failing test")
    at.button(key="queue_save").click().run()
    assert not at.exception
    res = queues.results(demo_each_store, qid)
    assert res["items"][0]["reviews"][0] | {"at": None} == {
        "reviewer": "Sam",
        "verdict": "Bad",
        "criteria": {},
        "note": "ignored the failing test",
        "should_have": None,
        "at": None,
    }
    second = res["items"][1]
    assert second["held_by"] == "Sam" and at.radio(key=f"qv_{second['id']}").value is None
    at.button(key="queue_skip").click().run()
    assert queues.results(demo_each_store, qid)["items"][2]["held_by"] == "Sam"
    assert "Reviewing as **Sam**" in [c.value for c in at.caption]  # the name stays, shown, not in an open box
    assert not [t for t in at.text_input if t.key == "queue_reviewer"]
    # a new name lets go of the run the old one held, so it is not stuck for 15 minutes
    held = queues.results(demo_each_store, qid)["items"][2]["id"]
    at.button(key="reviewer_change").click().run()
    at.text_input(key="queue_reviewer").set_value("Dana").run()
    items = {it["id"]: it for it in queues.results(demo_each_store, qid)["items"]}
    holders = {it["held_by"] for it in items.values()}
    assert items[held]["held_by"] != "Sam" and "Sam" not in holders and "Dana" in holders


def test_viewers_read_results_but_do_not_work_or_make_queues(demo_store, door):
    qid = _failed_queue(demo_store, assignees=["Ana"])["id"]
    at = page(QUEUES, state={"role": "viewer"})
    assert at.button(key=f"work_{qid}").disabled
    assert not at.get("form")  # no "make a queue"
    at = page(QUEUES, params={"queue": str(qid)}, state={"role": "reviewer", "signed_name": "Ben"})
    assert "assigned to Ana; Ben is not one of them" in at.error[0].value


def test_behind_a_shared_password_a_typed_name_cannot_take_an_assigned_queue(demo_store, door):
    """Anyone holding the reviewers' password could type "Ana" and take Ana's runs: an assigned queue takes
    only a person signed in as themselves (a named token or single sign-on); an open queue still takes a typed name."""
    qid = _failed_queue(demo_store, assignees=["Ana"])["id"]
    at = page(QUEUES, params={"queue": str(qid)}, state={"role": "reviewer", "reviewer": "Ana"})
    assert not at.exception
    assert "a name typed here proves nobody" in at.error[0].value
    assert all(it["held_by"] is None for it in queues.results(demo_store, qid)["items"])
    at = page(QUEUES, state={"role": "reviewer", "reviewer": "Ana"})
    assert at.button(key=f"work_{qid}").disabled

    at = page(QUEUES, params={"queue": str(qid)}, state={"role": "reviewer", "signed_name": "Ana"})
    assert not at.exception, [e.value for e in at.error]
    assert not [e for e in at.error if "proves nobody" in e.value]
    assert "Reviewing as **Ana** (signed in)" in [c.value for c in at.caption]
    assert not [t for t in at.text_input if t.key == "queue_reviewer"]  # no box to type another name in
    assert queues.results(demo_store, qid)["items"][0]["held_by"] == "Ana"


def test_a_share_page_shows_its_run_only(demo_store, door):
    made = shares.make(demo_store, shares.RUN, session=FAILED_CODING, actor=EDITOR)
    other = demo_store.session_ids(SessionFilter(status="succeeded"))[0]
    at = page(SHARE, params={"token": made["token"], "session": other})  # not signed in
    assert not at.exception
    assert "This dashboard is private." not in texts(at)
    assert not at.sidebar.children  # no sign-out, no page list
    body = texts(at)
    assert "PAY-412: add currency to format_price" in body.replace("\\", "")
    assert demo_store.get_session(other)["name"] not in body.replace("\\", "")
    shares.revoke(demo_store, made["id"], actor=EDITOR)
    at = page(SHARE, params={"token": made["token"]})
    assert at.title[0].value == "This link no longer opens" and at.error[0].value.startswith("This link was revoked on ")
    at = page(SHARE, params={"token": "nope"})
    assert at.title[0].value == "Link not found"


def test_share_pages_for_a_comparison_and_queue_results(demo_store, door):
    other = demo_store.session_ids(SessionFilter(status="succeeded"))[0]
    pair = shares.make(demo_store, shares.COMPARE, session=FAILED_CODING, other=other, actor=EDITOR)
    at = page(SHARE, params={"token": pair["token"]})
    assert not at.exception and at.title[0].value == "Two runs compared"
    q = _failed_queue(demo_store)
    link = shares.make(demo_store, shares.QUEUE, queue=q["id"], expires=timedelta(hours=1), actor=EDITOR)
    at = page(SHARE, params={"token": link["token"]})
    assert not at.exception and at.title[0].value == "failed runs"
    with demo_store.engine.begin() as conn:
        conn.execute(share_links.update().where(share_links.c.id == link["id"]).values(expires_at=share_links.c.created_at))
    at = page(SHARE, params={"token": link["token"]})
    assert at.error[0].value.startswith("This link expired on ")


def test_an_editor_makes_lists_and_revokes_a_link_on_the_page(demo_store):
    at = page(QUEUES)
    at.selectbox(key="share_run").set_value(FAILED_CODING).run()
    at.button(key=f"share_{FAILED_CODING}_None_make").click().run()
    assert not at.exception
    url = next(c.value for c in at.code if "/share?token=" in c.value)
    token = url.split("token=", 1)[1]
    assert shares.open_link(demo_store, token, count=False)["target"] == {"session": FAILED_CODING}
    link = shares.list_links(demo_store, actor=EDITOR)[0]
    at.button(key=f"revoke_{link['id']}").click().run()
    assert shares.list_links(demo_store, actor=EDITOR)[0]["state"] == "revoked"
    assert "revoked" in texts(at)


def test_rubric_labels_and_names_are_shown_as_text(demo_store):
    hostile = "[click](http://127.0.0.1:9/x) **bold**"
    qid = queues.create(
        demo_store,
        hostile,
        ids=[FAILED_CODING],
        rubric={"verdicts": [hostile, "Fine"], "criteria": [{"name": hostile, "description": hostile}]},
        actor=EDITOR,
    )["id"]
    at = page(QUEUES, params={"queue": str(qid)}, state={"reviewer": "Sam"})
    assert not at.exception
    item = queues.results(demo_store, qid)["items"][0]["id"]
    radio = at.radio(key=f"qv_{item}")
    assert radio.options[0] == "\\[click\\]\\(http\u2060\\://127\\.0\\.0\\.1\\:9/x\\) \\*\\*bold\\*\\*"
    assert at.subheader[0].value.startswith("\\[click\\]")
    at.button(key=f"qk_{item}_0").click().run()
    at.button(key="queue_save").click().run()
    assert queues.results(demo_store, qid)["items"][0]["reviews"][0]["verdict"] == hostile  # stored as typed


def test_an_editor_shares_a_queue_results_and_deletes_the_queue(demo_store):
    qid = _failed_queue(demo_store)["id"]
    at = page(QUEUES)
    at.button(key=f"share_queue_{qid}_make").click().run()
    assert not at.exception
    token = next(c.value for c in at.code if "/share?token=" in c.value).split("token=", 1)[1]
    assert shares.open_link(demo_store, token, count=False)["target"] == {"queue": qid}
    at.button(key=f"delete_{qid}").click().run()
    assert queues.list_queues(demo_store) == [] and "No review queue yet." in at.info[0].value


def test_an_editor_makes_an_experiment_dataset_from_a_queue(demo_store):
    from replay_core.whatif import dataset as ds

    qid = _failed_queue(demo_store)["id"]
    reviewer = Actor("Ana", "reviewer", "test")
    item = queues.next_item(demo_store, qid, "Ana", actor=reviewer)
    queues.save_review(demo_store, qid, item["id"], "Ana", "Bad", should_have="Read the tests first", actor=reviewer)
    at = page(QUEUES)
    at.text_input(key=f"ds_name_{qid}").set_value("failed, reviewed")
    at.button(key=f"ds_make_{qid}").click().run()
    assert not at.exception
    cases = {c["session"]: c["expected"] for c in ds.show(demo_store, "failed, reviewed")["cases"]}
    assert len(cases) == demo_store.count_sessions(SessionFilter(status="failed"))
    assert cases[item["session_id"]] == "Read the tests first"
    assert any(s.value.startswith("Dataset “failed, reviewed” version 1") for s in at.success)

"""A chosen name wider than its column (a note's author, a reviewer, a dataset) is refused before
the write, naming the field and its limit, on SQLite as on PostgreSQL (which would otherwise raise
a DataError where SQLite kept the value): through the store, over HTTP, and on the review page.
A token holder's name (or a listed address) too wide to keep stops the settings and the app's start;
a name from elsewhere is kept cut with a mark. (A run's user and thread ids: tests/test_run_id_widths.py.)"""

from __future__ import annotations

import pytest
from apptest_helpers import FAILED_CODING, demo_store, page  # noqa: F401  (fixtures)
from cli_helpers import run_main
from starlette.testclient import TestClient
from test_queues import add_runs

from replay_core.events import SessionEvent, StepEvent
from replay_core.ingest.annotate import AUTHOR_MAX, annotate
from replay_core.ingest.pipeline import ingest
from replay_core.ingest.redacted_columns import NO_TRACE_TEXT
from replay_core.server.api import create_app
from replay_core.server.auth import TOKENS_KEY, Access, token_name
from replay_core.storage.actor import Actor
from replay_core.storage.tables import metadata
from replay_core.storage.widths import HOLDER, TooLong, width
from replay_core.team import queues

EDITOR = "tok-editor-0123456789"
AS_EDITOR = {"Authorization": f"Bearer {EDITOR}"}


@pytest.fixture
def client(store):
    access = Access(api_tokens=(EDITOR,), token_roles=("editor",), token_names=("",))
    with TestClient(create_app(store, access=access)) as c:
        yield c


def test_a_note_author_or_step_past_its_width_is_refused_and_nothing_is_written(store):
    (sid,) = add_runs(store, 1)
    with pytest.raises(TooLong, match=r"^author: at most 200 characters \(got 201\)$"):
        annotate(store, sid, "bad", "late", author="a" * 201)
    with pytest.raises(TooLong, match=r"^event_id: at most 200 characters \(got 300\)$"):
        annotate(store, sid, "bad", "late", event_id="e" * 300, author="Ana")
    assert store.annotations(sid) == []
    annotate(store, sid, "bad", "late", author="a" * AUTHOR_MAX)
    assert [n["author"] for n in store.annotations(sid)] == ["a" * 200]  # the full width is kept, uncut


def test_a_reviewer_past_its_width_is_refused_by_the_store(store):
    ids = add_runs(store, 1)
    qid = queues.create(store, "q", ids=ids, actor=Actor("Eve", "editor", "test"))["id"]
    with pytest.raises(TooLong, match=r"^reviewer: at most 200 characters \(got 201\)$"):
        store.claim_queue_item(qid, "r" * 201, queues.HOLD)
    item = store.claim_queue_item(qid, "r" * 200, queues.HOLD)
    assert item is not None and item["held_by"] == "r" * 200  # held under the whole name, so it can be let go
    with pytest.raises(TooLong, match=r"^reviewer: at most 200 characters \(got 201\)$"):
        store.save_queue_review(qid, item["id"], "r" * 201, verdict="Good")
    store.save_queue_review(qid, item["id"], "r" * 200, verdict="Good")
    assert [(r["reviewer"], r["verdict"]) for r in store.queue_reviews(qid)] == [("r" * 200, "Good")]


def test_a_dataset_name_past_its_width_is_a_422_naming_it_over_http(client, store):
    add_runs(store, 1)
    refused = client.post("/api/v1/datasets", json={"name": "d" * 201, "runs": ["run-0"]}, headers=AS_EDITOR)
    assert refused.status_code == 422
    assert refused.json()["detail"] == "name: at most 200 characters (got 201)"
    assert [e["loc"] for e in refused.json()["errors"]] == ["name"]
    assert client.get("/api/v1/datasets", headers=AS_EDITOR).json()["datasets"] == []  # nothing half-made
    made = client.post("/api/v1/datasets", json={"name": "d" * 200, "runs": ["run-0"]}, headers=AS_EDITOR)
    assert made.status_code == 201 and made.json()["name"] == "d" * 200


@pytest.mark.parametrize("width", [200, 201])
def test_a_reviewer_named_past_its_width_is_a_422_naming_it_over_http(store, width):
    """Over HTTP the reviewer is the token's name (reviewer:NAME:TOKEN): one wider than the column is refused."""
    add_runs(store, 1)
    tokens = (EDITOR, "tok-reviewer-0123456789")
    access = Access(api_tokens=tokens, token_roles=("editor", "reviewer"), token_names=("", "r" * width))
    with TestClient(create_app(store, access=access)) as client:
        qid = client.post("/api/v1/queues", json={"name": "q", "runs": ["run-0"]}, headers=AS_EDITOR).json()["id"]
        answer = client.post(f"/api/v1/queues/{qid}/next", json={}, headers={"Authorization": f"Bearer {tokens[1]}"})
    if width == 200:
        assert answer.status_code == 200 and answer.json()["item"]["held_by"] == "r" * 200
    else:
        assert answer.status_code == 422 and answer.json()["detail"].startswith("reviewer: at most 200 characters")
        assert [i["held_by"] for i in store.queue_items(qid)] == [None]


def test_the_name_boxes_stop_at_the_width_and_a_longer_remembered_name_still_saves(demo_store):
    at = page("pages/review.py", state={"reviewer": "n" * 250})
    box = at.text_input(key="mark_author")
    assert box.max_chars == AUTHOR_MAX and box.value == "n" * AUTHOR_MAX
    form = at.get("form")[0]
    form.selectbox[0].set_value(FAILED_CODING)
    form.radio[0].set_value("bad")
    at.button(key="FormSubmitter:mark_run-Save note").click().run()
    assert not at.exception
    assert [n["author"] for n in demo_store.annotations(FAILED_CODING)] == ["n" * AUTHOR_MAX]


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
TEXT = "aGVsbG8="  # "hello"


def test_a_traces_attachment_name_is_cut_to_fit_with_a_mark_and_a_wide_media_type_refused(store):
    """An attachment carried in a step's metadata: its file name is a trace's text (kept, cut to the
    column with a trailing …); a media type wider than its column, or not text, refuses that attachment, the step kept."""
    meta = {
        "attachments": [
            {"data": PNG, "media_type": "image/png", "name": "shot-" + "n" * 400},
            {"data": TEXT, "media_type": "text/" + "p" * 150, "name": "wide.txt"},
            {"data": TEXT, "media_type": 5, "name": 7},
        ]
    }
    report = ingest(
        store, [SessionEvent(session_id="s"), StepEvent(session_id="s", seq=1, event_id="e1", type="think", metadata=meta)]
    )
    kept = store.list_attachments("s")
    assert [(len(a["name"]), a["name"][:5], a["name"][-1]) for a in kept] == [(300, "shot-", "…")]
    assert [r.split(": ", 1)[1] for r in report.media_refused] == [
        "media_type: at most 100 characters (got 155)",
        "`media_type` and `name` are text",
    ]


def test_an_attachment_past_its_widths_over_http_is_no_500(store):
    access = Access(api_tokens=(EDITOR,), token_roles=("editor",), token_names=("",))
    step = {
        "event_id": "e1",
        "type": "think",
        "metadata": {"attachments": [{"data": PNG, "media_type": "image/png", "name": "n" * 400}]},
    }
    with TestClient(create_app(store, access=access)) as client:
        client.post("/api/v1/sessions", json={"session_id": "s"}, headers=AS_EDITOR)
        sent = client.post("/api/v1/sessions/s/steps", json=step, headers=AS_EDITOR)
    assert sent.status_code in (200, 201, 202), sent.text
    assert [len(a["name"]) for a in store.list_attachments("s")] == [300]


def test_a_dataset_name_past_its_width_is_a_one_line_cli_error(store, monkeypatch):
    add_runs(store, 1)
    db = store.engine.url.render_as_string(hide_password=False)
    ran = run_main(monkeypatch, ["dataset", "create", "d" * 201, "--runs", "run-0"], {"AGENT_REPLAY_DB_URL": db})
    assert ran.returncode != 0 and "name: at most 200 characters (got 201)" in ran.stderr
    assert store.list_datasets() == []


NAMED_TOKEN = "tok-named-0123456789"


@pytest.mark.parametrize("width", [200, 201])
def test_a_token_holder_named_past_the_width_stops_the_settings_naming_the_token(width):
    """A holder's name is kept whole in the audit log and on the queues, or the settings are refused:
    the error names the token by position, role and hash (never the token) and the limit."""
    tokens = f"viewer:ana:tok-viewer-0123456789,reviewer:{'r' * width}:{NAMED_TOKEN}"
    if width == 200:
        access = Access.load({TOKENS_KEY: tokens}, {})
        assert access.token_actor(f"Bearer {NAMED_TOKEN}").who == "r" * 200
        return
    with pytest.raises(TooLong) as refused:
        Access.load({TOKENS_KEY: tokens}, {})
    assert str(refused.value) == (
        f"{TOKENS_KEY}: token 2 (reviewer, {token_name(NAMED_TOKEN)}), holder {'r' * 20!r}…: at most 200 characters (got 201)"
    )
    assert NAMED_TOKEN not in str(refused.value)


def test_a_listed_address_past_the_width_stops_the_settings():
    long = "e" * 195 + "@x.org"
    with pytest.raises(TooLong, match=r"^AGENT_REPLAY_REVIEWERS: the address 'e{20}'…: at most 200 characters \(got 201\)$"):
        Access.load({"AGENT_REPLAY_REVIEWERS": f"ana@x.org,{long}"}, {"AGENT_REPLAY_EDITORS": "bo@x.org"})


def test_every_column_that_keeps_a_name_has_the_one_width():
    """Who made, held, reviewed, revoked or acknowledged something is the same name everywhere: a name
    that fits one of these columns fits them all (the token check reads this width)."""
    named = [k for k, why in NO_TRACE_TEXT.items() if "actor's name" in why or "credential" in why]
    assert len(named) >= 9
    for key in named:
        table, column = key.split(".")
        assert width(metadata.tables[table].c[column]) == width(HOLDER), key


def test_a_name_from_elsewhere_past_the_width_is_kept_cut_with_a_mark(store):
    """An e-mail from single sign-on or this machine's user@host is not the tokens' to check: kept
    shortened with the mark where it is stored, never cut silently (both databases)."""
    sso = Actor("s" * 190 + "@" + "x" * 59 + ".org", "editor", "10.0.0.1")
    add_runs(store, 1)
    store.record_audit(sso, "import", target="f.jsonl")
    qid = queues.create(store, "q", ids=["run-0"], actor=sso)["id"]
    kept = "s" * 190 + "@xxxxxxxx…"
    assert len(kept) == 200
    assert [e["who"] for e in store.audit_entries(actions=("import",))] == [kept]
    assert store.list_queues(qid)[0]["created_by"] == kept


def test_streamlit_run_with_a_holder_named_past_the_width_does_not_start(tmp_path):
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_REPLAY_")}
    env |= {"AGENT_REPLAY_DB_URL": f"sqlite:///{tmp_path / 'w.db'}", TOKENS_KEY: f"editor:{'n' * 201}:{NAMED_TOKEN}"}
    argv = [str(Path(sys.executable).parent / "streamlit"), "run", "streamlit_app.py", "--server.headless", "true"]
    argv += ["--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false"]
    ran = subprocess.run(argv, cwd=Path(__file__).resolve().parent.parent, env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 2
    assert f"agent-replay: {TOKENS_KEY}: token 1 (editor, {token_name(NAMED_TOKEN)})" in ran.stderr
    assert "at most 200 characters (got 201)" in ran.stderr and NAMED_TOKEN not in ran.stderr + ran.stdout

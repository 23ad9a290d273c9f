"""Share links over the Store, on SQLite and PostgreSQL: the token shown once and kept hashed,
expiry, revocation, one object per link, roles and the audit log."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select
from test_queues import EDITOR, REVIEWER, add_runs

from replay_core.storage.actor import PermissionDenied
from replay_core.storage.tables import share_links
from replay_core.team import queues, shares


def test_a_link_opens_its_run_and_only_the_hash_is_stored(store):
    add_runs(store, 2)
    made = shares.make(store, shares.RUN, session="run-0", actor=EDITOR, base_url="https://replay.example")
    assert made["url"] == f"https://replay.example/share?token={made['token']}"
    with store.engine.connect() as conn:
        stored = conn.execute(select(share_links)).first()._mapping
    assert made["token"] not in str(dict(stored)) and stored["token_hash"] == shares.hash_token(made["token"])
    link = shares.open_link(store, made["token"], origin="10.0.0.9")
    assert (link["kind"], link["target"]) == ("run", {"session": "run-0"})
    assert "token_hash" not in link
    listed = shares.list_links(store, actor=EDITOR)
    assert [(r["id"], r["state"], r["opened"]) for r in listed] == [(made["id"], "active", 1)]
    assert "token_hash" not in listed[0]
    assert made["expires_at"] - listed[0]["created_at"] == pytest.approx(timedelta(days=7), abs=timedelta(seconds=5))


def test_expired_revoked_and_unknown_links(store):
    add_runs(store, 2)
    short = shares.make(store, shares.COMPARE, session="run-0", other="run-1", expires=timedelta(minutes=1), actor=EDITOR)
    with store.engine.begin() as conn:  # a minute later
        conn.execute(
            share_links.update()
            .where(share_links.c.id == short["id"])
            .values(expires_at=short["expires_at"] - timedelta(minutes=2))
        )
    with pytest.raises(shares.ShareGone) as gone:
        shares.open_link(store, short["token"])
    assert gone.value.reason == "expired" and str(gone.value).startswith("This link expired on ")
    live = shares.make(store, shares.RUN, session="run-1", actor=EDITOR)
    assert shares.revoke(store, live["id"], actor=EDITOR)
    assert not shares.revoke(store, live["id"], actor=EDITOR)  # once
    with pytest.raises(shares.ShareGone, match="This link was revoked on "):
        shares.open_link(store, live["token"])
    with pytest.raises(shares.ShareNotFound):
        shares.open_link(store, "not-a-token")
    with pytest.raises(shares.ShareNotFound):
        shares.open_link(store, None)
    ops = [(e["outcome"], e["detail"]["op"]) for e in reversed(store.audit_entries(actions=["share"]))]
    assert ops == [
        ("ok", "create"),
        ("expired", "open"),
        ("ok", "create"),
        ("ok", "revoke"),
        ("revoked", "open"),
        ("unknown", "open"),  # wrong tokens are logged (and counted against their address: tests/test_origins.py)
        ("unknown", "open"),
    ]


def test_a_deleted_run_closes_its_link(store):
    add_runs(store, 1)
    made = shares.make(store, shares.RUN, session="run-0", actor=EDITOR)
    store.delete_sessions(["run-0"], actor=EDITOR)
    with pytest.raises(shares.ShareGone, match="has been deleted"):
        shares.open_link(store, made["token"])


def test_only_editors_share_and_bad_targets_are_named(store):
    add_runs(store, 1)
    for call in (
        lambda: shares.make(store, shares.RUN, session="run-0", actor=REVIEWER),
        lambda: shares.list_links(store, actor=REVIEWER),
        lambda: shares.revoke(store, 1, actor=REVIEWER),
    ):
        with pytest.raises(PermissionDenied):
            call()
    with pytest.raises(shares.ShareError, match="no run 'nope'"):
        shares.make(store, shares.RUN, session="nope", actor=EDITOR)
    with pytest.raises(shares.ShareError, match="two different runs"):
        shares.make(store, shares.COMPARE, session="run-0", other="run-0", actor=EDITOR)
    with pytest.raises(shares.ShareError, match="no queue 9"):
        shares.make(store, shares.QUEUE, queue=9, actor=EDITOR)
    qid = queues.create(store, "q", ids=["run-0"], actor=EDITOR)["id"]
    assert shares.make(store, shares.QUEUE, queue=qid, actor=EDITOR)["target"] == {"queue": qid}


@pytest.mark.parametrize(
    ("text", "value"),
    [(None, timedelta(days=7)), ("30m", timedelta(minutes=30)), ("12h", timedelta(hours=12)), (" 2w ", timedelta(weeks=2))],
)
def test_expiry_text(text, value):
    assert shares.parse_expiry(text) == value


@pytest.mark.parametrize("text", ["0d", "7", "7y", "-1d", "400d"])
def test_bad_expiry_text(text):
    with pytest.raises(shares.ShareError, match="expires"):
        shares.parse_expiry(text)

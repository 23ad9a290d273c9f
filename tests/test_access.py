"""Roles are checked inside the functions that change data, each call as each role; the audit
log says who did what from where; API tokens carry roles; password sign-in is throttled.

Every test on SQLite and PostgreSQL (the `store` fixture).
"""

from __future__ import annotations

from datetime import timedelta

import orjson
import pytest
from apptest_helpers import demo_store  # noqa: F401  (fixtures)
from starlette.testclient import TestClient

from replay_core.events import SessionEndEvent, now_utc
from replay_core.ingest.annotate import annotate
from replay_core.ingest.pipeline import import_bytes, ingest
from replay_core.server.api import create_app
from replay_core.server.auth import FREE_FAILURES, LOCKOUT, LOCKOUT_FAILURES, Access, sign_in, sign_in_wait
from replay_core.storage.actor import EDITOR, REVIEWER, ROLES, VIEWER, Actor, PermissionDenied, local
from replay_core.team import audit
from replay_core.whatif.replay import replay, replay_many
from replay_core.whatif.replay_config import ReplayConfig

FLIGHT = "demo-08-flight-bos-sfo-a"
RUN = (
    b"\n".join(
        orjson.dumps(o)
        for o in [
            {"schema": "agent-replay/v1", "kind": "session", "session_id": "imported-1", "name": "an import"},
            {
                "schema": "agent-replay/v1",
                "kind": "step",
                "session_id": "imported-1",
                "event_id": "e1",
                "seq": 1,
                "type": "think",
                "content": "thinking",
            },
        ]
    )
    + b"\n"
)


def as_role(role: str) -> Actor:
    return Actor(f"someone-{role}", role, "10.1.2.3")


def lines(store, **kw) -> list[dict]:
    return store.audit_entries(**kw)


# ---------------------------------------------------------------- each guarded function × each role

GUARDED = {
    "delete": lambda s, a: s.delete_sessions([FLIGHT], actor=a),
    "import": lambda s, a: import_bytes(s, RUN, "run.jsonl", actor=a),
    "replay": lambda s, a: replay(s, FLIGHT, None, None, ReplayConfig(model="recorded"), actor=a),
    "replay_many": lambda s, a: replay_many(s, FLIGHT, None, None, [ReplayConfig(model="recorded")], actor=a),
    "annotate": lambda s, a: annotate(s, FLIGHT, "good", "fine", actor=a),
    "read_audit": lambda s, a: audit.entries(s, a),
    "import_replace": lambda s, a: import_bytes(s, RUN, "run.jsonl", replace=True, actor=a),
    "ingest_replace": lambda s, a: ingest(s, [SessionEndEvent(session_id=FLIGHT, status="failed")], replace=True, actor=a),
}
ALLOWED = {
    "delete": {EDITOR},
    "import": {EDITOR},
    "replay": {EDITOR},
    "replay_many": {EDITOR},
    "annotate": {VIEWER, REVIEWER, EDITOR},
    "read_audit": {EDITOR},
    "import_replace": {EDITOR},
    "ingest_replace": {EDITOR},
}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name", list(GUARDED))
def test_each_guarded_function_as_each_role(demo, name, role):
    actor = as_role(role)
    before = demo.count_sessions()
    if role in ALLOWED[name]:
        GUARDED[name](demo, actor)
        return
    with pytest.raises(PermissionDenied) as exc:
        GUARDED[name](demo, actor)
    assert f"{role}s may not" in str(exc.value)
    assert demo.count_sessions() == before  # nothing deleted, imported, replaced or replayed
    assert demo.get_session(FLIGHT)["status"] != "failed" or name != "ingest_replace"
    assert demo.annotations(FLIGHT) == []
    refused = lines(demo, outcomes=("denied",))
    assert len(refused) == 1
    assert (refused[0]["who"], refused[0]["role"], refused[0]["origin"]) == (actor.who, role, "10.1.2.3")


def test_an_unknown_role_may_do_nothing(demo):
    nobody = Actor("x", "admin", "here")
    for call in GUARDED.values():
        with pytest.raises(PermissionDenied):
            call(demo, nobody)


def test_without_an_actor_the_library_acts_as_the_local_editor(demo, monkeypatch):
    monkeypatch.delenv("AGENT_REPLAY_CLI_ROLE", raising=False)
    assert local().role == EDITOR
    import_bytes(demo, RUN, "run.jsonl")
    assert lines(demo)[0]["who"] == local().who
    monkeypatch.setenv("AGENT_REPLAY_CLI_ROLE", "viewer")
    with pytest.raises(PermissionDenied):
        demo.delete_sessions([FLIGHT])
    monkeypatch.setenv("AGENT_REPLAY_CLI_ROLE", "boss")
    with pytest.raises(ValueError, match="AGENT_REPLAY_CLI_ROLE"):
        local()


# ---------------------------------------------------------------- the audit log


def test_imports_replays_and_deletes_are_in_the_audit_log(demo):
    ed = as_role(EDITOR)
    import_bytes(demo, RUN, "run.jsonl", actor=ed)
    result = replay(demo, FLIGHT, None, None, ReplayConfig(model="recorded"), actor=ed)
    demo.delete_sessions(["imported-1"], actor=ed)
    got = [(e["action"], e["outcome"], e["target"]) for e in reversed(audit.entries(demo, ed))]
    assert got == [("import", "ok", "run.jsonl"), ("replay", "ok", FLIGHT), ("delete", "ok", "imported-1")]
    entries = audit.entries(demo, ed)
    assert entries[2]["detail"] == {"format": "native", "sessions": 1, "steps": 1, "skipped_bad": 0}
    assert entries[1]["detail"]["replay"] == result.session
    assert all(e["who"] == ed.who and e["origin"] == "10.1.2.3" and e["at"] <= now_utc() for e in entries)
    assert audit.as_row(entries[0])["at"].startswith(str(now_utc().year))


def test_a_replace_is_editors_only_and_in_the_audit_log(demo, api):
    ed = as_role(EDITOR)
    status = demo.get_session(FLIGHT)["status"]
    flipped = "failed" if status != "failed" else "succeeded"
    end = SessionEndEvent(session_id=FLIGHT, status=flipped, outcome="set by hand")
    assert ingest(demo, [end], actor=ed).conflicts  # without replace: refused, kept as it was
    assert demo.get_session(FLIGHT)["status"] == status
    ingest(demo, [end], replace=True, actor=ed, source="http")
    assert demo.get_session(FLIGHT)["status"] == flipped
    (line,) = lines(demo, actions=["replace"])
    assert (line["who"], line["outcome"], line["target"], line["detail"]["sessions"]) == (ed.who, "ok", FLIGHT, 1)
    # over HTTP: ?replace=true by an editor token is logged as that token; a viewer's is refused before
    body = {"status": status, "outcome": "back"}
    r = api.post(f"/api/v1/sessions/{FLIGHT}/end?replace=true", json=body, headers=bearer("plain-old-token-0000"))
    assert r.status_code == 200, r.text
    assert demo.get_session(FLIGHT)["status"] == status
    newest = lines(demo, actions=["replace"])[0]
    assert newest["who"].startswith("api token ") and newest["role"] == EDITOR and newest["origin"] == "testclient"
    r = api.post(f"/api/v1/sessions/{FLIGHT}/end?replace=true", json={"status": flipped}, headers=bearer("view-token-0000"))
    assert r.status_code == 403 and demo.get_session(FLIGHT)["status"] == status
    assert len(lines(demo, actions=["replace"])) == 2


def test_a_refused_import_file_is_logged_as_refused(demo):
    with pytest.raises(ValueError):
        import_bytes(
            demo, b'{"kind": "session"}\n{"kind": "step", "session_id": 3}\n', "bad.jsonl", fmt="native", actor=as_role(EDITOR)
        )
    assert [(e["action"], e["outcome"]) for e in lines(demo)] == [("import", "refused")]


def test_retention_deletes_are_logged_as_the_policy(demo):
    n = demo.delete_older_than(0.0001, now=now_utc() + timedelta(days=3650))
    assert n > 0
    (line,) = lines(demo)
    assert (line["who"], line["action"], line["detail"]) == ("retention policy", "delete", {"sessions": n})


# ---------------------------------------------------------------- API tokens with roles

TOKENS = "viewer:view-token-0000,reviewer:review-token-0000,plain-old-token-0000"


@pytest.fixture
def api(demo):
    access = Access.load(env={"AGENT_REPLAY_API_TOKENS": TOKENS}, secrets={})
    with TestClient(create_app(demo, access=access)) as c:
        yield c


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def test_token_roles_are_read_and_old_tokens_stay_editors():
    access = Access.load(env={"AGENT_REPLAY_API_TOKENS": TOKENS}, secrets={})
    assert access.api_tokens == ("view-token-0000", "review-token-0000", "plain-old-token-0000")
    assert [access.token_actor(f"Bearer {t}").role for t in access.api_tokens] == [VIEWER, REVIEWER, EDITOR]
    assert access.token_actor("Bearer view-token-0000").who.startswith("api token ")
    assert "view-token" not in access.token_actor("Bearer view-token-0000").who
    assert access.token_actor("Bearer nope") is None
    listed = Access.load(env={}, secrets={"AGENT_REPLAY_API_TOKENS": ["editor:a-token-0000", "b-token-0000"]})
    assert listed.token_roles == (EDITOR, EDITOR) and listed.api_tokens == ("a-token-0000", "b-token-0000")


@pytest.mark.parametrize(
    ("token", "write"), [("view-token-0000", 403), ("review-token-0000", 403), ("plain-old-token-0000", 200)]
)
def test_api_routes_check_the_token_role(api, demo, token, write):
    assert api.get("/api/v1/sessions", headers=bearer(token)).status_code == 200
    assert api.get(f"/api/v1/sessions/{FLIGHT}", headers=bearer(token)).status_code == 200
    r = api.post("/api/v1/sessions", json={"session_id": "api-1", "name": "from the API"}, headers=bearer(token))
    assert r.status_code == write, r.text
    o = api.post("/v1/traces", content=b'{"resourceSpans": []}', headers={**bearer(token), "Content-Type": "application/json"})
    assert o.status_code == write
    if write == 403:
        assert r.json()["detail"].endswith("may not send runs over the API (allowed for: editor)")
        assert demo.get_session("api-1") is None
        assert [e["outcome"] for e in lines(demo)] == ["denied", "denied"]
    assert api.get("/api/v1/sessions", headers=bearer("wrong")).status_code == 401


# ---------------------------------------------------------------- password sign-in


ACCESS = Access(viewer_password="look-only-0000", reviewer_password="review-0000", editor_password="change-0000")


def test_each_password_opens_its_role(store):
    for password, role in (("look-only-0000", VIEWER), ("review-0000", REVIEWER), ("change-0000", EDITOR), ("x", None)):
        assert sign_in(store, ACCESS, password, f"client-{password}").role == role
    assert sorted(e["outcome"] for e in lines(store)) == ["failed", "ok", "ok", "ok"]


def test_failures_grow_a_delay_then_lock_the_client_out(store):
    t = now_utc()
    for i in range(FREE_FAILURES):
        r = sign_in(store, ACCESS, "wrong", "1.1.1.1", now=t)
        assert r.role is None and (r.wait_s > 0) == (i == FREE_FAILURES - 1)
    # the free tries above are followed by a delay that doubles with every failure
    waits = []
    n = FREE_FAILURES
    while n < LOCKOUT_FAILURES - 1:
        wait, locked = sign_in_wait(store, "1.1.1.1", t)
        waits.append(wait)
        assert not locked
        # a try while waiting is refused without looking at the password, and not counted
        early = sign_in(store, ACCESS, "change-0000", "1.1.1.1", now=t)
        assert early.role is None and early.wait_s == pytest.approx(wait)
        t += timedelta(seconds=wait)
        assert sign_in(store, ACCESS, "wrong", "1.1.1.1", now=t).role is None
        n += 1
    assert waits == sorted(waits) and waits[0] == 2 and waits[1] == 4 and max(waits) <= 60
    # another client is not held up
    assert sign_in(store, ACCESS, "change-0000", "2.2.2.2", now=t).role == EDITOR
    t += timedelta(seconds=60)
    last = sign_in(store, ACCESS, "wrong", "1.1.1.1", now=t)
    assert last.locked and last.wait_s == LOCKOUT.total_seconds()
    assert sign_in(store, ACCESS, "change-0000", "1.1.1.1", now=t + LOCKOUT - timedelta(seconds=1)).role is None
    assert sign_in(store, ACCESS, "change-0000", "1.1.1.1", now=t + LOCKOUT).role == EDITOR
    assert sign_in_wait(store, "1.1.1.1", t + LOCKOUT) == (0.0, False)  # a good sign-in clears the count
    outcomes = [e["outcome"] for e in lines(store, limit=1000, origin="1.1.1.1")]
    assert outcomes.count("failed") == LOCKOUT_FAILURES and outcomes.count("ok") == 1
    assert outcomes.count("throttled") == LOCKOUT_FAILURES - FREE_FAILURES


def test_no_password_or_token_is_ever_in_the_audit_log(store):
    sign_in(store, ACCESS, "a-wrong-guess-0000", "3.3.3.3")
    sign_in(store, ACCESS, "change-0000", "3.3.3.3")
    dump = repr(lines(store))
    assert "a-wrong-guess-0000" not in dump and "change-0000" not in dump


# ---------------------------------------------------------------- the CLI


def test_the_cli_reads_the_audit_log_and_can_be_made_a_viewer(tmp_path, monkeypatch):
    from cli_helpers import run_main

    db = f"sqlite:///{tmp_path / 'cli.db'}"
    path = tmp_path / "run.jsonl"
    path.write_bytes(RUN)

    def cli(*args, **extra):
        return run_main(monkeypatch, [*args, "--db", db], {"AGENT_REPLAY_CLI_ROLE": None, "COLUMNS": "300", **extra})

    assert cli("import", str(path)).returncode == 0
    got = cli("audit", "--json")
    assert got.returncode == 0, got.stderr
    (entry,) = orjson.loads(got.stdout)["entries"]
    assert (entry["action"], entry["outcome"], entry["origin"], entry["role"]) == ("import", "ok", "cli", "editor")
    refused = cli("import", str(path), AGENT_REPLAY_CLI_ROLE="viewer")
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        "error: viewers may not import runs (allowed for: editor) (the CLI acts as viewer: AGENT_REPLAY_CLI_ROLE)"
    ]
    assert cli("audit", AGENT_REPLAY_CLI_ROLE="reviewer").returncode == 1
    table = cli("audit")
    assert "denied" in table.stdout and "import" in table.stdout


# ---------------------------------------------------------------- the pages


@pytest.mark.parametrize(("password", "can_import"), [("look-only-0000", False), ("review-0000", False), ("change-0000", True)])
def test_the_import_page_refuses_viewers_and_reviewers(demo_store, monkeypatch, password, can_import):
    from apptest_helpers import APP
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("AGENT_REPLAY_PASSWORD", "look-only-0000")
    monkeypatch.setenv("AGENT_REPLAY_REVIEWER_PASSWORD", "review-0000")
    monkeypatch.setenv("AGENT_REPLAY_EDITOR_PASSWORD", "change-0000")
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.text_input[0].set_value(password)
    at.button(key="FormSubmitter:sign_in-Sign in").click().run()
    at = at.switch_page("pages/import_runs.py").run()
    assert not at.exception
    infos = [i.value for i in at.info]
    refused = any(v.startswith("Only editors can import runs") for v in infos)
    assert refused != can_import
    assert (len(at.get("file_uploader")) > 0) == can_import
    signed = [e for e in demo_store.audit_entries(actions=["sign_in"])]
    assert [(e["outcome"], e["origin"]) for e in signed] == [("ok", "browser")]


def test_wrong_passwords_in_the_browser_are_throttled(demo_store, monkeypatch):
    from apptest_helpers import APP
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("AGENT_REPLAY_EDITOR_PASSWORD", "change-0000")
    at = AppTest.from_file(APP, default_timeout=30).run()
    for _ in range(FREE_FAILURES):
        at.text_input[0].set_value("wrong")
        at.button(key="FormSubmitter:sign_in-Sign in").click().run()
    assert at.error[0].value.startswith("Too many wrong passwords in a row: wait 2 seconds")
    at.text_input[0].set_value("change-0000")
    at.button(key="FormSubmitter:sign_in-Sign in").click().run()  # the right one, too early: refused
    assert "role" not in at.session_state
    assert at.error[0].value.startswith("Too many wrong passwords in a row")


# ---------------------------------------------------------------- serving beyond loopback


def test_the_refusal_rule():
    from replay_core.server.auth import is_loopback
    from replay_core.server.auth import open_to_the_network_refusal as refusal

    assert all(is_loopback(a) for a in ("127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"))
    assert not any(is_loopback(a) for a in (None, "", "0.0.0.0", "::", "192.0.2.7", "my-host"))
    assert refusal("127.0.0.1", {}, {}) is None
    assert "refusing to serve address '0.0.0.0'" in refusal("0.0.0.0", {}, {})
    assert "every network interface" in refusal(None, {}, {})
    assert refusal("0.0.0.0", {"AGENT_REPLAY_ALLOW_OPEN": "1"}, {}) is None
    assert refusal("0.0.0.0", {"AGENT_REPLAY_EDITOR_PASSWORD": "x-0000"}, {}) is None
    assert refusal("0.0.0.0", {}, {"auth": {"redirect_uri": "https://x/oauth2callback"}}) is None


@pytest.mark.parametrize("allow", [False, True])
def test_streamlit_run_on_every_interface_without_a_door_exits(tmp_path, allow):
    import os
    import socket
    import subprocess
    import sys
    import time
    import urllib.request
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_REPLAY_")}
    env["AGENT_REPLAY_DB_URL"] = f"sqlite:///{tmp_path / 'open.db'}"
    if allow:
        env["AGENT_REPLAY_ALLOW_OPEN"] = "1"
    cmd = [
        str(Path(sys.executable).parent / "streamlit"),
        "run",
        "streamlit_app.py",
        "--server.address",
        "0.0.0.0",
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--logger.hideWelcomeMessage",
        "true",
    ]
    proc = subprocess.Popen(cmd, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if not allow:
            _, err = proc.communicate(timeout=90)
            assert proc.returncode == 2
            assert err.strip().splitlines() == [next(line for line in err.splitlines() if line.startswith("agent-replay: "))]
            assert "refusing to serve address '0.0.0.0' with no sign-in" in err and "AGENT_REPLAY_ALLOW_OPEN=1" in err
            return
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                    assert r.status == 200
                    break
            except OSError:
                assert proc.poll() is None, proc.stderr.read()
                time.sleep(0.5)
        else:
            pytest.fail("the app did not start with AGENT_REPLAY_ALLOW_OPEN=1")
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)


@pytest.mark.parametrize(("role", "shown"), [("viewer", False), ("reviewer", False), ("editor", True)])
def test_the_review_page_shows_the_audit_log_to_editors_only(demo_store, monkeypatch, role, shown):
    from apptest_helpers import page

    monkeypatch.setenv("AGENT_REPLAY_PASSWORD", "look-only-0000")  # a door, so the role is the signed-in one
    import_bytes(demo_store, RUN, "audited.jsonl", actor=as_role(EDITOR))
    at = page("pages/review.py", state={"role": role})
    assert not at.exception
    assert ("Audit log (editors only)" in [e.label for e in at.expander]) == shown
    if shown:
        table = at.dataframe[-1].value
        assert list(table["target"]) == ["audited.jsonl"] and list(table["origin"]) == ["10.1.2.3"]


# ---------------------------------------------------------------- general rules


def test_each_role_may_do_all_the_one_below_it_may():
    from replay_core.storage.actor import MAY

    assert MAY[VIEWER] < MAY[REVIEWER] < MAY[EDITOR]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as hst  # noqa: E402

_MARKUP = "\\`*_{}[]()#+-.!|~<>$:=^"


@settings(deadline=None)
@given(
    hst.lists(hst.sampled_from(list(_MARKUP) + list("ahtpsw@ /:0x\n") + ["http://", "www.", "a@b.co", "javascript:"])).map(
        "".join
    )
)
def test_md_escapes_every_markup_character_and_defuses_autolinks(text):
    import re

    from ui.common import WORD_JOINER, md

    out = md(text)
    # read back: drop the escapes and the joiners, and the text is what was stored
    assert re.sub(r"\\(.)", r"\1", out, flags=re.S).replace(WORD_JOINER, "") == text
    # every markup character is escaped (preceded by an odd run of backslashes)
    for m in re.finditer(r"\\*[" + re.escape(_MARKUP.replace("\\", "")) + "]", out):
        assert (len(m.group(0)) - 1) % 2 == 1, (text, out)
    plain = out.replace("\\", "")
    assert not re.search(r"(?i)(https?|ftp|mailto|xmpp):|www\.|@[A-Za-z0-9]", plain)

"""The app shell: navigation over the pages that exist, and the sign-in door."""

from __future__ import annotations

import pytest
from apptest_helpers import APP, FAILED_CODING, REPO, cursor, demo_each_store, demo_store, page, shown_step  # noqa: F401  (fixtures)
from streamlit.testing.v1 import AppTest

MINE = ("pages/runs.py", "pages/timeline.py", "pages/live.py", "pages/review.py", "pages/import_runs.py")


def test_the_navigation_lists_the_pages_that_exist():
    import streamlit_app

    listed = [path for path, *_ in streamlit_app.PAGES]
    assert set(MINE) <= set(listed)
    assert all((REPO / path).exists() for path in MINE)


def deep_links() -> list[tuple[str, dict]]:
    """Every page of the navigation, and the links into a page that tests/test_browser_deep_links.py opens."""
    import streamlit_app

    return [
        *((path, {}) for path, *_ in streamlit_app.PAGES),
        ("pages/timeline.py", {"session": FAILED_CODING, "step": "3"}),
        ("pages/share.py", {"token": "no-such-token"}),
    ]


def test_every_page_opened_by_its_address_runs_on_the_demo(demo_each_store):
    """On SQLite and on PostgreSQL: what each page reads, where the browser's run of the same links is on SQLite."""
    links = deep_links()
    assert set(MINE) <= {path for path, _ in links}
    for path, params in links:
        at = page(path, params=params)
        assert not at.exception, (path, at.exception)
        assert at.title or at.header, path


def test_an_event_link_opens_its_step_on_the_demo(demo_each_store):
    """The step a link names by its event id, read on both databases (the browser's run of it is on SQLite)."""
    named = demo_each_store.load_steps(FAILED_CODING)[17]
    at = page("pages/timeline.py", params={"session": FAILED_CODING, "event": named.event_id})
    assert not at.exception
    assert cursor(at) == named.seq and shown_step(at)["heading"].endswith(f"Tool result · step {named.seq}")
    assert at.query_params["step"] == str(named.seq) and "event" not in at.query_params


def test_the_default_page_is_the_first_screen(demo_store):
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert not at.exception
    assert at.title[0].value == "Agent Replay"  # the first screen
    assert at.session_state["role"] == "editor"


@pytest.fixture
def door(demo_store, monkeypatch):
    monkeypatch.setenv("AGENT_REPLAY_PASSWORD", "look-only")
    monkeypatch.setenv("AGENT_REPLAY_EDITOR_PASSWORD", "can-change")
    return AppTest.from_file(APP, default_timeout=30)


@pytest.mark.parametrize(("password", "role"), [("look-only", "viewer"), ("can-change", "editor")])
def test_the_password_opens_the_door_with_a_role(door, password, role):
    at = door.run()
    assert at.title[0].value == "⏪ Agent Replay"
    assert not at.dataframe  # nothing from the store is shown before signing in
    at.text_input[0].set_value("wrong")
    at.button(key="FormSubmitter:sign_in-Sign in").click().run()
    assert at.error[0].value.startswith("That password is not right.")
    assert "role" not in at.session_state
    at.text_input[0].set_value(password)
    at.button(key="FormSubmitter:sign_in-Sign in").click().run()
    assert at.session_state["role"] == role
    assert at.title[0].value == "Agent Replay"  # the first screen
    assert f"Signed in as {'an editor' if role == 'editor' else 'a viewer'}." in [c.value for c in at.sidebar.caption]
    at.button(key="sign_out").click().run()
    assert "role" not in at.session_state
    assert at.title[0].value == "⏪ Agent Replay"


def test_every_page_is_behind_the_door(door):
    door.run()
    for path in ("pages/timeline.py", "pages/live.py", "pages/review.py", "pages/import_runs.py"):
        at = door.switch_page(path).run()
        assert at.title[0].value == "⏪ Agent Replay", path


def test_passwords_can_come_from_secrets(demo_store):
    at = AppTest.from_file(APP, default_timeout=30)
    at.secrets["AGENT_REPLAY_PASSWORD"] = "from-secrets"
    at.run()
    assert at.title[0].value == "⏪ Agent Replay"
    at.text_input[0].set_value("from-secrets")
    at.button(key="FormSubmitter:sign_in-Sign in").click().run()
    assert at.session_state["role"] == "viewer"


@pytest.mark.parametrize(("email", "role"), [("lead@example.com", "editor"), ("guest@example.com", "viewer")])
def test_oidc_users_get_a_role_from_the_editor_list(demo_store, email, role):
    at = AppTest.from_file(APP, default_timeout=30)
    at.secrets["auth"] = {"redirect_uri": "http://localhost/oauth2callback", "cookie_secret": "x" * 32}
    at.secrets["AGENT_REPLAY_EDITORS"] = ["Lead@Example.com"]
    at.user = {"is_logged_in": True, "email": email, "name": "Someone"}
    at.run()
    assert not at.exception
    assert at.session_state["role"] == role
    assert at.title[0].value == "Agent Replay"  # the first screen


def test_signed_out_oidc_visitors_see_the_sign_in_button(demo_store):
    at = AppTest.from_file(APP, default_timeout=30)
    at.secrets["auth"] = {"redirect_uri": "http://localhost/oauth2callback", "cookie_secret": "x" * 32}
    at.run()
    assert [b.label for b in at.button] == ["Sign in with your company account"]
    assert not at.text_input  # no shared password configured


WARM_UP_PROBE = """
import sys, threading
from streamlit.testing.v1 import AppTest
import ui.common
raised = []
threading.excepthook = lambda args: raised.append(repr(args.exc_value))
assert not set(ui.common.WARM_UP) & set(sys.modules), "imported before any page"
at = AppTest.from_file(sys.argv[1], default_timeout=60).run()
assert not at.exception, at.exception
started = ui.common.warm_up.cache_info().currsize
thread = ui.common.warm_up()
thread.join(120)
print(started, set(ui.common.WARM_UP) <= set(sys.modules))
missing = sorted(set(ui.common.WARM_UP) - set(sys.modules))
print("alive:", thread.is_alive(), "raised:", raised, "missing:", missing, file=sys.stderr)
"""


def test_after_the_first_page_what_analytics_needs_is_imported_beside_the_app(demo_db, tmp_path):
    """The first analytics view after a start does not pay Altair's, polars' and the metrics' imports: a
    thread begins them once a page has been drawn (the first page itself imports none of them)."""
    import os
    import shutil
    import subprocess
    import sys

    db = tmp_path / "demo.db"
    shutil.copy(demo_db, db)  # the page marks idle runs incomplete: the shared file stays as made
    env = {**os.environ, "AGENT_REPLAY_DB_URL": f"sqlite:///{db}"}
    proc = subprocess.run(
        [sys.executable, "-c", WARM_UP_PROBE, APP], capture_output=True, text=True, cwd=REPO, env=env, timeout=180
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "True"], proc.stderr


def test_the_model_pages_views_import_no_http_client():
    """httpx (with rich and pygments, ~0.1 CPU-s) is imported when a model served at an address is asked whether
    it answers (replay_core/whatif/models.py), not when a page listing the models is drawn: the what-if,
    playground and experiments views imported in a fresh process load none of them."""
    import subprocess
    import sys

    views = "ui.whatif_view, ui.playground_view, ui.experiments_view"
    probe = f"import sys, {views}; print(sorted(m for m in ('httpx', 'rich', 'pygments') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]"], out.stdout + out.stderr


def test_a_named_token_opens_the_door_as_its_holder(door, demo_store, monkeypatch):
    """A named API token used as the password signs its holder in as themselves: the name comes from the
    credential (queues, audit), not from a box."""
    from replay_core.team import audit

    monkeypatch.setenv("AGENT_REPLAY_API_TOKENS", "viewer:tok-unnamed-1,reviewer:alice:tok-alice-1")
    at = door.run()
    at.text_input[0].set_value("tok-unnamed-1")  # a token with no name is a machine's, not a person's
    at.button(key="FormSubmitter:sign_in-Sign in").click().run()
    assert at.error[0].value.startswith("That password is not right.") and "role" not in at.session_state
    at.text_input[0].set_value("tok-alice-1")
    at.button(key="FormSubmitter:sign_in-Sign in").click().run()
    assert not at.exception
    assert at.session_state["role"] == "reviewer" and at.session_state["signed_name"] == "alice"
    assert at.session_state["who"] == "alice"
    signed = [e for e in audit.entries(demo_store) if e["action"] == "sign_in" and e["outcome"] == "ok"]
    assert signed[0]["who"] == "alice"

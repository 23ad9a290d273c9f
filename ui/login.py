"""The door: a shared password (viewer / reviewer / editor) or OIDC sign-in, when one is configured.

A named API token (`reviewer:alice:TOKEN`) also opens it, as that person: the name is then theirs
on the queues and in the audit log, where a shared password leaves only a typed name.

With nothing configured there is no door and everyone is an editor (the app refuses to
serve such a door-less setup beyond this machine: see streamlit_app.py). The role lands in
`st.session_state["role"]`, where `ui.common.current_role` reads it. Password tries go
through `replay_core.server.auth.sign_in`: throttled per client address, each in the audit log.
"""

from __future__ import annotations

import math

import streamlit as st

from replay_core.server.auth import EDITOR, Access
from replay_core.server.auth import sign_in as try_password
from replay_core.storage.actor import Actor
from replay_core.team.audit import SIGN_IN, record
from ui.common import SIGNED_NAME, client_origin, get_store

ROLE_NAMES = {"editor": "an editor", "reviewer": "a reviewer", "viewer": "a viewer"}


def _secrets() -> dict:
    try:
        return dict(st.secrets)
    except FileNotFoundError:  # no secrets file: env only
        return {}


def _signed_in_email() -> str | None:
    try:
        return st.user.get("email") if st.user.is_logged_in else None
    except (AttributeError, KeyError):
        return None


def _open(access: Access, secrets: dict) -> bool:
    return not access.gated and "auth" not in secrets


def no_door() -> bool:
    """Nothing configured (no password, no single sign-on): every visitor is an editor."""
    secrets = _secrets()
    return _open(Access.load(secrets=secrets), secrets)


def signed_in_role() -> str | None:
    """The visitor's role, or None while the door is closed for them."""
    secrets = _secrets()
    access = Access.load(secrets=secrets)
    if _open(access, secrets):
        st.session_state["role"] = EDITOR
        return EDITOR
    email = _signed_in_email() if "auth" in secrets else None
    if email:
        role = access.role_for_email(email)
        if st.session_state.get("who") != email:  # first run after the provider sent them back
            record(get_store(), Actor(email, role, client_origin()), SIGN_IN, detail={"method": "oidc"})
        st.session_state["role"], st.session_state["who"] = role, email
    return st.session_state.get("role")


def sign_in() -> None:
    """Draw the door (password form and/or single sign-on button) and stop the run."""
    secrets = _secrets()
    _sign_in_form(Access.load(secrets=secrets), "auth" in secrets)
    st.stop()


def _wait_text(seconds: float, locked: bool) -> str:
    s = max(1, math.ceil(seconds))
    when = f"{s} seconds" if s < 120 else f"{math.ceil(s / 60)} minutes"
    if locked:
        return f"Too many wrong passwords from this address: sign-in is locked for {when}."
    return f"Too many wrong passwords in a row: wait {when} before the next try."


def _sign_in_form(access: Access, oidc: bool) -> None:
    st.title("⏪ Agent Replay")
    st.write("This dashboard is private. Sign in to see the runs.")
    if access.gated:
        with st.form("sign_in"):
            password = st.text_input("Password", type="password")
            if st.form_submit_button("Sign in", type="primary"):
                result = try_password(get_store(), access, password, client_origin())
                if result.role:
                    st.session_state["role"] = result.role
                    st.session_state["who"] = result.who or f"{result.role} password"
                    st.session_state[SIGNED_NAME] = result.who  # a named token: this person, not a shared password
                    st.rerun()
                if result.wait_s > 0:
                    st.error(_wait_text(result.wait_s, result.locked))
                else:
                    st.error("That password is not right. Ask the person who set up Agent Replay for it.")
    if oidc:
        st.button("Sign in with your company account", on_click=st.login)


def sign_out_button() -> None:
    """In the sidebar, when there is a door to go back through."""
    if st.session_state.get("role") is None:
        return
    secrets = _secrets()
    if not Access.load(secrets=secrets).gated and "auth" not in secrets:
        return
    role = st.session_state["role"]
    st.sidebar.caption(f"Signed in as {ROLE_NAMES.get(role, 'a viewer')}.")
    if st.sidebar.button("Sign out", key="sign_out"):
        del st.session_state["role"]
        st.session_state.pop("who", None)
        st.session_state.pop(SIGNED_NAME, None)
        if _signed_in_email():
            st.logout()
        st.rerun()

"""The door: a shared password (viewer / editor) or OIDC sign-in, when one is configured.

With nothing configured there is no door and everyone is an editor. The role lands in
`st.session_state["role"]`, where `ui.common.current_role` reads it.
"""

from __future__ import annotations

import streamlit as st

from replay_core.server.auth import EDITOR, Access


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


def signed_in_role() -> str | None:
    """The visitor's role, or None while the door is closed for them."""
    secrets = _secrets()
    access = Access.load(secrets=secrets)
    oidc = "auth" in secrets
    if not access.gated and not oidc:
        st.session_state["role"] = EDITOR
        return EDITOR
    email = _signed_in_email() if oidc else None
    if email:
        st.session_state["role"] = access.role_for_email(email)
    return st.session_state.get("role")


def sign_in() -> None:
    """Draw the door (password form and/or single sign-on button) and stop the run."""
    secrets = _secrets()
    _sign_in_form(Access.load(secrets=secrets), "auth" in secrets)
    st.stop()


def _sign_in_form(access: Access, oidc: bool) -> None:
    st.title("⏪ Agent Replay")
    st.write("This dashboard is private. Sign in to see the runs.")
    if access.gated:
        with st.form("sign_in"):
            password = st.text_input("Password", type="password")
            if st.form_submit_button("Sign in", type="primary"):
                role = access.role_for(password)
                if role:
                    st.session_state["role"] = role
                    st.rerun()
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
    st.sidebar.caption(f"Signed in as {'an editor' if role == EDITOR else 'a viewer'}.")
    if st.sidebar.button("Sign out", key="sign_out"):
        del st.session_state["role"]
        if _signed_in_email():
            st.logout()
        st.rerun()

"""Who may do what: API bearer tokens and the UI's shared passwords (design.md §8).

Settings come from the environment first, then from the Streamlit secrets file
(`.streamlit/secrets.toml`, read here without Streamlit so the HTTP API can use it
too). Secrets are compared in constant time and never logged or put in messages.
"""

from __future__ import annotations

import hmac
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import config

TOKENS_KEY = "AGENT_REPLAY_API_TOKENS"
VIEWER_KEY = "AGENT_REPLAY_PASSWORD"
EDITOR_KEY = "AGENT_REPLAY_EDITOR_PASSWORD"
EDITORS_KEY = "AGENT_REPLAY_EDITORS"  # e-mail addresses that edit when signed in with OIDC
EDITOR, VIEWER = "editor", "viewer"


def secrets_files() -> list[Path]:
    """Where Streamlit looks for secrets: the project's folder, the working folder, the home folder."""
    places = [config.PROJECT_ROOT / ".streamlit", Path.cwd() / ".streamlit", Path.home() / ".streamlit"]
    return list(dict.fromkeys(p / "secrets.toml" for p in places))


def read_secrets_files(paths: list[Path] | None = None) -> dict[str, Any]:
    """The merged secrets files; earlier files win, a missing file is skipped."""
    merged: dict[str, Any] = {}
    for path in reversed(paths if paths is not None else secrets_files()):
        if path.is_file():
            with path.open("rb") as fh:
                merged.update(tomllib.load(fh))
    return merged


def _setting(name: str, env: Mapping[str, str], secrets: Mapping[str, Any]) -> Any:
    value = env.get(name)
    if value:
        return value
    try:
        return secrets.get(name)
    except (FileNotFoundError, OSError):  # st.secrets with no secrets file
        return None


def _token_list(value: Any) -> tuple[str, ...]:
    if not value:
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(t.strip() for t in map(str, items) if t.strip())


@dataclass(frozen=True)
class Access:
    """The configured secrets. `repr` hides them so they never end up in a log."""

    api_tokens: tuple[str, ...] = field(default=(), repr=False)
    viewer_password: str | None = field(default=None, repr=False)
    editor_password: str | None = field(default=None, repr=False)
    editor_emails: tuple[str, ...] = ()

    @classmethod
    def load(cls, env: Mapping[str, str] | None = None, secrets: Mapping[str, Any] | None = None) -> Access:
        """From the environment, then `secrets` (default: the secrets files)."""
        env = os.environ if env is None else env
        secrets = read_secrets_files() if secrets is None else secrets
        return cls(
            api_tokens=_token_list(_setting(TOKENS_KEY, env, secrets)),
            viewer_password=_setting(VIEWER_KEY, env, secrets) or None,
            editor_password=_setting(EDITOR_KEY, env, secrets) or None,
            editor_emails=tuple(e.lower() for e in _token_list(_setting(EDITORS_KEY, env, secrets))),
        )

    @property
    def gated(self) -> bool:
        """True when the UI asks for a password."""
        return bool(self.viewer_password or self.editor_password)

    def token_ok(self, authorization: str | None) -> bool:
        """Whether an `Authorization: Bearer <token>` header carries a configured token."""
        if not authorization or not self.api_tokens:
            return False
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return False
        offered = token.strip().encode()
        # Compare with every token, without stopping at the first match.
        return any([hmac.compare_digest(offered, t.encode()) for t in self.api_tokens])

    def role_for(self, password: str) -> str | None:
        """The role a typed password opens ('editor' first), or None."""
        offered = password.encode()
        editor = bool(self.editor_password) and hmac.compare_digest(offered, self.editor_password.encode())
        viewer = bool(self.viewer_password) and hmac.compare_digest(offered, self.viewer_password.encode())
        if editor:
            return EDITOR
        return VIEWER if viewer else None

    def role_for_email(self, email: str | None) -> str:
        """The role of a user signed in through OIDC: editor when listed, else viewer."""
        return EDITOR if email and email.lower() in self.editor_emails else VIEWER

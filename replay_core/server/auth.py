"""Who may do what: API bearer tokens and the UI's shared passwords (the roles and what each may do: docs/security.md).

Settings come from the environment first, then from the Streamlit secrets file
(`.streamlit/secrets.toml`, read here without Streamlit so the HTTP API can use it
too). Secrets are compared in constant time and never logged or put in messages.

Tokens carry a role like the UI's users, and may name who holds them:
`AGENT_REPLAY_API_TOKENS="viewer:tok1,reviewer:alice:tok2,tok3"`; a token without a `role:`
prefix is an editor's, so old configurations keep working. A token is one identity: its
holder's name (`reviewer:alice:…`), else a short hash of it ("api token 3f2a…"). That
identity is who reviews, holds items and appears in the audit log; a name typed in a body
never changes it (server/routes/team.py). A holder's name (or a listed e-mail address) wider than
the columns that keep it is refused when the settings are read, naming the token and the limit:
the server does not start rather than cut someone's name.

Password sign-in is throttled per client address (team/throttle.py): after FREE_FAILURES
failures in a row each new try waits twice as long as the last, and LOCKOUT_FAILURES in a row
lock the client out for LOCKOUT. Tries made while waiting are refused without looking at the
password (logged as `throttled`, not counted). The address is the real peer unless that is a
trusted proxy (AGENT_REPLAY_TRUSTED_PROXIES, server/origins.py).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from .. import config
from ..events import now_utc
from ..storage.actor import EDITOR, REVIEWER, ROLES, VIEWER, Actor
from ..storage.store import Store
from ..storage.widths import HOLDER, TooLong, width
from ..team import throttle
from ..team.audit import SIGN_IN, record
from ..team.throttle import LOCKOUT

TOKENS_KEY = "AGENT_REPLAY_API_TOKENS"
VIEWER_KEY = "AGENT_REPLAY_PASSWORD"
EDITOR_KEY = "AGENT_REPLAY_EDITOR_PASSWORD"
REVIEWER_KEY = "AGENT_REPLAY_REVIEWER_PASSWORD"
EDITORS_KEY = "AGENT_REPLAY_EDITORS"  # e-mail addresses that edit when signed in with OIDC
REVIEWERS_KEY = "AGENT_REPLAY_REVIEWERS"  # ... and those that review
__all__ = ["EDITOR", "LOCKOUT", "REVIEWER", "VIEWER", "Access", "SignIn", "sign_in", "sign_in_wait"]

FREE_FAILURES = 3
LOCKOUT_FAILURES = 10
SIGN_IN_THROTTLE = throttle.Throttle(SIGN_IN, FREE_FAILURES, LOCKOUT_FAILURES)


def secrets_files() -> list[Path]:
    """Where Streamlit looks for secrets: the project's folder, the working folder, the home folder."""
    checkout = [config.PROJECT_ROOT / ".streamlit"] if config.in_checkout() else []  # never inside site-packages
    places = [*checkout, Path.cwd() / ".streamlit", Path.home() / ".streamlit"]
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


def _role_tokens(entries: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """("viewer:abc", "reviewer:alice:xyz", "def") -> tokens ("abc", "xyz", "def"), roles ("viewer",
    "reviewer", "editor"), holders' names ("", "alice", "")."""
    tokens, roles, names = [], [], []
    for entry in entries:
        head, sep, rest = entry.partition(":")
        if sep and head.strip().lower() in ROLES and rest.strip():
            name, named, token = rest.partition(":")
            named = named and name.strip() and token.strip()
            tokens.append(token.strip() if named else rest.strip())
            roles.append(head.strip().lower())
            names.append(name.strip() if named else "")
        else:
            tokens.append(entry)
            roles.append(EDITOR)
            names.append("")
    return tuple(tokens), tuple(roles), tuple(names)


def _kept_whole(
    names: tuple[str, ...], roles: tuple[str, ...], tokens: tuple[str, ...], emails: dict[str, tuple[str, ...]]
) -> None:
    """TooLong for the first holder's name or listed address too wide to be kept whole where names are
    (audit log, review queues, share links), naming the token by its position, role and hash, never itself."""
    limit = width(HOLDER)
    for i, (name, role, token) in enumerate(zip(names, roles, tokens, strict=True), start=1):
        if len(name) > limit:
            holder = f"token {i} ({role}, {token_name(token)}), holder {name[:20]!r}…"
            raise TooLong(f"{TOKENS_KEY}: {holder}: at most {limit} characters (got {len(name)})")
    for key, listed in emails.items():
        for email in listed:
            if len(email) > limit:
                raise TooLong(f"{key}: the address {email[:20]!r}…: at most {limit} characters (got {len(email)})")


def _basic_secret(credentials: str) -> str:
    """The password half of HTTP Basic credentials ("" when they do not decode)."""
    try:
        decoded = base64.b64decode(credentials.strip(), validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return ""
    return decoded.partition(":")[2]


def token_name(token: str) -> str:
    """How the audit log names a token: a hash prefix, never the token."""
    return "api token " + hashlib.sha256(token.encode()).hexdigest()[:10]


@dataclass(frozen=True)
class Access:
    """The configured secrets. `repr` hides them so they never end up in a log."""

    api_tokens: tuple[str, ...] = field(default=(), repr=False)
    viewer_password: str | None = field(default=None, repr=False)
    editor_password: str | None = field(default=None, repr=False)
    editor_emails: tuple[str, ...] = ()
    token_roles: tuple[str, ...] = ()  # the role of api_tokens[i]; editor where missing
    token_names: tuple[str, ...] = ()  # who holds api_tokens[i] ("reviewer:alice:…"); its hash where empty
    reviewer_password: str | None = field(default=None, repr=False)
    reviewer_emails: tuple[str, ...] = ()

    @classmethod
    def load(cls, env: Mapping[str, str] | None = None, secrets: Mapping[str, Any] | None = None) -> Access:
        """From the environment, then `secrets` (default: the secrets files); TooLong for a name too wide to keep."""
        env = os.environ if env is None else env
        secrets = read_secrets_files() if secrets is None else secrets
        tokens, roles, names = _role_tokens(_token_list(_setting(TOKENS_KEY, env, secrets)))
        emails = {key: tuple(e.lower() for e in _token_list(_setting(key, env, secrets))) for key in (EDITORS_KEY, REVIEWERS_KEY)}
        _kept_whole(names, roles, tokens, emails)
        return cls(
            api_tokens=tokens,
            token_roles=roles,
            token_names=names,
            viewer_password=_setting(VIEWER_KEY, env, secrets) or None,
            reviewer_password=_setting(REVIEWER_KEY, env, secrets) or None,
            editor_password=_setting(EDITOR_KEY, env, secrets) or None,
            editor_emails=emails[EDITORS_KEY],
            reviewer_emails=emails[REVIEWERS_KEY],
        )

    @property
    def gated(self) -> bool:
        """True when the UI asks for a password."""
        return bool(self.viewer_password or self.reviewer_password or self.editor_password)

    def _offered_token(self, authorization: str | None) -> str | None:
        """The token of `Bearer <token>`, or of `Basic base64(<public key>:<token>)`: the Langfuse SDK sends its
        key pair so, and its secret key is then an API token here (the public key, not a secret, is not checked)."""
        if not authorization or not self.api_tokens:
            return None
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() == "basic":
            token = _basic_secret(token)
        elif scheme.lower() != "bearer":
            return None
        return token.strip() or None

    def token_actor(self, authorization: str | None, origin: str = "api") -> Actor | None:
        """Who an `Authorization: Bearer <token>` header speaks for (with the token's role), or None."""
        offered = self._offered_token(authorization)
        if offered is None:
            return None
        data = offered.encode()
        # Compare with every token, without stopping at the first match.
        hits = [hmac.compare_digest(data, t.encode()) for t in self.api_tokens]
        if not any(hits):
            return None
        i = hits.index(True)
        role = self.token_roles[i] if i < len(self.token_roles) else EDITOR
        name = self.token_names[i] if i < len(self.token_names) else ""
        return Actor(name or token_name(self.api_tokens[i]), role, origin)

    def role_for(self, password: str) -> str | None:
        """The role a typed password opens (the highest if two passwords are the same), or None.
        Every configured password is compared, in constant time, whatever the outcome."""
        offered = password.encode()
        hits = {
            role: bool(secret and hmac.compare_digest(offered, secret.encode()))
            for role, secret in (
                (EDITOR, self.editor_password),
                (REVIEWER, self.reviewer_password),
                (VIEWER, self.viewer_password),
            )
        }
        return next((role for role, hit in hits.items() if hit), None)

    def named_holder(self, password: str) -> tuple[str, str] | None:
        """(role, name) when `password` is a named token (`reviewer:alice:TOKEN`): its holder signs in to the UI
        as themselves, so what they do there is theirs, not a shared password's. Every token is compared."""
        offered = password.encode()
        names = (*self.token_names, *[""] * (len(self.api_tokens) - len(self.token_names)))
        hits = [hmac.compare_digest(offered, t.encode()) and bool(n) for t, n in zip(self.api_tokens, names, strict=True)]
        if not any(hits):
            return None
        i = hits.index(True)
        return (self.token_roles[i] if i < len(self.token_roles) else EDITOR), self.token_names[i]

    def role_for_email(self, email: str | None) -> str:
        """The role of a user signed in through OIDC: editor or reviewer when listed, else viewer."""
        email = (email or "").lower()
        if email and email in self.editor_emails:
            return EDITOR
        return REVIEWER if email and email in self.reviewer_emails else VIEWER


# ---------------------------------------------------------------- password sign-in, throttled


@dataclass(frozen=True)
class SignIn:
    """How a password try went: the role it opened, or None with the seconds to wait (0: wrong password)."""

    role: str | None
    wait_s: float = 0.0
    locked: bool = False
    who: str | None = None  # the holder's name when a named token opened the door; None for a shared password


def sign_in_wait(store: Store, origin: str, now: datetime | None = None) -> tuple[float, bool]:
    """Seconds `origin` must still wait before its next password try, and whether it is locked out."""
    return throttle.wait(store, SIGN_IN_THROTTLE, origin, now)


def sign_in(store: Store, access: Access, password: str, origin: str, *, now: datetime | None = None) -> SignIn:
    """Try a password for the client at `origin`; every try is in the audit log."""
    now = now or now_utc()
    wait, locked = sign_in_wait(store, origin, now)
    if wait > 0:
        record(
            store,
            Actor("password", "none", origin),
            SIGN_IN,
            outcome="throttled",
            at=now,
            detail={"wait_s": round(wait, 1), "locked": locked},
        )
        return SignIn(None, wait, locked)
    role, who = access.role_for(password), None
    holder = access.named_holder(password)
    if role is None and holder is not None:
        role, who = holder
    actor = Actor(who or f"{role or 'unknown'} password", role or "none", origin)
    record(store, actor, SIGN_IN, outcome="ok" if role else "failed", at=now)
    if role is None:
        wait, locked = sign_in_wait(store, origin, now)
    return SignIn(role, wait, locked, who)


# ---------------------------------------------------------------- serving beyond this machine

ALLOW_OPEN_KEY = "AGENT_REPLAY_ALLOW_OPEN"


def is_loopback(address: str | None) -> bool:
    """Whether a server address listens on this machine only ("" / None / 0.0.0.0 / :: listen everywhere)."""
    import ipaddress

    host = (address or "").strip().strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def open_to_the_network_refusal(
    address: str | None, env: Mapping[str, str] | None = None, secrets: Mapping[str, Any] | None = None
) -> str | None:
    """Why the app must not start, or None: listening beyond loopback with no password and no
    OIDC makes every visitor an editor (delete runs, launch paid replays). AGENT_REPLAY_ALLOW_OPEN=1 allows it."""
    env = os.environ if env is None else env
    if is_loopback(address) or env.get(ALLOW_OPEN_KEY, "").strip() == "1":
        return None
    secrets = read_secrets_files() if secrets is None else secrets
    if Access.load(env, secrets).gated or "auth" in secrets:
        return None
    where = f"address {address!r}" if address else "every network interface (no server.address set)"
    return (
        f"refusing to serve {where} with no sign-in: anyone who can reach it would be an editor. "
        f"Set AGENT_REPLAY_EDITOR_PASSWORD (and AGENT_REPLAY_PASSWORD), configure OIDC in .streamlit/secrets.toml, "
        f"serve on 127.0.0.1 (agent-replay serve --host 127.0.0.1), or set {ALLOW_OPEN_KEY}=1 to serve it open on purpose."
    )

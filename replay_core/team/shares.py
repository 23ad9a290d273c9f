"""Share links: a read-only link to one run, one comparison of two runs or one queue's results.

For someone without an account: opening the link needs no sign-in and shows that object
only. The token is shown once, when the link is made; the database keeps its SHA-256, so a
copy of the database opens nothing. A link has an expiry (7 days unless said) and can be
revoked; an expired or revoked link answers so, plainly. Making, revoking and every opening
(refused ones too) go in the audit log. Editors make, list and revoke links (`storage.actor`).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import datetime, timedelta
from urllib.parse import quote

from .. import config
from ..events import now_utc
from ..storage.actor import SHARE, VIEWER, Actor
from ..storage.store import Store
from . import throttle

RUN, COMPARE, QUEUE = "run", "compare", "queue"
KINDS = (RUN, COMPARE, QUEUE)
DEFAULT_EXPIRY = timedelta(days=7)
MAX_EXPIRY = timedelta(days=365)
TOKEN_BYTES = 32
_EXPIRY = re.compile(r"^\s*(\d+)\s*([mhdw])\s*$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class ShareError(ValueError):
    """A link that cannot be made as asked."""


class ShareNotFound(LookupError):
    """No link has this token (HTTP 404)."""


class ShareThrottled(ShareNotFound):
    """Too many wrong tokens from this address lately: refused without looking (HTTP 429 after `wait_s`)."""

    def __init__(self, wait_s: float):
        self.wait_s = wait_s
        super().__init__(f"too many wrong links from this address; try again in {wait_s:.0f} s")


# Wrong tokens from one address in a row (audit lines `share`, outcome `unknown`) slow it down
# like wrong passwords: a person mistypes a link now and then, a guesser tries thousands.
WRONG_TOKENS = throttle.Throttle("share", free=5, lockout=20, failed="unknown")


class ShareGone(Exception):
    """The link existed but no longer opens (HTTP 410); `reason` is expired, revoked or deleted."""

    def __init__(self, reason: str, link: dict):
        self.reason, self.link = reason, link
        super().__init__(gone_message(reason, link))


def gone_message(reason: str, link: dict) -> str:
    when = {"expired": link.get("expires_at"), "revoked": link.get("revoked_at")}.get(reason)
    at = f" on {when:%Y-%m-%d %H:%M} UTC" if when else ""
    return {
        "expired": f"This link expired{at}. Ask whoever sent it for a new one.",
        "revoked": f"This link was revoked{at}. Ask whoever sent it for a new one.",
    }.get(reason, "What this link showed has been deleted.")


def parse_expiry(text: str | None) -> timedelta:
    """'7d', '12h', '30m', '2w' (default 7 days), at most a year."""
    if text is None or not str(text).strip():
        return DEFAULT_EXPIRY
    m = _EXPIRY.match(str(text))
    if not m or int(m.group(1)) == 0:
        raise ShareError(f"expires: expected a count and a unit (30m, 12h, 7d, 2w), got {text!r}")
    value = timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})
    if value > MAX_EXPIRY:
        raise ShareError("expires: at most a year")
    return value


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def share_url(token: str, base: str | None = None) -> str:
    return f"{(base or config.public_url()).rstrip('/')}/share?token={quote(token)}"


def make(
    store: Store,
    kind: str,
    *,
    session: str | None = None,
    other: str | None = None,
    queue: int | None = None,
    expires: timedelta = DEFAULT_EXPIRY,
    actor: Actor | None = None,
    base_url: str | None = None,
) -> dict:
    """A new link (editors only): {id, token, url, expires_at, kind, target}. The token is in this answer only."""
    actor = store.authorize(actor, SHARE, f"{kind} {session or queue}")
    if kind not in KINDS:
        raise ShareError(f"kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    if not timedelta(0) < expires <= MAX_EXPIRY:
        raise ShareError("expires: between a minute and a year")
    if kind == QUEUE:
        if queue is None or not store.list_queues(int(queue)):
            raise ShareError(f"no queue {queue}")
        target: dict = {"queue": int(queue)}
    else:
        wanted = [session] + ([other] if kind == COMPARE else [])
        if kind == COMPARE and (not other or other == session):
            raise ShareError("a comparison needs two different runs")
        for sid in wanted:
            if not sid or store.get_session(sid) is None:
                raise ShareError(f"no run {sid!r}")
        target = {"session": session} | ({"other": other} if kind == COMPARE else {})
    token = secrets.token_urlsafe(TOKEN_BYTES)
    expires_at = now_utc() + expires
    share_id = store.create_share(hash_token(token), kind, target, expires_at, actor=actor)
    return {
        "id": share_id,
        "token": token,
        "url": share_url(token, base_url),
        "expires_at": expires_at,
        "kind": kind,
        "target": target,
    }


def state(link: dict, now: datetime | None = None) -> str:
    """active, expired or revoked."""
    if link.get("revoked_at") is not None:
        return "revoked"
    return "expired" if link["expires_at"] <= (now or now_utc()) else "active"


def list_links(store: Store, *, actor: Actor | None = None) -> list[dict]:
    """Every link, newest first, with its state (editors only); never a token."""
    store.authorize(actor, SHARE, "share list")
    now = now_utc()
    return [{**link, "state": state(link, now)} for link in store.list_shares()]


def revoke(store: Store, share_id: int, *, actor: Actor | None = None) -> bool:
    """Stop a link from opening (editors only); False when there is no such link or it was revoked already."""
    actor = store.authorize(actor, SHARE, f"share {share_id}")
    return store.revoke_share(int(share_id), actor=actor)


def open_link(store: Store, token: str | None, *, origin: str = "link", count: bool = True) -> dict:
    """The link behind `token` if it still opens: {id, kind, target, expires_at, …}. Raises ShareNotFound
    (ShareThrottled: too many wrong tokens from `origin` lately) or ShareGone. With `count`, the opening
    (or its refusal) goes in the audit log; a wrong token's line counts against `origin`."""
    wait, _ = throttle.wait(store, WRONG_TOKENS, origin)
    if wait > 0:
        raise ShareThrottled(wait)
    link = store.get_share(token_hash=hash_token(token)) if token and len(token) <= 200 else None
    if link is None:
        if count:
            store.record_audit(Actor("share link", "none", origin), "share", outcome="unknown", detail={"op": "open"})
        raise ShareNotFound("no such link")
    link.pop("token_hash", None)
    reason = state(link)
    if reason == "active" and not _target_exists(store, link):
        reason = "deleted"
    who = Actor(f"share link {link['id']}", VIEWER, origin)
    if count:
        store.note_share_opened(link["id"], actor=who, outcome="ok" if reason == "active" else reason)
    if reason != "active":
        raise ShareGone(reason, link)
    return link


def _target_exists(store: Store, link: dict) -> bool:
    target = link["target"]
    if link["kind"] == QUEUE:
        return bool(store.list_queues(int(target["queue"])))
    return all(store.get_session(target[k]) is not None for k in ("session", "other") if k in target)

"""Who is acting (an `Actor`: who, role, from where) and what each role may do.

Lives at the bottom of the layout, beside the Store, because the functions that change
data in every wing check it themselves (`Store.delete_sessions`, `import_bytes`,
`replay_many`, annotating…): a page that forgets to hide a button, a route or a script
still cannot do more than its role allows. Hiding buttons is only for comfort.

Roles, from least to most:

- viewer: reads runs and leaves notes (annotate);
- reviewer: also works review queues;
- editor: also imports, records over HTTP, launches replays (they cost money), deletes,
  replaces finished runs, reads the audit log, makes queues and share links.

A library caller that passes no actor is `local()`: the person at this machine, who can
open the database file anyway. The CLI is that person too, an editor unless
AGENT_REPLAY_CLI_ROLE says otherwise.
"""

from __future__ import annotations

import getpass
import os
import socket
from dataclasses import dataclass

VIEWER, REVIEWER, EDITOR = "viewer", "reviewer", "editor"
ROLES = (VIEWER, REVIEWER, EDITOR)

# actions
READ, ANNOTATE, WORK_QUEUE = "read", "annotate", "work_queue"
IMPORT, INGEST, REPLAY, DELETE, REPLACE = "import", "ingest", "replay", "delete", "replace"
READ_AUDIT, MANAGE_QUEUES, SHARE, MAINTAIN = "read_audit", "manage_queues", "share", "maintain"
MANAGE_MONITORS = "manage_monitors"

_VIEWER_MAY = frozenset({READ, ANNOTATE})
_REVIEWER_MAY = _VIEWER_MAY | {WORK_QUEUE}
_EDITOR_MAY = _REVIEWER_MAY | {
    IMPORT,
    INGEST,
    REPLAY,
    DELETE,
    REPLACE,
    READ_AUDIT,
    MANAGE_QUEUES,
    SHARE,
    MAINTAIN,
    MANAGE_MONITORS,
}
MAY: dict[str, frozenset[str]] = {VIEWER: _VIEWER_MAY, REVIEWER: _REVIEWER_MAY, EDITOR: _EDITOR_MAY}

# How an action reads in a refusal: "viewers may not import runs".
_VERBS = {
    READ: "read runs",
    ANNOTATE: "leave notes",
    WORK_QUEUE: "work review queues",
    IMPORT: "import runs",
    INGEST: "send runs over the API",
    REPLAY: "launch replays",
    DELETE: "delete runs",
    REPLACE: "replace finished runs",
    READ_AUDIT: "read the audit log",
    MANAGE_QUEUES: "make review queues",
    MANAGE_MONITORS: "add, mute or acknowledge monitors",
    SHARE: "make share links",
    MAINTAIN: "upgrade the database or rebuild its rollups",
}
CLI_ROLE_KEY = "AGENT_REPLAY_CLI_ROLE"


class PermissionDenied(Exception):
    """The actor's role does not allow the action. Routes answer 403, pages show the message."""

    def __init__(self, actor: Actor, action: str):
        self.actor, self.action = actor, action
        allowed = [r for r in ROLES if action in MAY[r]]
        who = f"{actor.role}s" if actor.role in ROLES else f"the role {actor.role!r}"
        super().__init__(f"{who} may not {_VERBS.get(action, action)} (allowed for: {', '.join(allowed) or 'nobody'})")


@dataclass(frozen=True)
class Actor:
    """Someone doing something: `who` (a name, an e-mail, "api token 3f2a…"), a role, and
    `origin` (a client address, "cli", "local")."""

    who: str
    role: str
    origin: str = "local"

    def may(self, action: str) -> bool:
        return action in MAY.get(self.role, ())

    def require(self, action: str) -> None:
        """Raise PermissionDenied unless the role allows `action`."""
        if not self.may(action):
            raise PermissionDenied(self, action)


def _local_user() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def cli_role() -> str:
    """The role AGENT_REPLAY_CLI_ROLE names (editor when unset); ValueError naming the roles for any other word."""
    given = os.environ.get(CLI_ROLE_KEY)
    role = (given or EDITOR).strip().lower()
    if role not in ROLES:
        raise ValueError(f"{CLI_ROLE_KEY}: expected one of {', '.join(ROLES)}, got {given!r}")
    return role


def local(origin: str = "local") -> Actor:
    """The person at this machine (library callers, the CLI): an editor unless
    AGENT_REPLAY_CLI_ROLE names another role."""
    return Actor(_local_user(), cli_role(), origin)


def require(actor: Actor | None, action: str) -> Actor:
    """The actor (the local user when None), checked for `action`."""
    actor = actor if actor is not None else local()
    actor.require(action)
    return actor

"""Alembic migrations, applied programmatically so no alembic.ini is needed."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # head_revision is read without SQLAlchemy (storage/plain.py)
    from sqlalchemy import Engine

HERE = Path(__file__).resolve().parent
_REVISION = re.compile(r"^(down_revision|revision)\s*=\s*['\"]?([\w.]+|None)['\"]?", re.M)


@cache
def head_revision() -> str | None:
    """The one head of the migration files, read from their `revision` lines without alembic
    (whose import is most of opening a Store for a short command); None when unclear."""
    revisions, parents = set(), set()
    for path in (HERE / "versions").glob("*.py"):
        found = dict((k, v) for k, v in _REVISION.findall(path.read_text()))
        if "revision" not in found:
            return None
        revisions.add(found["revision"])
        parents.add(found.get("down_revision"))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def at_head(engine: Engine) -> bool:
    head = head_revision()
    if head is None:
        return False
    from sqlalchemy import text

    try:
        with engine.connect() as conn:
            return list(conn.scalars(text("SELECT version_num FROM alembic_version"))) == [head]
    except Exception:  # no version table yet (a new database): alembic makes it
        return False


def alembic_config(engine: Engine):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(HERE))
    cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%"))
    cfg.attributes["engine"] = engine
    return cfg


def upgrade_to_head(engine: Engine) -> None:
    if at_head(engine):
        return
    from alembic import command

    command.upgrade(alembic_config(engine), "head")

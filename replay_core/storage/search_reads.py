"""Full-text search's SQL (storage/search.py says what a query means): the condition a step
matches a query by, on SQLite's FTS5 table or PostgreSQL's GIN expression, the runs list's text
filter, and the reads that answer a search across runs and inside one run with snippets."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Integer, and_, column, false, func, or_, select, text

from .bulk import chunks
from .engine import StoreBase, json_dumps
from .search import PG_DOCUMENT, SearchQuery, snippet
from .tables import sessions, steps

_HIT_COLUMNS = ("session_id", "seq", "event_id", "type", "tool_name", "content", "tool_args")


def step_matches(query: SearchQuery, dialect: str):
    """A condition on `steps`: the row matches `query` in the index."""
    if dialect == "sqlite":
        hits = text("SELECT rowid FROM steps_fts WHERE steps_fts MATCH :fts").bindparams(fts=query.fts5())
        return steps.c.id.in_(hits.columns(column("rowid", Integer)))
    return text(f"{PG_DOCUMENT} @@ to_tsquery('simple'::regconfig, :tsq)").bindparams(tsq=query.tsquery())


def text_clause(text_: str, dialect: str):
    """Runs whose name holds the text, or one of whose steps matches it in the search index."""
    needle = text_.replace("\x00", "").strip().lower()
    find = func.instr if dialect == "sqlite" else func.strpos  # not LIKE: no wildcards, no pattern-length limit
    named = find(func.lower(sessions.c.name), needle) > 0 if needle else false()
    query = SearchQuery.parse(text_)
    if not query:
        return named
    return or_(named, sessions.c.id.in_(select(steps.c.session_id).where(step_matches(query, dialect))))


def _hit(query: SearchQuery, row) -> dict:
    args = None if row.tool_args is None else json_dumps(row.tool_args)
    return {
        "session_id": row.session_id,
        "seq": row.seq,
        "event_id": row.event_id,
        "type": row.type,
        "tool_name": row.tool_name,
        "snippet": snippet(query, row.content, row.tool_name, args),
    }


class SearchReads(StoreBase):
    """Search across runs and inside one run."""

    def search_matches(self, session_ids: Sequence[str], text_: str | None) -> dict[str, dict]:
        """Per run, its first step (by seq) matching `text_`: {session_id: {seq, event_id, type,
        tool_name, snippet}}, the snippet as (text, matched) parts. Runs matched by name only are absent."""
        query = SearchQuery.parse(text_)
        out: dict[str, dict] = {}
        if not query or not session_ids:
            return out
        cols = [steps.c[n] for n in _HIT_COLUMNS]
        with self.engine.connect() as conn:
            for part in chunks(list(session_ids)):
                first = (
                    select(steps.c.session_id, func.min(steps.c.seq).label("seq"))
                    .where(steps.c.session_id.in_(part), step_matches(query, self.dialect))
                    .group_by(steps.c.session_id)
                    .subquery()
                )
                rows = conn.execute(
                    select(*cols)
                    .join(first, and_(steps.c.session_id == first.c.session_id, steps.c.seq == first.c.seq))
                    .order_by(steps.c.id)
                )
                for row in rows:
                    out.setdefault(row.session_id, _hit(query, row))
        return out

    def search_in_session(self, session_id: str, text_: str | None, *, limit: int = 500) -> tuple[int, list[dict]]:
        """Search inside one run: (how many steps match, the first `limit` of them in seq order with snippets)."""
        query = SearchQuery.parse(text_)
        if not query:
            return 0, []
        where = (steps.c.session_id == session_id, step_matches(query, self.dialect))
        cols = [steps.c[n] for n in _HIT_COLUMNS]
        with self.engine.connect() as conn:
            total = conn.execute(select(func.count()).select_from(steps).where(*where)).scalar_one()
            rows = conn.execute(select(*cols).where(*where).order_by(steps.c.seq, steps.c.id).limit(limit))
            return total, [_hit(query, r) for r in rows]

    def search_seqs_in_session(self, session_id: str, text_: str | None) -> list[int]:
        """The seq of every step of one run that matches `text_` in the search index, in order (no
        content read: a 100,000-step run's timeline marks and steps through all of its hits)."""
        query = SearchQuery.parse(text_)
        if not query:
            return []
        matching = select(steps.c.seq).where(steps.c.session_id == session_id, step_matches(query, self.dialect))
        with self.engine.connect() as conn:
            return list(conn.scalars(matching.order_by(steps.c.seq, steps.c.id)))

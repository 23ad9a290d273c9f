"""Full-text search over steps: what a query means, the index's SQL, and snippets.

One meaning on both databases: a query is whitespace-separated terms, all of which must
match (AND); a term is its runs of letters and digits, matched as a phrase of words, the last
word as a prefix when it has 3 or more characters ("refund" finds "refunded", "get_weather"
finds "get weather"). Everything else the user typed — FTS5 or tsquery operators, quotes,
NUL, brackets — is a separator, so no query is ever syntax: the terms are quoted by
construction, and a hostile string costs linear time.

The index: SQLite FTS5 over (content, tool_name, tool_args) as an external-content table, new steps
added by `Store.write` in one statement, deletes and updates by triggers; PostgreSQL a GIN index on
a `to_tsvector('simple', …)` expression of the same fields, with ASCII punctuation turned into
spaces first so that both databases split words the same way ("api.weather.com" is three words in
both; PostgreSQL's parser would keep it one host name). 'simple' (no stemming, no stop words)
because FTS5's unicode61 has none either, and runs are written in every language. Each field is
indexed up to INDEXED_CHARS characters (a tsvector holds at most 1 MB: a longer one would refuse the
write).

Snippets are cut in Python from the matched step's own text, so they are the same on both
databases and show the stored characters (no markup is added: the parts say what matched).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

INDEXED_CHARS = 100_000  # per field: what search sees of a step's content and arguments
MAX_TERMS = 32  # terms past this are dropped, and `SearchQuery.dropped` says how many
PREFIX_MIN = 3  # a term's last word shorter than this matches whole words only
SNIPPET_BEFORE, SNIPPET_AFTER = 60, 140

_WORD = re.compile(r"[^\W_]+")

# PostgreSQL: the indexed document, as an expression the GIN index is built on (migration
# 0010_search) and every query repeats, character for character.
PG_DOCUMENT = (
    "to_tsvector('simple'::regconfig, regexp_replace("
    f"left(coalesce(steps.content, ''), {INDEXED_CHARS}) || ' ' || coalesce(steps.tool_name, '') || ' ' || "
    f"left(coalesce(steps.tool_args::text, ''), {INDEXED_CHARS}), '[[:punct:]]+', ' ', 'g'))"
)

# SQLite: the FTS5 table and the triggers that keep it in step with `steps` (writes, deletes
# — retention included — and OTLP's in-place replacement).
_FIELDS = (f"substr({{r}}.content, 1, {INDEXED_CHARS})", "{r}.tool_name", f"substr({{r}}.tool_args, 1, {INDEXED_CHARS})")


def _values(row: str) -> str:
    return ", ".join(f.format(r=row) for f in _FIELDS)


SQLITE_INDEX = (
    "CREATE VIRTUAL TABLE steps_fts USING fts5(content, tool_name, tool_args, content='steps', content_rowid='id', "
    "tokenize='unicode61 remove_diacritics 0')",
    f"CREATE TRIGGER steps_fts_delete AFTER DELETE ON steps BEGIN "
    f"INSERT INTO steps_fts(steps_fts, rowid, content, tool_name, tool_args) VALUES ('delete', old.id, {_values('old')}); END",
    f"CREATE TRIGGER steps_fts_update AFTER UPDATE OF content, tool_name, tool_args ON steps BEGIN "
    f"INSERT INTO steps_fts(steps_fts, rowid, content, tool_name, tool_args) VALUES ('delete', old.id, {_values('old')}); "
    f"INSERT INTO steps_fts(rowid, content, tool_name, tool_args) VALUES (new.id, {_values('new')}); END",
)
# New steps are indexed by one statement per write (`Store.write`: the steps past the highest id
# it saw when its transaction took the write lock), not by an insert trigger: FTS5 flushes its
# buffer at every statement's savepoint, and a trigger under executemany made inserts 8-15×
# slower (bench_search). The same statement fills the index for the steps already stored
# (never FTS5's 'rebuild': it would index whole fields, which the delete trigger's cut values
# would then not remove).
SQLITE_FILL = f"INSERT INTO steps_fts(rowid, content, tool_name, tool_args) SELECT id, {_values('steps')} FROM steps"
SQLITE_FILL_AFTER = SQLITE_FILL + " WHERE id > ?"
SQLITE_DROP = (
    "DROP TRIGGER IF EXISTS steps_fts_update",
    "DROP TRIGGER IF EXISTS steps_fts_delete",
    "DROP TABLE IF EXISTS steps_fts",
)
PG_INDEX = f"CREATE INDEX ix_steps_search ON steps USING gin ({PG_DOCUMENT})"
PG_DROP = "DROP INDEX IF EXISTS ix_steps_search"


@dataclass(frozen=True)
class SearchQuery:
    """A user's search text as terms (each a tuple of words); `dropped` terms past MAX_TERMS."""

    terms: tuple[tuple[str, ...], ...]
    dropped: int = 0

    @classmethod
    def parse(cls, text: str | None) -> SearchQuery:
        terms = []
        for raw in (text or "").split():
            words = tuple(w.lower() for w in _WORD.findall(raw))
            if words:
                terms.append(words)
        return cls(tuple(terms[:MAX_TERMS]), max(0, len(terms) - MAX_TERMS))

    def __bool__(self) -> bool:
        return bool(self.terms)

    def fts5(self) -> str:
        """The FTS5 MATCH string: each term a quoted phrase (quotes cannot occur in a word)."""
        return " ".join(f'"{" ".join(t)}"' + ("*" if len(t[-1]) >= PREFIX_MIN else "") for t in self.terms)

    def tsquery(self) -> str:
        """The to_tsquery string: words quoted, a term's words adjacent (<->), terms ANDed."""

        def term(words: tuple[str, ...]) -> str:
            quoted = [f"'{w}'" for w in words]
            if len(words[-1]) >= PREFIX_MIN:
                quoted[-1] += ":*"
            return " <-> ".join(quoted)

        return " & ".join(f"({term(t)})" for t in self.terms)

    def pattern(self) -> re.Pattern:
        """The terms as one regex over stored text, for snippets (words escaped; linear)."""
        alts = []
        for words in self.terms:
            body = r"[\W_]+".join(re.escape(w) for w in words)
            tail = r"[^\W_]*" if len(words[-1]) >= PREFIX_MIN else r"(?![^\W_])"
            alts.append(rf"(?<![^\W_]){body}{tail}")
        return re.compile("|".join(alts), re.IGNORECASE)


def snippet(query: SearchQuery, *texts: str | None) -> list[tuple[str, bool]]:
    """A window of the first field that matches, as (text, matched) parts; "…" marks a cut.

    Empty when no field matches here (a prefix the index matched past INDEXED_CHARS).
    """
    pattern = query.pattern()
    for text in texts:
        if not text:
            continue
        first = pattern.search(text, 0, INDEXED_CHARS + 200)
        if first is None:
            continue
        start = max(0, first.start() - SNIPPET_BEFORE)
        end = min(len(text), first.end() + SNIPPET_AFTER)
        parts: list[tuple[str, bool]] = [("…", False)] if start else []
        at = start
        for hit in pattern.finditer(text, start, end):
            if hit.start() > at:
                parts.append((text[at : hit.start()], False))
            parts.append((hit.group(), True))
            at = hit.end()
        if at < end:
            parts.append((text[at:end], False))
        if end < len(text):
            parts.append(("…", False))
        return parts
    return []


def plain(parts: list[tuple[str, bool]]) -> str:
    """A snippet as one line of plain text, matches in «»: for tables and terminals."""
    return "".join(f"«{t}»" if hit else t for t, hit in parts).replace("\n", " ")

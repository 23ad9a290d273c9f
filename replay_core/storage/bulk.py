"""SQL helpers shared by the Store's sections: id lists cut to a size both databases take, a
dialect's own INSERT … ON CONFLICT, inserts sent straight to the driver with SQLAlchemy's
bind processors (the writer that rollups.py and daily.py are handed), and lookups by a list of keys
joined as VALUES or bound whole."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any

import orjson
from sqlalchemy import text
from sqlalchemy.engine import Connection, CursorResult, Row
from sqlalchemy.sql.elements import TextClause
from sqlalchemy.sql.selectable import TextualSelect

CHUNK = 500  # ids per IN (...) list: well under SQLite's and PostgreSQL's parameter limits
_COPY_FROM = 200  # rows from which PostgreSQL takes them by COPY (several times executemany's speed)


def chunks(items: Sequence, size: int = CHUNK) -> Iterator[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def dialect_module(name: str):
    """The dialect's own module (its INSERT … ON CONFLICT), imported when first needed: PostgreSQL's
    package is not loaded by a SQLite process (it was a tenth of `agent-replay stats`' imports)."""
    if name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql
    from sqlalchemy.dialects import sqlite

    return sqlite


def bind_processors(dialect, table, names: Sequence[str]) -> list[tuple[int, Any]]:
    """(position, bind processor) of the columns of `names` whose type converts its values."""
    procs = [(i, table.c[n].type._cached_bind_processor(dialect)) for i, n in enumerate(names)]
    return [(i, p) for i, p in procs if p is not None]


def bound_row(row: Sequence, converted: list[tuple[int, Any]]) -> tuple:
    """`row` with the values `bind_processors` convert converted."""
    values = list(row)
    for i, proc in converted:
        if values[i] is not None:
            values[i] = proc(values[i])
    return tuple(values)


def bulk_insert(conn: Connection, table, names: Sequence[str], rows: list, *, bound: bool = False) -> None:
    """executemany straight to the driver, with SQLAlchemy's own bind processors.

    `rows` are sequences of values in the order of `names`, converted here unless `bound`.
    The same rows through `conn.execute(insert(table), dicts)` spend most of their time in
    per-row parameter processing; this keeps the types' conversions (JSON, UTC
    datetimes) and skips the rest. On PostgreSQL a big batch goes by COPY (psycopg's
    `copy.write_row`, in the same transaction).
    """
    if not rows:
        return
    dialect = conn.dialect
    quote = dialect.identifier_preparer.quote
    mark = "?" if dialect.paramstyle == "qmark" else "%s"
    sql = f"INSERT INTO {quote(table.name)} ({', '.join(quote(n) for n in names)}) VALUES ({', '.join([mark] * len(names))})"
    if bound:  # converted already (`WriteBatch.bind`)
        params = rows
    else:
        converted = bind_processors(dialect, table, names)
        params = [bound_row(row, converted) for row in rows]
    if dialect.name == "postgresql" and len(params) >= _COPY_FROM:
        columns = ", ".join(quote(n) for n in names)
        with (
            # psycopg's own connection: its cursor is a context manager with copy(); SQLAlchemy types the generic DB-API one
            conn.connection.dbapi_connection.cursor() as cur,  # type: ignore[union-attr]
            cur.copy(f"COPY {quote(table.name)} ({columns}) FROM STDIN") as copy,
        ):
            for row in params:
                copy.write_row(row)
        return
    conn.exec_driver_sql(sql, params)


def inserted_id(result: CursorResult) -> int:
    """The id a one-row INSERT made (SQLAlchemy's type allows None, which only other statements get)."""
    key = result.inserted_primary_key
    assert key is not None
    return key[0]


def insert_new(conn: Connection, table, names: Sequence[str], rows: list, key: str) -> list:
    """One multi-row INSERT … ON CONFLICT (key) DO NOTHING RETURNING key, with SQLAlchemy's bind
    processors: the keys of the rows inserted (both databases). Built as text: SQLAlchemy's
    compiler spent ~1 ms a row on a multi-row VALUES."""
    dialect = conn.dialect
    quote = dialect.identifier_preparer.quote
    mark = "?" if dialect.paramstyle == "qmark" else "%s"
    one = f"({', '.join([mark] * len(names))})"
    sql = (
        f"INSERT INTO {quote(table.name)} ({', '.join(quote(n) for n in names)}) VALUES {', '.join([one] * len(rows))}"
        f" ON CONFLICT ({quote(key)}) DO NOTHING RETURNING {quote(key)}"
    )
    procs = [table.c[n].type._cached_bind_processor(dialect) for n in names]
    params = [proc(v) if proc is not None and v is not None else v for row in rows for v, proc in zip(row, procs, strict=True)]
    return [r[0] for r in conn.exec_driver_sql(sql, tuple(params))]


def by_values(conn: Connection, names: tuple[str, ...], rows: Sequence[tuple], tail: str, types: tuple = ()) -> list[Row]:
    """The rows of `WITH b(names) AS (VALUES rows) tail` (`types`: (column, type) of the answer to decode), in a
    statement per chunk of rows: one lookup per row by the indexes `tail` joins on, where an IN of row values
    scanned the table. Statements are built once per shape: a chunk is padded to a power of two with its last
    row again (`tail` answers a row twice alike)."""
    out: list[Row] = []
    for start in range(0, len(rows), _VALUES_CHUNK):
        part = list(rows[start : start + _VALUES_CHUNK])
        size = max(8, 1 << (len(part) - 1).bit_length())
        part += [part[-1]] * (size - len(part))
        params = {f"v{i}_{j}": value for i, row in enumerate(part) for j, value in enumerate(row)}
        out += conn.execute(_values_query(names, size, tail, types), params).all()
    return out


@lru_cache(maxsize=64)
def _values_query(names: tuple[str, ...], size: int, tail: str, types: tuple) -> TextClause | TextualSelect:
    rows = ", ".join("(" + ", ".join(f":v{i}_{j}" for j in range(len(names))) + ")" for i in range(size))
    query = text(f"WITH b({', '.join(names)}) AS (VALUES {rows}) {tail}")
    return query.columns(**dict(types)) if types else query


_VALUES_CHUNK = 256


def by_rows(conn: Connection, names: tuple[str, ...], kinds: tuple[str, ...], rows: Sequence[tuple], tail: str) -> Sequence[Any]:
    """The rows of `WITH b(names) AS (rows) tail`, the rows bound whole: one JSON array read by json_each on SQLite,
    an array a column unnested on PostgreSQL (`kinds`: each column's type there, "text" or "bigint"). One statement
    whatever their number, each row asked once: where `by_values`' padding would answer its last row many times
    over (a lookup that finds many steps a row) or bind thousands of parameters. The answer is the driver's own
    tuples (no Row objects, no result processing: for columns of plain text and numbers)."""
    if not rows:
        return []
    dialect = conn.dialect.name
    if dialect == "postgresql":
        params: dict[str, Any] = {f"c{j}": [row[j] for row in rows] for j in range(len(names))}
    else:
        params = {"rows": orjson.dumps(rows).decode()}
    result = conn.execute(_rows_query(names, kinds, tail, dialect), params)
    found = result.cursor.fetchall()
    result.close()
    return found


@lru_cache(maxsize=32)
def _rows_query(names: tuple[str, ...], kinds: tuple[str, ...], tail: str, dialect: str) -> TextClause:
    if dialect == "postgresql":
        rows = "SELECT * FROM unnest(" + ", ".join(f"CAST(:c{j} AS {kind}[])" for j, kind in enumerate(kinds)) + ")"
    else:
        rows = "SELECT " + ", ".join(f"json_extract(value, '$[{j}]')" for j in range(len(names))) + " FROM json_each(:rows)"
    return text(f"WITH b({', '.join(names)}) AS ({rows}) {tail}")

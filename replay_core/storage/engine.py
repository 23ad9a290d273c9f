"""The engine under the Store, and what every section of the Store stands on.

`make_engine` sets up JSON through orjson and SQLite for concurrent use (WAL, foreign keys, a
busy timeout, BEGIN IMMEDIATE for writes); `StoreBase` is the engine, the lock that serialises
this process's writes, and the write transaction that every writing section opens.
"""

from __future__ import annotations

import threading
from typing import Any

import orjson
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import Connection


def json_dumps(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def make_engine(url: str) -> Engine:
    """An engine with orjson for JSON columns and SQLite set up for concurrent use."""
    kwargs: dict[str, Any] = {"json_serializer": json_dumps, "json_deserializer": orjson.loads}
    if url.startswith("sqlite"):
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
    engine = create_engine(url, **kwargs)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
    return engine


def _sqlite_begin(conn: Connection) -> None:
    """SQLAlchemy's documented pysqlite recipe: the driver's own transaction handling is off
    (isolation_level None, in `_sqlite_pragmas`) and BEGIN is ours to say, IMMEDIATE for writes."""
    immediate = conn.get_execution_options().get("sqlite_immediate")
    conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()
    dbapi_conn.isolation_level = None  # BEGIN is emitted by _sqlite_begin


class _Transaction:
    """`with`: a connection with its transaction begun; committed on success, else rolled back."""

    def __init__(self, conn: Connection):
        self.conn = conn

    def __enter__(self) -> Connection:
        self._tx = self.conn.begin()
        return self.conn

    def __exit__(self, kind, exc, tb) -> None:
        try:
            if kind is None:
                self._tx.commit()
            else:
                self._tx.rollback()
        finally:
            self.conn.close()


class StoreBase:
    """The engine and write lock each section of the Store reads and writes through (`Store` sets them)."""

    engine: Engine
    _write_lock: threading.Lock

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def _write_transaction(self) -> _Transaction:
        """A write transaction: on SQLite it takes the write lock at BEGIN (IMMEDIATE), so a
        read at its start cannot be overtaken by another process's write before ours."""
        conn = self.engine.connect().execution_options(sqlite_immediate=True)
        return _Transaction(conn)

"""The engine under the Store, and what every section of the Store stands on.

`make_engine` sets up JSON through orjson and SQLite for concurrent use (WAL, foreign keys, a
busy timeout, BEGIN IMMEDIATE for writes); `StoreBase` is the engine, the lock that serialises
this process's writes, and the write transaction that every writing section opens.

The first transaction a thread begins once it holds the write lock (`with self._write_lock,
self.engine.begin()`) is a write: on SQLite it begins IMMEDIATE. A deferred one that reads first
and writes after another process committed cannot wait for that writer (SQLite answers "database
is locked" at once, its busy timeout unused); an immediate one queues behind it for up to the
busy timeout. PostgreSQL's pool tests a connection
before handing it out, so the first request after the server restarted gets a live one.
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
    else:
        kwargs["pool_pre_ping"] = True  # a connection the server dropped (a restart) is replaced, not handed out
    engine = create_engine(url, **kwargs)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
    return engine


def _sqlite_begin(conn: Connection) -> None:
    """SQLAlchemy's documented pysqlite recipe: the driver's own transaction handling is off
    (isolation_level None, in `_sqlite_pragmas`) and BEGIN is ours to say, IMMEDIATE for writes."""
    immediate = conn.get_execution_options().get("sqlite_immediate") or getattr(_writing, "first", False)
    _writing.first = False  # only the lock's first transaction: a read nested in it must not wait on its own write
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


_writing = threading.local()  # `first`: this thread took a Store's write lock and has begun nothing since


class WriteLock:
    """The lock that serialises a Store's writes in this process; the first transaction a thread begins
    under it begins IMMEDIATE on SQLite (see the module's docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> WriteLock:
        self._lock.acquire()
        _writing.first = True
        return self

    def __exit__(self, *exc: object) -> None:
        _writing.first = False
        self._lock.release()


class StoreBase:
    """The engine and write lock each section of the Store reads and writes through (`Store` sets them)."""

    engine: Engine
    _write_lock: WriteLock

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def _write_transaction(self) -> _Transaction:
        """A write transaction: on SQLite it takes the write lock at BEGIN (IMMEDIATE), so a
        read at its start cannot be overtaken by another process's write before ours."""
        conn = self.engine.connect().execution_options(sqlite_immediate=True)
        return _Transaction(conn)

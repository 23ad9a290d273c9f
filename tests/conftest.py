"""Fixtures: real databases, emptied for each test; the tiers of the suite.

`store` runs each test twice: on a SQLite file and on the local PostgreSQL server, each one per test
process, emptied before each test and opened on an engine kept for the process (see `_KEPT`).
With CI=true an unreachable PostgreSQL fails the run instead of skipping it.

Each test is marked by what it uses (see `pytest_collection_modifyitems`): `postgres`, `browser`,
`process` (the CLI as a program, a served app, a script), `served` (the API on a port, in a thread),
and `slow` for any of them. `make test-fast` runs the rest (`-m "not slow"`): SQLite only, nothing
served, no process started beside pytest's own.
"""

from __future__ import annotations

import inspect
import os
import shutil
import sqlite3
import time
import types
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Generic, TypeVar

import pytest
from hypothesis import settings
from sqlalchemy import Engine, Integer, text
from sqlalchemy.events import ConnectionEvents, PoolEvents

from replay_core import config
from replay_core.storage import rollups, room
from replay_core.storage import store as store_module
from replay_core.storage.store import Store, metadata

T = TypeVar("T")
REPO = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
PG_ADMIN_URL = os.environ.get("AGENT_REPLAY_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# Property tests run `quick` (a test's own smaller count where each example is costly: `examples`);
# `make fuzz` runs them `thorough`. No deadline: a loaded machine (all cores busy with xdist) is no failure.
settings.register_profile("quick", max_examples=50, deadline=None)
settings.register_profile("thorough", max_examples=1000, deadline=None)
HYPOTHESIS_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "quick")
settings.load_profile(HYPOTHESIS_PROFILE)


# The ingest tunables property tests set to reach rare paths (a run read whole or searched, settled at once or
# gapped, swaps carried from the first step). One left changed passes silently for the tests after it in that
# worker and fails one that counts its path, far from the cause: each test must leave them as it found them.
_TUNABLES = {room: ("READ_WHOLE", "SETTLE_SMALL", "LEAF", "SHIFT_LEAST", "SHIFT_BATCHES", "GROWTH"), rollups: ("SWAP_FROM",)}


def _tunables() -> dict[str, object]:
    return {f"{module.__name__}.{name}": getattr(module, name) for module, names in _TUNABLES.items() for name in names}


@pytest.fixture(autouse=True)
def _tunables_left_as_found():
    before = _tunables()
    yield
    changed = {name: value for name, value in _tunables().items() if value != before[name]}
    assert not changed, f"this test left ingest tunables changed: {changed} (set them with monkeypatch or mock.patch)"


def examples(quick: int) -> int:
    """`max_examples` for a property whose every example writes and reads a database: `quick` in the
    suite, the profile's count under `make fuzz` (a fixed count would hold the thorough run down too)."""
    return quick if HYPOTHESIS_PROFILE == "quick" else settings.get_profile(HYPOTHESIS_PROFILE).max_examples


# Names that, used by a test, a fixture of it, or a function or class of tests/ they call, say what it
# needs; each need is a marker, and any of them makes the test `slow`. `load` has no names: a test
# says it by hand (`@pytest.mark.load`), a load, statistical or fuzz test whose point is its size.
NEEDS = {
    "load": frozenset(),
    "postgres": frozenset({"psycopg", "PG_ADMIN_URL", "pg_database", "pg_store"}),
    "browser": frozenset({"playwright", "sync_playwright"}),
    "process": frozenset(
        {"subprocess", "Popen", "multiprocessing", "ProcessPoolExecutor", "executable", "served_app", "served_api"}
    ),
    "served": frozenset({"uvicorn"}),
}


def _names(code: types.CodeType, globs: dict, seen: set) -> set[str]:
    """The global and attribute names `code` uses, with those of the functions and classes of tests/
    it reaches through its globals, nested functions, lambdas and comprehensions included."""
    if code in seen:
        return set()
    seen.add(code)
    found = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _names(const, globs, seen)
    for name in code.co_names:
        found |= _reached(globs.get(name), seen)
    return found


def _reached(value, seen: set) -> set[str]:
    if inspect.isclass(value) and _in_tests(inspect.getmodule(value)):
        return set().union(*(_reached(v, seen) for v in vars(value).values()))
    if inspect.isfunction(value) or isinstance(value, (staticmethod, classmethod)):
        value = inspect.unwrap(value)  # a context manager's or a decorator's wrapper: the function under it
    code = getattr(value, "__code__", None)
    if code is None or not code.co_filename.startswith(str(TESTS)):
        return set()
    return _names(code, value.__globals__, seen)


def _in_tests(module) -> bool:
    return module is not None and getattr(module, "__file__", "").startswith(str(TESTS))


_REACHED: dict[object, set[str]] = {}


def _reached_from(func) -> set[str]:
    """`_reached` of a test or fixture function, walked once per collection: a fixture is used by
    hundreds of tests, and a parametrized test's function is each of its items'."""
    func = getattr(func, "__func__", func)  # a test class's method: its function, the same for every instance
    if func not in _REACHED:
        _REACHED[func] = _reached(func, set())
    return _REACHED[func]


def _needs(item: pytest.Item) -> set[str]:
    """What a test needs, from its markers and from the names its code and its fixtures' code use."""
    funcs = [item.obj, *(defs[-1].func for defs in item._fixtureinfo.name2fixturedefs.values() if defs)]
    names: set[str] = set(item.fixturenames)
    for func in funcs:
        names |= _reached_from(getattr(getattr(func, "hypothesis", None), "inner_test", func))
    return {need for need, signs in NEEDS.items() if item.get_closest_marker(need) or names & signs}


def pytest_collection_modifyitems(config, items):
    for item in items:
        needs = _needs(item)
        for need in needs:
            item.add_marker(need)
        if needs:
            item.add_marker("slow")


def _pg_url(dbname: str) -> str:
    return PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + dbname


@contextmanager
def _scratch_pg_database(prefix: str) -> Iterator[str]:
    """A new PostgreSQL database at the newest schema, dropped afterwards; skipped (failed on CI) when the
    server is unreachable."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL is required on CI and is unreachable at {PG_ADMIN_URL}: {exc}")
        pytest.skip(f"PostgreSQL unreachable at {PG_ADMIN_URL}")
    admin.execute(f'CREATE DATABASE "{name}"')
    # A commit then returns before its WAL reaches the disk (a lost commit needs the server to crash):
    # a test's commits took 7 ms each waiting on fsync, 0.2 ms without.
    admin.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    url = _pg_url(name)
    Store(url).close()  # migrate once
    try:
        yield url
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@pytest.fixture(scope="session")
def pg_database():
    """A throwaway PostgreSQL database for this test run, dropped at the end."""
    with _scratch_pg_database("agent_replay_test") as url:
        yield url


def _empty(store: Store) -> None:
    """Every table's rows deleted, children first, and every sequence set back to its start: a
    few milliseconds a test, where TRUNCATE (new files for every table and index) took 0.2–0.4 s and
    ALTER SEQUENCE … RESTART (a catalog change for each sequence) 50 ms."""
    deletes = [f"DELETE FROM {table.name}" for table in reversed(metadata.sorted_tables)]
    with store.engine.begin() as conn:
        conn.exec_driver_sql("; ".join(deletes))
        conn.execute(
            text(
                "SELECT setval(quote_ident(sequencename)::regclass, start_value, false) FROM pg_sequences"
                " WHERE schemaname = current_schema()"
            )
        )


# The engine every Store opened in this process on a worker's test database shares (`store_module.make_engine`
# is wrapped below): an engine keeps the statements it compiled (SQLAlchemy's cache key holds its dialect), and
# compiling them again for each test's new engine was a fifth of a store test's CPU. On PostgreSQL its pooled
# connections also stay open across tests, so the server does not start and warm a backend for each test.
_KEPT: dict[str, Engine] = {}
_IN_USE: set[str] = set()  # the kept databases a test holds now
_make_engine = store_module.make_engine
store_module.make_engine = lambda url: _KEPT.get(url) or _make_engine(url)
_ENGINE_EVENTS, _POOL_EVENTS = (
    tuple(name for name, value in vars(events).items() if callable(value) and not name.startswith("_"))
    for events in (ConnectionEvents, PoolEvents)
)


def _listeners(engine: Engine) -> list:
    return [list(getattr(engine.dispatch, name)) for name in _ENGINE_EVENTS] + [
        list(getattr(engine.pool.dispatch, name)) for name in _POOL_EVENTS
    ]


@contextmanager
def _kept_store(url: str, empty: Callable[[Store], None]) -> Iterator[Store]:
    """A Store on the process's kept engine for `url`, made `empty`; the engine and its open connections kept for
    the next test unless this one added listeners to it (those would outlive the test: the next test gets a new
    engine)."""
    url = config.database_url(url)
    if url in _IN_USE:
        pytest.fail(f"two fixtures of this test want the test database {url}: give one of them a file of its own")
    if url not in _KEPT:
        _KEPT[url] = _make_engine(url)
    store = Store(url, migrate=False)
    assert store.engine is _KEPT[url]
    empty(store)
    before = _listeners(store.engine)
    _IN_USE.add(url)
    try:
        yield store
    finally:
        _IN_USE.discard(url)
        if _listeners(store.engine) != before:
            _KEPT.pop(url).dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory) -> Path:
    """An empty SQLite database at the newest schema: a copy of it is what a fresh file becomes on
    opening, without migrating it again for every test (a tenth of a second each)."""
    path = tmp_path_factory.mktemp("sqlite_template") / "replay.db"
    Store(f"sqlite:///{path}").close()
    return path


@pytest.fixture(scope="session")
def sqlite_database(tmp_path_factory, sqlite_template) -> str:
    """The SQLite file of this test process's `sqlite_store`s: the template copied back into it for each test
    (schema, statistics and full-text index too, whatever the last test did to them)."""
    path = tmp_path_factory.mktemp("sqlite_store") / "replay.db"
    shutil.copyfile(sqlite_template, path)
    return f"sqlite:///{path}"


@pytest.fixture
def sqlite_store(sqlite_database, sqlite_template) -> Store:
    with _kept_store(sqlite_database, lambda store: _copy_sqlite(sqlite_template, store)) as store:
        yield store


@pytest.fixture
def pg_store(pg_database) -> Store:
    with _kept_store(pg_database, _empty) as store:
        yield store


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request) -> Store:
    """The same test on SQLite and on PostgreSQL."""
    return request.getfixturevalue("sqlite_store" if request.param == "sqlite" else "pg_store")


def _demo_file(folder: Path) -> str:
    """A SQLite file with the demo runs, the newest a minute old."""
    from replay_core.demo import load_demo

    path = folder / "demo.db"
    store = Store(f"sqlite:///{path}")
    load_demo(store, only_if_empty=False)
    store.close()
    return str(path)


class _Recent(Generic[T]):
    """A value made once per test process and made again once `max_age` old: the demo's running run is
    marked incomplete once idle for `config.idle_timeout()` (30 minutes), and a whole run of the suite may
    take longer. Making it for each module cost each worker seconds per module using it."""

    def __init__(self, make: Callable[[], T], max_age: timedelta) -> None:
        self.make, self.max_age, self.made = make, max_age, None

    def get(self) -> T:
        if self.made is None or time.monotonic() - self.made[0] > self.max_age.total_seconds():
            self.made = (time.monotonic(), self.make())
        return self.made[1]


DEMO_MAX_AGE = config.idle_timeout() / 3  # a module started on the oldest copy has 20 minutes to finish


@pytest.fixture(scope="session")
def demo_files(tmp_path_factory) -> _Recent[str]:
    return _Recent(lambda: _demo_file(tmp_path_factory.mktemp("demo")), DEMO_MAX_AGE)


@pytest.fixture(scope="module")
def demo_db(demo_files) -> str:
    """The demo runs for a module's tests, which copy the file (never change it)."""
    return demo_files.get()


@pytest.fixture(scope="session")
def pg_demo_tables(pg_database) -> _Recent[dict[str, bytes]]:
    return _Recent(lambda: _pg_demo_rows(pg_database), DEMO_MAX_AGE)


@pytest.fixture(scope="module")
def pg_demo_rows(pg_demo_tables) -> dict[str, bytes]:
    """The demo runs on PostgreSQL as each table's rows (COPY's text), for a module's tests to copy in."""
    return pg_demo_tables.get()


def _pg_demo_rows(pg_database: str) -> dict[str, bytes]:
    """The demo runs loaded into the worker's database and copied out (loading them takes seconds;
    copying them in, a fraction of one); the database is left empty."""
    from replay_core.demo import load_demo

    store = Store(pg_database, migrate=False)
    try:
        _empty(store)
        load_demo(store, only_if_empty=False)
        with store.engine.connect() as conn:
            cursor = conn.connection.driver_connection.cursor()
            rows = {}
            for table in metadata.sorted_tables:
                with cursor.copy(f"COPY {table.name} TO STDOUT") as copy:
                    rows[table.name] = b"".join(bytes(chunk) for chunk in copy)
        _empty(store)
    finally:
        store.close()
    return rows


def _copy_in(store: Store, rows: dict[str, bytes]) -> None:
    """`rows` into `store`'s empty tables, each table's id sequence moved past them (one statement)."""
    with store.engine.begin() as conn:
        cursor = conn.connection.driver_connection.cursor()
        for table in metadata.sorted_tables:
            if rows[table.name]:
                with cursor.copy(f"COPY {table.name} FROM STDIN") as copy:
                    copy.write(rows[table.name])
        conn.exec_driver_sql(_SEQUENCES_PAST_ROWS)


_SEQUENCES_PAST_ROWS = "SELECT " + ", ".join(
    f"setval(pg_get_serial_sequence('{table.name}', '{column.name}'),"
    f" coalesce((SELECT max({column.name}) FROM {table.name}), 0) + 1, false)"
    for table in metadata.sorted_tables
    for column in table.primary_key.columns
    if isinstance(column.type, Integer)
)


@pytest.fixture
def demo(store, demo_db, request) -> Store:
    """`store` with the demo runs: on SQLite a copy of the module's demo file, on PostgreSQL the module's
    demo rows copied in (loading them for each test took seconds)."""
    if store.dialect == "sqlite":
        _copy_sqlite(demo_db, store)
    else:
        _copy_in(store, request.getfixturevalue("pg_demo_rows"))
    return store


def _copy_sqlite(path: str | Path, store: Store) -> None:
    """The database at `path` copied into `store`'s through SQLite's backup API, which takes the locks a writer
    takes: a connection still open on the file (a write worker's) sees the new pages, where a file copied over it
    read as `disk I/O error`."""
    source = sqlite3.connect(path)
    target = store.engine.raw_connection()
    try:
        source.backup(target.driver_connection)
    finally:
        target.close()
        source.close()


# ---------------------------------------------------------------------------- the app in a browser

# Chromium's old headless shell (Debian's chromium-headless-shell, the version of its chromium): what Playwright
# itself runs headless, without the full browser's UI layer, at half the CPU a page (bench/RESULTS.md). Playwright's
# own flags are all it needs (headless, no sandbox, no background networking, component updates nor first run).
CHROMIUM = "/usr/bin/chromium-headless-shell"


@pytest.fixture(scope="session")
def demo_app(tmp_path_factory) -> tuple[str, str]:
    """The app served on the demo runs, for the browser tests that only read (and count from its database,
    whatever the app has marked idle there): one per test process, on SQLite. Its tests check what the browser
    does with a page; what the pages read from PostgreSQL is checked by their AppTests on `demo_each_store`
    (CONTRIBUTING.md, Tests). Its base URL and its database's URL."""
    from apptest_helpers import served_app

    url = f"sqlite:///{_demo_file(tmp_path_factory.mktemp('demo_app'))}"
    with served_app(url) as base:
        yield base, url


class _Chromium:
    """Chromium's headless shell, driven by Playwright, and one browser context that tests' pages share: one per test process
    (the class is the instance; its fixtures name the class, so the conftest hook finds Playwright in its methods).

    Open from the first test that uses it until a test of another module that does not (`pytest_runtest_teardown`
    below): the browser modules sit together in collection order, so a worker launches it about once for them
    all, not once per module. Not for the whole process: while Playwright's sync API is open it keeps an event
    loop marked running in this thread, and a later test calling asyncio.run() would fail. Within a module it
    stays open to the module's end, as a module-scoped fixture would.

    A page of the shared context costs less than one in a context of its own (what `Browser.new_page` makes):
    Streamlit's 4 MB of scripts come from the context's HTTP cache, not from the served app again (figures in
    bench/RESULTS.md). Between tests `reset` clears what a test could leave for the next, through the keeper:
    a page kept open whose requests are all answered here with an empty document, so it opens any origin.
    """

    playwright = browser = context = keeper = None
    origins: set[str] = set()  # of the documents the shared context loaded since the last reset

    @classmethod
    def launched(cls):
        if cls.browser is None or not cls.browser.is_connected():
            cls.close()
            if not shutil.which(CHROMIUM):
                pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium-headless-shell package (.ci/run does)")
            from playwright.sync_api import sync_playwright

            cls.playwright = sync_playwright().start()
            cls.browser = cls.playwright.chromium.launch(executable_path=CHROMIUM)
        return cls.browser

    @classmethod
    def shared(cls):
        if cls.context is None:
            cls.context = cls.launched().new_context()
            cls.context.on("page", lambda page: page.on("framenavigated", cls._visited))
            cls.keeper = cls.context.new_page()
            cls.keeper.route("**/*", lambda route: route.fulfill(body="<html></html>", content_type="text/html"))
        return cls.context

    @classmethod
    def _visited(cls, frame) -> None:
        from urllib.parse import urlsplit

        parts = urlsplit(frame.url)
        if parts.scheme in ("http", "https"):
            cls.origins.add(f"{parts.scheme}://{parts.netloc}")

    @classmethod
    def reset(cls, keep: set) -> None:
        """The shared context as a new one but for its cache: its pages but `keep` and the keeper closed (popups
        too), its cookies and permissions cleared, and each origin it visited cleared of local storage and
        IndexedDB (session storage went with its tab)."""
        context = cls.context
        for page in context.pages:
            if page not in keep and page is not cls.keeper:
                page.close()
        context.clear_cookies()
        context.clear_permissions()
        for origin in sorted(cls.origins):
            cls.keeper.goto(origin)
            cls.keeper.evaluate(CLEAR_STORAGE)
        cls.origins.clear()

    @classmethod
    def close(cls) -> None:
        playwright, browser = cls.playwright, cls.browser
        cls.playwright = cls.browser = cls.context = cls.keeper = None
        cls.origins.clear()
        if playwright is not None:
            try:
                if browser is not None and browser.is_connected():
                    browser.close()
            finally:
                playwright.stop()


CLEAR_STORAGE = """async () => {
  localStorage.clear();
  const gone = (name) => new Promise((done) => {
    const asked = indexedDB.deleteDatabase(name);
    asked.onsuccess = asked.onerror = asked.onblocked = done;
  });
  await Promise.all((await indexedDB.databases()).map((db) => gone(db.name)));
}"""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Chromium closed after the fixtures of `item`, unless the next test is of the same module or uses it."""
    try:
        return (yield)
    finally:
        if nextitem is None or (nextitem.path != item.path and "chromium" not in getattr(nextitem, "fixturenames", ())):
            _Chromium.close()


def pytest_sessionfinish(session):
    _Chromium.close()  # a run stopped early (-x, a keyboard interrupt) has no last teardown


@pytest.fixture(scope="module")
def chromium():
    """The shared Chromium (`_Chromium`); a page opened on it with `new_page` has a context of its own."""
    return _Chromium.launched()


@pytest.fixture(scope="module")
def browser_context(chromium):
    """The shared context, for a module's own tab (its pages stay open across the `browser` fixture's resets)."""
    return _Chromium.shared()


class _Pages:
    """`new_page` for one test: in the shared context when at most a viewport is asked (the page resized to it),
    in a context of its own otherwise (`is_mobile`, `has_touch`, a user agent, storage to start from...)."""

    def __init__(self, browser, context):
        self.browser, self.context, self.own = browser, context, []

    def new_page(self, **options):
        if set(options) <= {"viewport"}:
            page = self.context.new_page()
            if options.get("viewport"):
                page.set_viewport_size(options["viewport"])
            return page
        page = self.browser.new_page(**options)
        self.own.append(page)
        return page


@pytest.fixture
def browser(chromium, browser_context):
    """Pages for a test; afterwards closed, and the shared context left with nothing of this test but its cache."""
    kept = set(browser_context.pages)  # a module's tab
    pages = _Pages(chromium, browser_context)
    yield pages
    for page in pages.own:
        page.close()
    _Chromium.reset(kept)

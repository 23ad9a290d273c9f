"""Full-text search over steps (storage/search.py), on SQLite FTS5 and PostgreSQL GIN.

The index must hold exactly the stored steps after every write and delete, mean the same on
both databases, and take any string a user can type without an error.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from alembic import command
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from replay_core.events import SessionEvent, StepEvent, now_utc
from replay_core.storage import retention
from replay_core.storage.migrations import alembic_config
from replay_core.storage.search import SearchQuery, plain, snippet
from replay_core.storage.store import SessionFilter, Store


def found(store: Store, text: str) -> list[str]:
    return sorted(r["id"] for r in store.list_sessions(SessionFilter(text=text), limit=500))


def seed(store: Store) -> None:
    store.write(
        [
            SessionEvent(session_id="w", name="Weather desk"),
            StepEvent(session_id="w", type="think", content="Checking api.weather.com for the REFUNDED order"),
            StepEvent(session_id="w", type="tool_call", tool_name="get_weather", tool_args={"city": "Zürich", "when": "today"}),
            StepEvent(session_id="q", type="think", content='a "quoted" NEAR(x y) OR * -minus ^caret'),
            StepEvent(session_id="q", type="think", content="the timeout hit at step two"),
        ]
    )


def test_words_prefixes_tools_and_arguments_are_found(store):
    seed(store)
    assert found(store, "weather") == ["w"]
    assert found(store, "refund") == ["w"]  # a prefix of 3+ characters
    assert found(store, "re") == []  # shorter: whole words only
    assert found(store, "get_weather") == ["w"]  # the tool name
    assert found(store, "zürich") == ["w"]  # an argument value, case folded
    assert found(store, "api.weather.com") == ["w"]  # the same words on both databases
    assert found(store, "timeout step") == ["q"]  # every term, anywhere in the step
    assert found(store, "timeout weather") == []
    assert found(store, "Weather desk") == ["w"]  # the run's name still counts
    assert found(store, "hit at step") == ["q"]


@pytest.mark.parametrize(
    "hostile",
    [
        '"',
        '""',
        "'",
        "NEAR(",
        "*",
        "a OR b",
        "-x",
        "^",
        "col:x",
        "\x00",
        "\x00weather",
        "(((",
        "\\",
        "%",
        "_",
        "x" * 200_000,
        "weather " * 5000,
        "🙂",
        "\u202e",
    ],
)
def test_hostile_queries_never_error(store, hostile):
    seed(store)
    store.list_sessions(SessionFilter(text=hostile))
    store.count_sessions(SessionFilter(text=hostile))
    store.search_matches(["w", "q"], hostile)
    store.search_in_session("w", hostile)
    if "weather" in hostile:
        assert found(store, hostile) == ["w"]
    if hostile in ("%", "_"):
        assert found(store, hostile) == []  # never a wildcard


def test_matches_carry_the_step_and_a_snippet_of_its_own_text(store):
    seed(store)
    hits = store.search_matches(["w", "q"], "weather")
    assert set(hits) == {"w"}
    assert (hits["w"]["seq"], hits["w"]["type"]) == (1, "think")
    assert plain(hits["w"]["snippet"]) == "Checking api.«weather».com for the REFUNDED order"
    total, steps = store.search_in_session("w", "weather")
    assert total == 2
    assert [s["seq"] for s in steps] == [1, 2]
    assert steps[1]["snippet"] == [("get_", False), ("weather", True)]  # the tool name, its word marked
    assert store.search_in_session("w", "weather", limit=1)[0] == 2


def test_the_index_follows_deletes_and_retention(store, monkeypatch):
    seed(store)
    store.delete_sessions(["q"])
    assert found(store, "timeout") == []
    old = now_utc() - timedelta(days=40)
    store.write(
        [SessionEvent(session_id="old", started_at=old), StepEvent(session_id="old", type="think", content="ancient kumquat")]
    )
    assert found(store, "kumquat") == ["old"]
    monkeypatch.setenv("AGENT_REPLAY_RETENTION_DAYS", "30")
    assert retention.apply_policy(store) == 1
    assert found(store, "kumquat") == []
    assert found(store, "weather") == ["w"]
    store.write([StepEvent(session_id="new", type="think", content="fresh kumquat")])
    assert found(store, "kumquat") == ["new"]


def test_a_step_moved_between_runs_is_found_in_its_new_run(store):
    store.write([StepEvent(session_id="prov", type="think", content="provisional pomelo")])
    store.write([StepEvent(session_id="real", type="think", content="first")])
    store.move_session_steps("prov", "real")
    assert found(store, "pomelo") == ["real"]


def insert_old_step(store: Store, **values) -> None:
    """A step as a database at 0004 holds it (today's Store.write expects the index to exist)."""
    from sqlalchemy import text

    row = {"content": None, "tool_name": None, "tool_args": None, **values}
    with store.engine.begin() as conn:
        conn.execute(text("INSERT INTO sessions (id, status, created_at) VALUES ('before', 'running', '2026-01-01 00:00:00')"))
        conn.execute(
            text(
                "INSERT INTO steps (session_id, seq, event_id, type, content, tool_name, tool_args, status, retry, redacted) "
                "VALUES ('before', 1, 'e1', 'think', :content, :tool_name, :tool_args, 'ok', 0, 0)"
            ),
            row,
        )


def test_the_migration_indexes_steps_stored_before_it(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    old = Store(url, migrate=False)
    command.upgrade(alembic_config(old.engine), "0004_audit")
    insert_old_step(old, tool_name="lookup", tool_args='{"sku": "persimmon"}')
    old.close()
    store = Store(url)
    assert found(store, "persimmon") == ["before"]
    store.close()


@pytest.mark.postgres
def test_the_migration_indexes_steps_stored_before_it_on_postgresql(pg_database):
    import psycopg

    name = f"{pg_database.rsplit('/', 1)[1]}_search_migration"  # this run's: another run may check at the same time
    with psycopg.connect(pg_database, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"CREATE DATABASE {name}")
    url = pg_database.rsplit("/", 1)[0] + "/" + name
    try:
        old = Store(url, migrate=False)
        command.upgrade(alembic_config(old.engine), "0004_audit")
        insert_old_step(old, content="an older persimmon")
        old.close()
        store = Store(url)
        assert found(store, "persimmon") == ["before"]
        store.close()
    finally:
        with psycopg.connect(pg_database, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


WORDS = ["ab", "abc", "abcd", "get", "weather", "x1", "Ünï", "ok"]
SEPARATORS = [" ", ".", "_", "-", "/", '"', "*", ":", "\n", "(", ")"]
texts = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), max_size=8).map(
    lambda parts: "".join(w + s for w, s in parts)
)


def reference(query: SearchQuery, content: str) -> bool:
    """What the index must answer, from the rule in storage/search.py: every term's words in a row."""
    words = [w.lower() for w in re.findall(r"[^\W_]+", content)]

    def term_found(term):
        for i in range(len(words) - len(term) + 1):
            head, last = words[i : i + len(term) - 1], words[i + len(term) - 1]
            if list(term[:-1]) == head and (last == term[-1] or (len(term[-1]) >= 3 and last.startswith(term[-1]))):
                return True
        return False

    return bool(query) and all(term_found(t) for t in query.terms)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(contents=st.lists(texts, min_size=1, max_size=5), q=texts)
def test_the_index_answers_what_the_rule_says(store, contents, q):
    ids = [f"p{n}" for n in range(len(contents))]
    store.delete_sessions(store.session_ids())
    store.write([StepEvent(session_id=sid, type="think", content=c) for sid, c in zip(ids, contents, strict=True)])
    query = SearchQuery.parse(q)
    assume(query)  # no words: no content search (an empty box lists every run)
    expected = sorted(sid for sid, c in zip(ids, contents, strict=True) if reference(query, c))
    assert found(store, q) == expected
    hits = store.search_matches(ids, q)
    assert sorted(hits) == expected
    assert all(any(m for _, m in h["snippet"]) for h in hits.values())


def test_snippets_are_windows_of_the_stored_text():
    text = "start " + "filler " * 40 + "the needle is here " + "tail " * 60
    parts = snippet(SearchQuery.parse("needle"), None, text)
    assert parts[0] == ("…", False) and parts[-1] == ("…", False)
    assert ("needle", True) in parts
    assert "".join(t for t, _ in parts[1:-1]) in text
    assert snippet(SearchQuery.parse("absent"), text) == []


def test_the_api_q_and_the_cli_search_use_the_index(store, tmp_path):
    from starlette.testclient import TestClient
    from typer.testing import CliRunner

    from replay_core.cli import app
    from replay_core.server.api import create_app
    from replay_core.server.auth import Access

    seed(store)
    with TestClient(create_app(store, access=Access(api_tokens=("t0k",)))) as http:
        body = http.get("/api/v1/sessions", params={"q": 'refund "NEAR('}, headers={"Authorization": "Bearer t0k"}).json()
        assert body["total"] == 0
        body = http.get("/api/v1/sessions", params={"q": "zürich"}, headers={"Authorization": "Bearer t0k"}).json()
        assert [s["id"] for s in body["sessions"]] == ["w"]
        assert body["sessions"][0]["match"]["seq"] == 2
        assert ["Zürich", True] in body["sessions"][0]["match"]["snippet"]
    result = CliRunner().invoke(app, ["sessions", "--db", store.url, "--search", "timeout", "--json"])
    assert result.exit_code == 0, result.output
    import orjson

    rows = orjson.loads(result.output)
    assert [(r["id"], r["match"]["seq"]) for r in rows] == [("q", 2)]

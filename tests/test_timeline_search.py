"""Search inside one run on the timeline: the full-text index (storage/search.py) on SQLite and
PostgreSQL, every hit of a long run (not the first page of them), and the error class by the same rules."""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_search import reference, texts

from replay_core.events import StepEvent
from replay_core.storage.search import SearchQuery
from replay_core.understand.timeline import open_timeline
from ui.timeline_view import hit_snippet, run_hits, strip_ticks


def long_run(store, n: int = 1201) -> None:
    steps = []
    for i in range(1, n + 1):
        if i % 100 == 0:
            steps.append(
                StepEvent(
                    session_id="long",
                    seq=i,
                    type="error",
                    status="error",
                    error_class="RateLimitError",
                    content="the provider said no",
                )
            )
        elif i % 2:
            steps.append(StepEvent(session_id="long", seq=i, type="think", content=f"order {i} was REFUNDED yesterday"))
        else:
            steps.append(
                StepEvent(
                    session_id="long", seq=i, type="tool_call", tool_name="get_weather", tool_args={"city": "Zürich", "n": i}
                )
            )
    steps.append(StepEvent(session_id="other", seq=1, type="think", content="refunded elsewhere"))
    store.write(steps)


def test_every_hit_of_a_long_run_is_found_by_the_index(store):
    long_run(store)
    tl = open_timeline(store, "long")
    odd = [i for i in range(1, 1202, 2)]
    assert run_hits(store, tl, "refund") == odd  # 601 hits: past search_in_session's first 500
    total, first = store.search_in_session("long", "refund", limit=10_000)
    assert total == len(odd) and [h["seq"] for h in first] == odd  # the same meaning as the Runs page's search
    evens = [i for i in range(2, 1202, 2) if i % 100]
    assert run_hits(store, tl, "get_weather") == evens == run_hits(store, tl, "zürich")
    assert run_hits(store, tl, "refund zürich") == []  # every word in the same step
    assert run_hits(store, tl, "ratelim") == list(range(100, 1201, 100))  # the error class, by the same word rules
    assert run_hits(store, tl, "...") == [] and run_hits(store, tl, "") == []


def test_the_snippet_shows_the_matched_words_in_the_step(store):
    long_run(store, 4)
    tl = open_timeline(store, "long")
    parts = hit_snippet("refund", tl.step_at_seq(3))
    assert "".join(t for t, _ in parts) == "order 3 was REFUNDED yesterday" and [t for t, hit in parts if hit] == ["REFUNDED"]
    assert [t for t, hit in hit_snippet("zur", tl.step_at_seq(2)) if hit] == []  # "zur" is not "zür": no match, no mark
    assert [t for t, hit in hit_snippet("Zürich", tl.step_at_seq(2)) if hit] == ["Zürich"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(contents=st.lists(texts, min_size=1, max_size=6), q=texts)
def test_a_run_s_hits_are_what_the_search_rule_says(store, contents, q):
    query = SearchQuery.parse(q)
    assume(query)
    store.delete_sessions(store.session_ids())
    store.write([StepEvent(session_id="h", seq=i, type="think", content=c) for i, c in enumerate(contents, 1)])
    tl = open_timeline(store, "h")
    assert run_hits(store, tl, q) == [i for i, c in enumerate(contents, 1) if reference(query, c)]


def test_past_2000_hits_the_strip_leaves_them_off_and_says_so(store):
    long_run(store, 4500)
    tl = open_timeline(store, "long")
    hits = run_hits(store, tl, "refund")
    assert len(hits) == 2250
    assert not [t for t in strip_ticks(tl, 1, set(), hits=hits) if t["what"] == "search hit"]
    assert len([t for t in strip_ticks(tl, 1, set(), hits=hits[:2000]) if t["what"] == "search hit"]) == 2000

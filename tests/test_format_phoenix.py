"""Phoenix span exports (written by Phoenix itself, tests/fixtures/phoenix/README.md): the spans dataframe
as JSON and JSON Lines and the REST answer read through the OTLP mapping — model calls with model and
tokens, tools with their results and failures — the three giving the same runs; what it must not claim."""

from __future__ import annotations

import gc
from collections import Counter

import orjson
import pytest
from conftest import FIXTURES
from hypothesis import given
from hypothesis import strategies as st
from reader_checks import claims_no_other_fixture

from replay_core.ingest.formats import candidates, otel, phoenix
from replay_core.ingest.formats import otel_attributes as oa
from replay_core.ingest.pipeline import import_bytes, import_file, read_file
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig

PX = FIXTURES / "phoenix"
EXPORTS = [PX / "spans_dataframe.json", PX / "spans_dataframe.jsonl", PX / "rest_spans.json"]


def _runs(store, report) -> dict:
    return {sid: (store.get_session(sid), store.load_steps(sid)) for sid in report.sessions}


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.name)
def test_each_export_reads_as_model_calls_and_tools(sqlite_store, path):
    report = import_file(sqlite_store, path)
    (acc,) = report.files
    assert (acc["format"], acc["records"], acc["used"], acc["unit"]) == ("phoenix", 12, 12, "spans")
    runs = _runs(sqlite_store, report)
    assert len(runs) == 2
    for session, steps in runs.values():
        assert session["model"] == "gpt-4o-mini-2024-07-18" and session["name"] == "agent run"
        assert Counter(s.type for s in steps) == {"span": 1, "think": 3, "tool_call": 2, "tool_result": 2}
        calls = [s for s in steps if s.type == "think"]
        assert [(s.tokens_in, s.tokens_out) for s in calls] == [(142, 17), (175, 16), (204, 19)]
        assert [s.tool_name for s in steps if s.type == "tool_call"] == ["get_weather", "get_time"]
        assert steps[0].timestamp is not None and session["started_at"] is not None
    failed = [s for _, steps in runs.values() for s in steps if s.status == "error"]
    (broken,) = failed
    assert broken.type == "tool_result" and broken.tool_name == "get_time" and "time service unavailable" in broken.content


def test_the_three_exports_give_the_same_runs(sqlite_store):
    """Same runs and steps (ids from the spans); only times differ: pandas writes ISO times to the
    millisecond (its default `date_unit`), the REST answer to the microsecond."""
    first = import_file(sqlite_store, EXPORTS[0])
    before = _runs(sqlite_store, first)
    again = import_file(sqlite_store, EXPORTS[1])
    assert again.steps == 0 and again.duplicates == first.steps == 16 and _runs(sqlite_store, again) == before
    rest = import_file(sqlite_store, EXPORTS[2])
    assert rest.steps == 0 and rest.duplicates == 16 and sorted(rest.sessions) == sorted(first.sessions)
    for sid, (session, _) in _runs(sqlite_store, rest).items():
        assert abs((session["started_at"] - before[sid][0]["started_at"]).total_seconds()) < 0.001


def test_null_replay_reproduces_a_run(sqlite_store):
    sid = import_file(sqlite_store, EXPORTS[2]).sessions[0]
    result = replay(sqlite_store, sid, None, None, ReplayConfig(model="recorded"))
    assert result.outcome == "completed" and result.first_divergence is None


def test_a_row_without_ids_is_a_bad_record_naming_it(sqlite_store):
    rows = orjson.loads(EXPORTS[0].read_bytes())
    del rows[3]["context.span_id"]
    events, bad = [], []
    for item in phoenix.FORMAT.read(orjson.dumps(rows), "rows.json"):
        (bad if hasattr(item, "reason") else events).append(item)
    assert [str(b) for b in bad] == ["rows.json [3]: context.trace_id and context.span_id are required"]


def test_claims_nothing_else_and_wins_over_the_generic_span_dump():
    claims_no_other_fixture(phoenix.FORMAT, "phoenix")
    rest = EXPORTS[2].read_bytes()
    assert [f.name for f in candidates(rest, "spans.json")][:2] == ["phoenix", "otel-spans"]
    sdk_dump = (FIXTURES / "otel/TINYAGENT_trace.json").read_bytes()
    assert phoenix.FORMAT not in candidates(sdk_dump, "trace.json") and otel.OTEL_SPANS in candidates(sdk_dump, "trace.json")


def test_damaged_rows_never_half_import(sqlite_store):
    data = EXPORTS[1].read_bytes()
    with pytest.raises(ValueError):
        import_bytes(sqlite_store, data[: len(data) // 2], "cut.jsonl")
    assert sqlite_store.session_ids() == []


@given(st.permutations(range(12)), st.sampled_from(["Z", "+00:00", "+02:00", ""]))
def test_messages_come_in_index_order_and_times_in_any_spelling(order, zone):
    """However a writer orders the indexed keys (a dataframe's JSON sorts them as text: 0, 1, 10, 11, 2…) the
    messages come in index order; an ISO time reads the same with `Z`, an offset, or none (UTC)."""
    texts = {n: f"message {n}" for n in range(12)}
    row = orjson.loads(EXPORTS[2].read_bytes())["data"][1]
    attrs = {k: v for k, v in row["attributes"].items() if not k.startswith("llm.input_messages.")}
    for n in order:
        attrs[f"llm.input_messages.{n}.message.role"] = "user"
        attrs[f"llm.input_messages.{n}.message.content"] = texts[n]
    row |= {"attributes": attrs, "start_time": f"2026-12-06T14:32:16.713067{zone}"}
    span = phoenix.phoenix_span(row, "row")
    assert [m["content"] for m in oa.input_messages(oa.Attrs(span.attributes)) or []] == list(texts.values())
    offset = 2 * 3600 * 10**9 if zone == "+02:00" else 0
    assert span.start_ns == 1796567536713067000 - offset


def test_what_a_read_made_goes_to_the_oldest_generation():
    """The collector is paused while a file is read, and what the read made is promoted on the way out rather
    than walked by the young collection the next allocation starts (a tenth of reading a big export)."""
    acc = read_file(EXPORTS[2].read_bytes(), "rest_spans.json")
    assert gc.isenabled() and gc.get_freeze_count() == 0
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert acc.events and all(id(e) in oldest for e in acc.events)

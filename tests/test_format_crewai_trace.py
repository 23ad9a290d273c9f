"""CrewAI's execution trace as crewai 1.15.30 exports it (OTLP/HTTP protobuf, captured from the real library by
scripts/capture_files/crewai_trace_events.py; tests/fixtures/crewai/README.md): the OTLP reader takes it,
each model call with its model and tokens, each tool call, the raised tool an error, the crew's output."""

from __future__ import annotations

from conftest import FIXTURES
from reader_checks import reimport_changes_nothing

from replay_core.ingest.pipeline import import_file

OK, FAILED = FIXTURES / "crewai/crew_trace_ok.otlp.pb", FIXTURES / "crewai/crew_trace_tool_error.otlp.pb"
MODEL = "gpt-4o-mini-2024-07-18"


def _one(store, path):
    report = import_file(store, path)
    (sid,) = report.sessions
    return report.files[0], store.get_session(sid), store.load_steps(sid)


def test_a_crew_trace_is_its_model_calls_with_tokens_and_its_tool_calls(sqlite_store):
    acc, session, steps = _one(sqlite_store, OK)
    assert (acc["format"], acc["records"], acc["used"], acc["unit"]) == ("otlp-proto", 8, 8, "spans")
    # the scripted model's usage, per call, as crewai recorded it on its `call llm` spans
    assert [(s.tokens_in, s.tokens_out) for s in steps if s.tokens_in] == [(142, 17), (175, 16), (204, 19)]
    assert {s.model for s in steps if s.tokens_in} == {MODEL} and session["model"] == MODEL
    calls = [(s.tool_name, s.tool_args) for s in steps if s.type == "tool_call"]
    assert calls == [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})]
    assert [(s.tool_name, s.status) for s in steps if s.type == "tool_result"] == [("get_weather", "ok"), ("get_time", "ok")]
    assert (session["name"], session["status"]) == ("execute crew", "succeeded")
    assert session["started_at"] is not None and session["ended_at"] >= session["started_at"]


def test_a_raised_tool_is_an_error_result_and_the_second_task_is_kept(sqlite_store):
    acc, session, steps = _one(sqlite_store, FAILED)
    assert (acc["records"], acc["used"]) == (12, 12)
    failed = [s for s in steps if s.type == "tool_result" and s.status == "error"]
    assert failed and {s.tool_name for s in failed} == {"get_time"}
    assert [(s.tokens_in, s.tokens_out) for s in steps if s.tokens_in] == [(142, 17), (175, 16), (204, 19), (96, 3)]
    assert session["status"] == "succeeded"  # the crew went on to its last task


def test_reimport_changes_nothing(sqlite_store):
    reimport_changes_nothing(sqlite_store, FAILED)

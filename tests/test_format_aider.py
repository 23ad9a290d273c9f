"""Aider's `.aider.chat.history.md`, a real one (tests/fixtures/aider/README.md): typed lines, answers with
the model in use, edits and commits as results, token and cost lines on the answer before them; what the
reader must not claim."""

from __future__ import annotations

from collections import Counter

from conftest import FIXTURES
from reader_checks import claims_no_other_fixture

from replay_core.ingest.formats import aider
from replay_core.ingest.pipeline import import_bytes, import_file

REAL = FIXTURES / "aider/simple-calculator.aider.chat.history.md"


def test_a_real_history_reads_as_inputs_answers_edits_and_commits(sqlite_store):
    report = import_file(sqlite_store, REAL)
    (acc,) = report.files
    assert (acc["format"], acc["used"], acc["records"], acc["unit"]) == ("aider", 141, 141, "blocks")
    (sid,) = report.sessions
    session, steps = sqlite_store.get_session(sid), sqlite_store.load_steps(sid)
    assert session["name"] == "give me a quick summarized overview of this repo"
    assert (session["model"], session["agent_version"]) == ("gemini/gemini-2.5-pro-exp-03-25", "0.82.2")
    assert session["started_at"].isoformat() == "2025-05-04T17:02:36+00:00"
    kinds = Counter(s.type for s in steps)
    inked = [line for line in REAL.read_text().split("\n") if line.strip()]  # typed lines apart only by blank lines are one input
    typed = sum(1 for i, line in enumerate(inked) if line.startswith("#### ") and not inked[i - 1].startswith("#### "))
    assert kinds["input"] == typed == 29  # 60 typed lines: a `/code x` and aider's echo of `x` are one input
    assert kinds["decision"] > 20
    edits = [s for s in steps if s.tool_name == "edit"]
    applied = REAL.read_text().count("\n> Applied edit to ")
    assert len(edits) == applied == 18 and edits[0].metadata["file"] == "src/App.js"
    (commit,) = [s for s in steps if s.tool_name == "git_commit"][:1]
    assert commit.metadata["commit"] == "c339495"
    first_answer = next(s for s in steps if s.type == "decision")
    assert (first_answer.tokens_in, first_answer.tokens_out) == (3200, 222) and first_answer.metadata["tokens_rounded"]
    assert {s.model for s in steps if s.type == "decision"} >= {"gemini/gemini-2.5-pro-exp-03-25", "openai/qwen3:32b"}
    assert any(s.cost_usd == 0.0014 for s in steps)


def test_reimport_changes_nothing(sqlite_store):
    first = import_file(sqlite_store, REAL)
    again = import_file(sqlite_store, REAL)
    assert again.steps == 0 and again.duplicates == first.steps


def test_two_sessions_in_one_file_are_two_runs(sqlite_store):
    data = REAL.read_bytes()
    report = import_bytes(
        sqlite_store, data + b"\n# aider chat started at 2025-05-05 09:00:00\n\n#### hello again  \n\nHi.\n", "h.md"
    )
    assert len(report.sessions) == 2


def test_claims_nothing_else():
    claims_no_other_fixture(aider.FORMAT, "aider")
    assert not aider.FORMAT.sniff(b"# My notes\n\n#### a heading\n\n> a quote\n", "notes.md")

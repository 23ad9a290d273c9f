"""Import honesty: every file accounted for, refused with what it looked like, re-imported without a change,
one definition of a run's totals, and no finished file left `running`.

Real files: tests/fixtures (SOURCES.md there: repository, path and commit of each). Hand-made files below stand in
for formats whose readers other branches add (an OpenHands event list, Claude Code transcript lines): they test what
the existing readers must NOT claim.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES
from test_format_detect import EXPECTED as DETECTED
from typer.testing import CliRunner

from replay_core.cli import app
from replay_core.ingest.accounting import MIN_COVERAGE
from replay_core.ingest.formats.shape import describe
from replay_core.ingest.pipeline import FileRefused, ImportRejected, import_bytes, import_file
from replay_core.storage.store import SessionFilter

# Every real file an existing reader reads, with the format detection must pick.
READABLE = {
    **{
        f"fixtures/{p}": f
        for p, f in {
            **DETECTED,  # the fixtures detection is tested on
            "notte/notte_core_session_trajectory.json": "notte",
            "langchain/langsmith_agent_run.json": "langchain",
            "langchain/langsmith_flat_runs.jsonl": "langchain",
            "langchain/langchain_core_real_run.json": "langchain",
            "otel/TINYAGENT_trace.json": "otel-spans",
            "otel/OPENAI_trace.json": "otel-spans",
            "otel/edge_failed_and_totals.otlp.json": "otlp-json",
            "otel/opentelemetry-proto_trace.json": "otlp-json",
        }.items()
    },
    **{
        f"fixtures/{p}": f
        for p, f in {
            "swe_agent/klieret__swe-agent-test-repo-i1.traj": "swe_agent",
            "swe_agent/networking_1.traj": "swe_agent",
            "smolagents/decentralized_run_023f7ac8_messages.jsonl": "smolagents",
            "openai_chat/openinference_test_tool_calls.yaml": "openai_chat",
            "otel/GOOGLE_trace.json": "otel-spans",
        }.items()
    },
}


def real(key: str) -> Path:
    where, rel = key.split("/", 1)
    assert where == "fixtures", key
    return FIXTURES / rel


OPENHANDS_LIKE = orjson.dumps(
    [  # an OpenHands trajectory download, shortened: events, not chat messages
        {
            "id": 0,
            "timestamp": "2024-06-01T10:00:00",
            "source": "user",
            "message": "fix it",
            "action": "message",
            "args": {"content": "fix it"},
        },
        {
            "id": 1,
            "timestamp": "2024-06-01T10:00:01",
            "source": "agent",
            "action": "run",
            "args": {"command": "ls"},
            # the model's reply kept in the event: the "role"/"content" keys that made the chat reader claim such files
            "tool_call_metadata": {"model_response": {"choices": [{"message": {"role": "assistant", "content": "running ls"}}]}},
        },
        {"id": 2, "timestamp": "2024-06-01T10:00:02", "source": "agent", "observation": "run", "content": "a b", "cause": 1},
        {"id": 3, "timestamp": "2024-06-01T10:00:03", "source": "agent", "action": "finish", "args": {}},
    ],
    option=orjson.OPT_INDENT_2,
)


def claude_code_like() -> bytes:
    """Lines shaped like a Claude Code transcript: each has a `type`, the message sits under `message`."""
    lines = [{"type": "summary", "summary": "s", "leafUuid": "u5"}]
    for i in range(6):
        role = "user" if i % 2 == 0 else "assistant"
        lines.append(
            {
                "type": role,
                "uuid": f"u{i}",
                "sessionId": "s1",
                "timestamp": f"2025-01-01T00:00:0{i}Z",
                "message": {"role": role, "content": "hi" if role == "user" else [{"type": "text", "text": "yo"}]},
            }
        )
    lines.append({"type": "progress", "uuid": "p", "sessionId": "s1"})
    return b"\n".join(orjson.dumps(line) for line in lines) + b"\n"


def session_rows(store) -> dict[str, dict]:
    """Every stored field of every session (created_at, last_event_at included)."""
    return {sid: {k: v for k, v in store.get_session(sid).items()} for sid in store.session_ids()}


# ---------------------------------------------------------------------------- accounting


@pytest.mark.parametrize("key", sorted(READABLE))
def test_every_real_file_is_accounted_for(store, key):
    report = import_file(store, real(key))
    (acc,) = report.files
    assert acc["format"] == READABLE[key]
    assert acc["records"] > 0 and acc["steps"] > 0 and acc["steps"] == report.steps
    assert acc["used"] + sum(acc["ignored"].values()) + acc["bad"] == acc["records"]
    assert acc["used"] / acc["records"] >= MIN_COVERAGE
    assert report.warnings == []


def test_an_openhands_event_list_goes_to_its_reader_and_never_becomes_an_empty_chat_run(store):
    report = import_bytes(store, OPENHANDS_LIKE, "trajectory.json")
    assert report.files[0]["format"] == "openhands" and report.steps == 4  # the reader that accounts for it all wins
    store.delete_sessions(store.session_ids())
    with pytest.raises(FileRefused) as exc:  # the reader that claimed it before (0 steps, exit 0) is refused now
        import_bytes(store, OPENHANDS_LIKE, "trajectory.json", fmt="openai_chat")
    message = str(exc.value)
    assert message.startswith(
        "trajectory.json: not imported, it would give no steps. "
        "It looks like JSON list of 4 objects with keys id, timestamp, source, message…"
    )
    assert (
        "Readers tried: openai_chat: 0 of 4 list items used "
        "(4 ignored: action=message 1, action=run 1, observation=run 1…), 0 steps"
    ) in message
    assert store.session_ids() == []


def test_claude_code_lines_go_to_their_reader_and_never_become_junk_anthropic_runs(store):
    report = import_bytes(store, claude_code_like(), "5f1c.jsonl")
    (acc,) = report.files
    assert acc["format"] == "claude_code" and acc["ignored"] == {"progress": 1} and acc["used"] == 7
    store.delete_sessions(store.session_ids())
    # forcing the Anthropic reader does not turn the lines into 8 junk runs either
    with pytest.raises(FileRefused) as forced:
        import_bytes(store, claude_code_like(), "5f1c.jsonl", fmt="anthropic")
    assert (
        "It looks like JSONL of 8 lines whose `type` is user/assistant/summary/progress (keys type, summary, leafUuid, uuid…)"
        in str(forced.value)
    )
    assert "anthropic: 0 of 8 lines used (8 ignored: type=user 3, type=assistant 3, type=summary 1…), 0 steps" in str(
        forced.value
    )
    assert store.session_ids() == []


def test_zip_archives_are_described_by_their_members(store):
    for path in sorted((FIXTURES / "inspect_ai").glob("*.eval")):  # inspect_ai's binary log, a ZIP
        assert describe(path.read_bytes()).startswith("ZIP archive holding ")
        assert "samples/" in describe(path.read_bytes())
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:  # no agent's log: no reader, present or to come, should claim it
        zf.writestr("README.md", "# exports")
        zf.writestr("tables/1.csv", "a,b")
        zf.writestr("tables/2.csv", "a,b")
    with pytest.raises(FileRefused) as exc:
        import_bytes(store, buffer.getvalue(), "export.zip")
    assert "It looks like ZIP archive holding README.md, tables/." in str(exc.value)
    assert "known formats: native," in str(exc.value)
    with pytest.raises(ImportRejected):  # a reader forced onto it refuses by where it breaks
        import_bytes(store, buffer.getvalue(), "export.zip", fmt="openai_chat")
    assert store.session_ids() == []


def test_other_shapes_are_described():
    assert describe(b"# Notes\n\nSome *markdown* here.\n") == "markdown text"
    assert describe(b"") == "an empty file"
    assert describe(b"\x00\x01\x02binary") == "binary data of 9 bytes"
    assert describe(b'{"a": 1, "b": 2}') == "JSON object with keys a, b"


def test_a_forced_reader_that_ignores_most_of_a_file_says_so(store):
    events = orjson.loads(OPENHANDS_LIKE)
    reply = {"model": "gpt-4o", "choices": [{"message": {"role": "assistant", "content": "hello"}}]}
    mixed = orjson.dumps([reply, *events], option=orjson.OPT_INDENT_2)  # 1 chat completion among 4 events
    detected = import_bytes(store, mixed, "mixed.json")  # detection: the reader that understands most of it (4 of 5)
    assert {k: detected.files[0][k] for k in ("format", "records", "used", "ignored")} == {
        "format": "openhands",
        "records": 5,
        "used": 4,
        "ignored": {"action:None": 1},
    }
    store.delete_sessions(store.session_ids())
    report = import_bytes(store, mixed, "mixed.json", fmt="openai_chat")  # forced: imported, and it says so
    assert report.warnings == [
        "mixed.json: --format openai_chat ignored most of the file: openai_chat: 1 of 5 list items used "
        "(4 ignored: action=message 1, action=run 1, observation=run 1…), 1 steps"
    ]
    assert report.files[0]["ignored_examples"]["action=run"] == ["mixed.json:[2]"]


def test_cli_imports_folders_each_file_judged_alone(tmp_path):
    folder = tmp_path / "logs"
    (folder / "deep" / "er").mkdir(parents=True)
    (folder / "a.traj").write_bytes((FIXTURES / "swe_agent/networking_1.traj").read_bytes())
    (folder / "deep" / "chat.jsonl").write_bytes((FIXTURES / "openai_chat/chat_log.jsonl").read_bytes())
    (folder / "deep" / "er" / "trajectory.json").write_bytes(b'[{"when": 1, "what": "x"}, {"when": 2, "what": "y"}]')
    (folder / ".hidden.json").write_bytes(b"not read")
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    runner = CliRunner()
    result = runner.invoke(app, ["import", str(folder), "--db", db, "--json"])
    assert result.exit_code == 1
    body = json.loads(result.stdout)
    by_file = {Path(f["file"]).name: f for f in body["files"]}
    assert set(by_file) == {"a.traj", "chat.jsonl"}
    assert {k: by_file["a.traj"][k] for k in ("format", "records", "used", "ignored", "steps")} == {
        "format": "swe_agent",
        "records": 4,
        "used": 4,
        "ignored": {},
        "steps": 14,
    }
    assert by_file["chat.jsonl"]["format"] == "openai_chat" and by_file["chat.jsonl"]["steps"] == 7
    (refused,) = body["refused"]
    assert refused.startswith(
        f"{folder / 'deep' / 'er' / 'trajectory.json'}: not imported, no reader recognises it. "
        "It looks like JSON list of 2 objects with keys when, what."
    )
    listed = json.loads(runner.invoke(app, ["sessions", "--db", db, "--json"]).stdout)
    assert len(listed) == 3  # networking_1 and the two runs of the chat log; nothing of the refused file


# ---------------------------------------------------------------------------- times, re-import, status


@pytest.mark.parametrize("key", sorted(READABLE))
def test_importing_twice_changes_nothing(store, key):
    import_file(store, real(key))
    before = session_rows(store)
    again = import_file(store, real(key))
    assert again.steps == 0 and again.duplicates == again.files[0]["steps"]
    assert session_rows(store) == before
    for row in before.values():
        assert row["status"] in ("succeeded", "failed", "unknown")  # a finished file: never `running`
        if row["started_at"] is None:  # no wall-clock time in the source: none made up
            assert row["ended_at"] is None and row["duration_s"] is None


def test_a_source_without_times_gives_a_run_without_them(store, tmp_path):
    report = import_file(store, FIXTURES / "swe_agent/networking_1.traj")
    (sid,) = report.sessions
    row = store.get_session(sid)
    assert (row["started_at"], row["ended_at"], row["last_event_at"], row["duration_s"]) == (None, None, None, None)
    db = f"sqlite:///{tmp_path / 't.db'}"
    runner = CliRunner()
    runner.invoke(app, ["import", str(FIXTURES / "swe_agent/networking_1.traj"), "--db", db])
    assert "started time not recorded" in runner.invoke(app, ["show", sid, "--db", db]).stdout


def test_status_unknown_is_listed_and_filtered(store, tmp_path):
    db = f"sqlite:///{tmp_path / 's.db'}"
    runner = CliRunner()
    files = [str(FIXTURES / p) for p in ("otel/opentelemetry-proto_trace.json", "swe_agent/networking_1.traj")]
    assert runner.invoke(app, ["import", *files, "--db", db]).exit_code == 0
    unknown = json.loads(runner.invoke(app, ["sessions", "--status", "unknown", "--db", db, "--json"]).stdout)
    assert [r["id"] for r in unknown] == ["5b8efff798038103d269b633813fc60c"]  # a trace without its root span
    bad = runner.invoke(app, ["sessions", "--status", "finished", "--db", db])
    assert "--status: expected one of running, succeeded, failed, incomplete, unknown" in str(
        bad.exception
    )  # main() prints it, exit 1


# ---------------------------------------------------------------------------- one definition of a run's totals


@pytest.mark.parametrize("key", sorted(READABLE))
def test_every_view_agrees_on_a_runs_totals(store, key):
    from replay_core.understand import analytics
    from replay_core.understand.compare import compare
    from replay_core.understand.timeline import open_timeline

    report = import_file(store, real(key))
    sids = report.sessions
    listed = {r["id"]: r for r in store.list_sessions(limit=1000)}
    runs = analytics.load(store).runs
    for sid in sids:
        row = store.get_session(sid)
        want = (row["tokens_in"], row["tokens_out"], row["cost_usd"])
        assert (listed[sid]["tokens_in"], listed[sid]["tokens_out"], listed[sid]["cost_usd"]) == want
        tl = open_timeline(store, sid)  # what the timeline header draws
        assert (tl.session["tokens_in"], tl.session["tokens_out"], tl.session["cost_usd"]) == want
        totals = compare(store, sid, sids[0]).totals["a"]
        assert (totals["tokens_in"], totals["tokens_out"], totals["cost_usd"]) == (
            want[0],
            want[1],
            round(want[2], 6) if want[2] is not None else None,
        )
        (a,) = runs.filter(runs["session_id"] == sid).select("tokens_in", "tokens_out", "cost_usd").rows()
        assert a[:2] == want[:2] and (a[2] is None) == (want[2] is None) and (a[2] or 0) == pytest.approx(want[2] or 0)


def test_swe_agent_model_stats_are_the_runs_totals(tmp_path):
    """The issue's case: SWE-agent steps carry no tokens; `info.model_stats` does."""
    db = f"sqlite:///{tmp_path / 'm.db'}"
    runner = CliRunner()
    path = FIXTURES / "swe_agent/klieret__swe-agent-test-repo-i1.traj"
    assert runner.invoke(app, ["import", str(path), "--db", db]).exit_code == 0
    (row,) = json.loads(runner.invoke(app, ["sessions", "--db", db, "--json"]).stdout)
    assert (row["tokens_in"], row["tokens_out"], row["cost_usd"], row["totals_source"]) == (52861, 326, 0.53839, "source")
    shown = json.loads(runner.invoke(app, ["show", row["id"], "--db", db, "--json"]).stdout)["session"]
    assert (shown["tokens_in"], shown["tokens_out"], shown["cost_usd"], shown["totals_source"]) == (52861, 326, 0.53839, "source")
    text = runner.invoke(app, ["show", row["id"], "--db", db]).stdout
    assert "tokens 52,861 in / 326 out  cost 0.5384 (the source's run totals)" in text


def test_steps_totals_win_over_the_sources_figure_by_figure(store):
    report = import_file(store, FIXTURES / "otel/edge_failed_and_totals.otlp.json")
    sources = {store.get_session(sid)["totals_source"] for sid in report.sessions}
    assert sources <= {"steps", "source", "steps+source", None} and sources & {"steps", "source"}
    assert SessionFilter  # the filter type the lists share (imported for the CLI test above)

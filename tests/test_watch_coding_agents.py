"""`watch` on coding agents' real session files as they grow: a Claude Code transcript and a Codex
rollout appended in chunks (cut mid-line), shown on the Live page after each chunk; a Gemini session
document rewritten as it grows; formats that name runs by a hash of the whole file are refused, never
split into a run per chunk."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import orjson
import pytest
from apptest_helpers import empty_store, page  # noqa: F401  (fixtures)
from test_page_live import tail_lines

from replay_core.ingest.pipeline import import_bytes
from replay_core.ingest.watch import Watcher
from replay_core.storage.store import Store

FIX = Path(__file__).resolve().parent / "fixtures"
# kzahel/yepanywhere packages/server/test/fixtures/captured/claude-basic-2026-09-12/native.jsonl @ 76ea6130fd95
CLAUDE = FIX / "claude_code/yepanywhere_claude-basic_native.jsonl"
# yoavf/ai-sessions examples/codex-pomodor-timer.jsonl @ f685c3d5d575
CODEX = FIX / "codex_cli/yoavf_codex-pomodoro-timer_rollout.jsonl"
STAMP = re.compile(rb'"timestamp":\s*"([^"]+)"')


def recent(data: bytes) -> bytes:
    """The file with every timestamp moved by one offset so the last is a minute ago: a session being
    written now (the Live page marks a run silent for long `incomplete`)."""
    times = [datetime.fromisoformat(m.group(1).decode()) for m in STAMP.finditer(data)]
    shift = datetime.now(UTC) - timedelta(minutes=1) - max(times)
    return STAMP.sub(
        lambda m: (
            b'"timestamp":"'
            + (datetime.fromisoformat(m.group(1).decode()) + shift).isoformat().replace("+00:00", "Z").encode()
            + b'"'
        ),
        data,
    )


def cuts(data: bytes, parts: int) -> list[int]:
    """Byte offsets that split the file into `parts` chunks, each boundary in the middle of a line."""
    out = [0]
    for i in range(1, parts):
        at = len(data) * i // parts
        if data[at - 1 : at] == b"\n":
            at += 1
        out.append(at)
    return out + [len(data)]


def steps_of(store: Store, sid: str) -> list[tuple]:
    return [
        (s.event_id, s.type, s.tool_name, s.tool_call_id, s.tokens_in, s.tokens_out, s.parent_id, s.status, s.timestamp)
        for s in store.load_steps(sid)
    ]


def whole(data: bytes, tmp_path: Path, name: str) -> Store:
    store = Store(f"sqlite:///{tmp_path / 'whole.db'}")
    import_bytes(store, data, name)
    return store


def test_a_growing_claude_code_session_is_one_run_on_the_live_page(empty_store, tmp_path):
    data = recent(CLAUDE.read_bytes())
    folder = tmp_path / "projects" / "-work-app"
    folder.mkdir(parents=True)
    path = folder / "30499b10-b34f-4546-a431-c77d14d042e1.jsonl"
    path.write_bytes(b"")
    watcher = Watcher(empty_store, [tmp_path / "projects"])
    at = page("pages/live.py")
    seen = []
    for n, (a, b) in enumerate(pairwise(cuts(data, 6))):
        with path.open("ab") as fp:
            fp.write(data[a:b])
        if n == 3:  # a watch restarted in the middle carries on from the offset in the database
            watcher = Watcher(empty_store, [tmp_path / "projects"])
        assert not watcher.poll().problems
        (sid,) = empty_store.session_ids()  # one run, never one per chunk
        row = empty_store.get_session(sid)
        assert row["status"] == "running"  # still being written: never `unknown` while watched
        written = data[:b].rfind(b"\n") + 1  # the half-written last line waits
        (tmp_path / f"part{n}").mkdir()
        expected = whole(data[:written], tmp_path / f"part{n}", "part.jsonl")
        assert steps_of(empty_store, sid) == steps_of(expected, sid)  # not doubled, not lost, same pairing and usage
        expected.close()
        at.run()
        assert not at.exception
        assert at.markdown[0].value.startswith("**1 run running**")
        assert any(c.value.startswith(f"{row['steps']:,} steps") for c in at.caption)
        assert tail_lines(at)[-1].startswith("`") and f"**{row['steps']}**" in tail_lines(at)[-1]  # the newest step, last
        seen.append(row["steps"])
    assert seen == sorted(seen) and seen[-1] == 20 and len(set(seen)) > 3  # it grew on the page chunk by chunk
    finished = whole(data, tmp_path, path.name)
    assert steps_of(empty_store, sid) == steps_of(finished, sid)
    mine, theirs = empty_store.get_session(sid), finished.get_session(sid)
    for field in ("name", "model", "agent_id", "started_at", "tokens_in", "tokens_out", "cost_usd"):
        assert mine[field] == theirs[field], field
    assert theirs["status"] == "unknown"  # the same file imported once finished: ended, outcome not recorded
    finished.close()


def test_a_growing_codex_rollout_stays_one_run_named_by_its_first_line(tmp_path):
    data = recent(CODEX.read_bytes())
    path = tmp_path / "sessions" / "rollout-2025-10-20.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"")
    store = Store(f"sqlite:///{tmp_path / 'w.db'}")
    watcher = Watcher(store, [path.parent])
    for a, b in pairwise(cuts(data, 5)):
        with path.open("ab") as fp:
            fp.write(data[a:b])
        watcher.poll()
        assert len(store.session_ids()) == 1  # a part without session_meta read alone became a run of its own
    (sid,) = store.session_ids()
    finished = whole(data, tmp_path, path.name)
    assert finished.session_ids() == [sid]
    untimed = lambda rows: [r[:4] + r[6:] for r in rows]  # noqa: E731
    # the same steps; a turn's usage goes on its first model step from the turn's last cumulative total, so a
    # turn still open at a poll keeps what was counted then (docs/formats.md, Codex CLI under watch)
    assert untimed(steps_of(store, sid)) == untimed(steps_of(finished, sid))
    assert store.get_session(sid)["status"] == "running"
    store.close()
    finished.close()


@pytest.mark.parametrize(
    "fixture, fmt",
    [("openai_chat/chat_log.jsonl", "openai_chat"), ("smolagents/decentralized_run_023f7ac8_messages.jsonl", "smolagents")],
)
def test_formats_named_by_the_whole_files_hash_are_refused_not_split(tmp_path, fixture, fmt):
    data = (FIX / fixture).read_bytes()
    path = tmp_path / "logs" / Path(fixture).name
    path.parent.mkdir()
    path.write_bytes(data[: data.index(b"\n", len(data) // 2) + 1])
    store = Store(f"sqlite:///{tmp_path / 'w.db'}")
    watcher = Watcher(store, [path.parent])
    found = watcher.poll()
    assert found.steps == 0 and store.session_ids() == []
    assert found.problems == [
        f"{path}: not followed, {fmt} names its runs by a hash of the whole file, which changes as "
        "the file grows; import it with `agent-replay import` once it is finished"
    ]
    with path.open("ab") as fp:
        fp.write(data[len(path.read_bytes()) :])
    assert watcher.poll().problems == [] and store.session_ids() == []  # said once, still nothing stored
    store.close()


def test_a_gemini_session_document_rewritten_as_it_grows_is_read_whole_again(tmp_path):
    """Gemini CLI writes its session as one JSON document, rewritten after each message."""
    # yoavf/ai-sessions examples/gemini-cli-pomodoro-timer.json @ 85f763593463
    doc = orjson.loads((FIX / "gemini_cli/yoavf_gemini-cli-pomodoro-timer.json").read_bytes())
    path = tmp_path / "chats" / "session-1.json"
    path.parent.mkdir()
    store = Store(f"sqlite:///{tmp_path / 'w.db'}")
    watcher = Watcher(store, [path.parent])
    half = {**doc, "messages": doc["messages"][: len(doc["messages"]) // 2]}
    path.write_bytes(orjson.dumps(half, option=orjson.OPT_INDENT_2))
    watcher.poll()
    watcher.poll()  # unchanged between two polls: imported
    (sid,) = store.session_ids()
    first = store.get_session(sid)["steps"]
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))  # rewritten, longer
    assert watcher.poll().problems == [] and watcher.poll().problems == []
    finished = whole(path.read_bytes(), tmp_path, path.name)
    assert store.session_ids() == [sid] and first < store.get_session(sid)["steps"]
    assert steps_of(store, sid) == steps_of(finished, sid)
    assert store.get_session(sid)["ended_at"] == finished.get_session(sid)["ended_at"]  # the newer reading's end
    store.close()
    finished.close()

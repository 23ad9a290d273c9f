"""`agent-replay watch`: appended lines imported as they come, half lines waiting, files replaced or new,
offsets in the database so a restarted watch carries on, runs `running` until the source ends them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from replay_core.cli import app
from replay_core.ingest.watch import Watcher, parse_duration
from replay_core.storage.store import Store

REPO = Path(__file__).resolve().parent.parent


def line(**obj) -> bytes:
    return orjson.dumps({"schema": "agent-replay/v1", **obj}) + b"\n"


def step(sid: str, n: int) -> bytes:
    return line(
        kind="step",
        session_id=sid,
        event_id=f"e{n}",
        seq=n,
        type="think",
        content=f"thought {n}",
        timestamp=f"2026-12-01T10:00:{n:02d}Z",
    )


def watch_once(db: str, *paths: Path) -> str:
    result = CliRunner().invoke(app, ["watch", *map(str, paths), "--once", "--db", db])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_appended_lines_half_lines_replaced_and_new_files(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    db = f"sqlite:///{tmp_path / 'w.db'}"
    log = folder / "run.jsonl"
    log.write_bytes(line(kind="session", session_id="r1", name="live run") + step("r1", 1) + step("r1", 2)[:30])
    assert watch_once(db, folder).startswith("1 new steps from 1 files (1 runs)")
    store = Store(db)
    assert store.get_session("r1")["status"] == "running" and store.get_session("r1")["steps"] == 1  # the half line waits
    with log.open("ab") as fp:
        fp.write(step("r1", 2)[30:] + step("r1", 3))
    watch_once(db, folder)
    assert [s.event_id for s in store.load_steps("r1")] == ["e1", "e2", "e3"]
    assert watch_once(db, folder) == ""  # nothing new: nothing imported, nothing duplicated
    with log.open("ab") as fp:
        fp.write(line(kind="session_end", session_id="r1", status="succeeded", ended_at="2026-12-01T10:01:00Z"))
    watch_once(db, folder)
    assert store.get_session("r1")["status"] == "succeeded"  # the source said it ended

    log.write_bytes(line(kind="session", session_id="r2") + step("r2", 1))  # replaced: shorter, read from the start
    (folder / "sub").mkdir()
    (folder / "sub" / "other.jsonl").write_bytes(line(kind="session", session_id="r3") + step("r3", 1))  # a new file
    assert watch_once(db, folder).startswith("2 new steps from 2 files (2 runs)")
    assert store.get_session("r2")["steps"] == 1 and store.get_session("r3")["steps"] == 1
    assert store.watch_offset(str(log.resolve()))["offset"] == log.stat().st_size
    store.close()


def test_a_whole_document_is_imported_once_it_stops_changing(tmp_path):
    traj = tmp_path / "run.traj"
    traj.write_bytes((REPO / "tests/fixtures/swe_agent/networking_1.traj").read_bytes())
    store = Store(f"sqlite:///{tmp_path / 'd.db'}")
    watcher = Watcher(store, [tmp_path])
    assert watcher.poll().steps == 0  # seen once: it may still be being written
    assert watcher.poll().steps == 14
    assert watcher.poll().steps == 0  # read to its end: not again
    (sid,) = store.session_ids()
    assert store.get_session(sid)["status"] == "succeeded"
    store.close()


def test_since_and_bad_options(tmp_path):
    assert parse_duration("90m").total_seconds() == 5400 and parse_duration("1d").days == 1
    with pytest.raises(ValueError, match="expected a number and a unit"):
        parse_duration("soon")
    old = tmp_path / "old.jsonl"
    old.write_bytes(line(kind="session", session_id="old") + step("old", 1))
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    db = f"sqlite:///{tmp_path / 's.db'}"
    assert CliRunner().invoke(app, ["watch", str(tmp_path), "--once", "--since", "1h", "--db", db]).stdout == ""
    bad = CliRunner().invoke(app, ["watch", str(tmp_path), "--since", "soon", "--db", db])
    assert "--since: expected a number and a unit" in str(bad.exception)


def write_lines(path: Path, start: int, stop: int) -> None:
    """Steps start..stop-1 appended to `path` by this process (the watch's is another), each line half-written
    for a moment."""
    with open(path, "ab", buffering=0) as fp:
        for n in range(start, stop):
            body = line(kind="step", session_id="tail", event_id=f"e{n}", seq=n, type="think", content=f"thought {n}")
            fp.write(body[:20])
            time.sleep(0.02)
            fp.write(body[20:])
            time.sleep(0.03)


def test_watch_restarted_in_the_middle_imports_every_line_once(tmp_path):
    folder = tmp_path / "agent"
    folder.mkdir()
    log = folder / "tail.jsonl"
    log.write_bytes(line(kind="session", session_id="tail", name="tailed"))
    db = f"sqlite:///{tmp_path / 't.db'}"
    Store(db).close()  # migrated before two processes use it
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    watch = [sys.executable, "-m", "replay_core.cli", "watch", str(folder), "--interval", "0.1", "--db", db]

    def wait_for(n: int, timeout: float = 60) -> int:
        store, deadline = Store(db), time.time() + timeout
        try:
            while time.time() < deadline:
                got = store.get_session("tail")
                if got and got["steps"] >= n:
                    return got["steps"]
                time.sleep(0.1)
            return (store.get_session("tail") or {}).get("steps", 0)
        finally:
            store.close()

    def watched_while_writing(start: int, stop: int) -> int:
        """A watch process running while this one appends lines start..stop-1; stopped with Ctrl-C."""
        proc = subprocess.Popen(watch, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            write_lines(log, start, stop)
            return wait_for(stop - 1)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)

    assert watched_while_writing(1, 21) == 20
    write_lines(log, 21, 31)  # written while nothing watches
    assert watched_while_writing(31, 41) == 40  # the restarted watch carries on from its offset
    store = Store(db)
    steps = store.load_steps("tail")
    assert [s.event_id for s in steps] == [f"e{n}" for n in range(1, 41)]  # each once, in order
    assert store.get_session("tail")["status"] == "running"  # the file never said it ended
    store.close()


@pytest.mark.parametrize("grown", [False, True], ids=["caught-short", "outgrew-old-offset"])
def test_copy_truncate_rotation_reads_the_new_content_from_its_start(store, tmp_path, grown):
    """logrotate's copytruncate keeps the inode: a watch that polls only after the new content outgrew the old
    offset sees no shrink, and must still notice the file is another one (its stored fingerprint differs)."""
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line(kind="session", session_id="old") + b"".join(step("old", n) for n in range(1, 41)))
    watcher = Watcher(store, [log])
    assert watcher.poll().steps == 40
    (tmp_path / "agent.jsonl.1").write_bytes(log.read_bytes())  # the copy ...
    with log.open("r+b") as fp:
        fp.truncate(0)  # ... and the truncate: same inode
    if not grown:
        assert watcher.poll().steps == 0  # seen empty
    new = [
        line(kind="step", session_id="new", event_id=f"e{n}", seq=n, type="think", content=f"after rotation {n}")
        for n in range(1, 301)
    ]
    log.write_bytes(line(kind="session", session_id="new") + b"".join(new[:150]))
    assert log.stat().st_size > 40 * len(step("old", 1))  # past the old offset
    first = watcher.poll()
    assert first.problems == [] and first.steps == 150
    with log.open("ab") as fp:
        fp.write(b"".join(new[150:]))
    assert watcher.poll().steps == 150
    assert watcher.poll().steps == 0  # nothing doubled
    assert [s.event_id for s in store.load_steps("new")] == [f"e{n}" for n in range(1, 301)]
    assert store.get_session("old")["steps"] == 40

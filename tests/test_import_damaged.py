"""A damaged file through the import command: one line naming the file and where it breaks, exit 1,
nothing stored; `--skip-bad` on a file where nothing is left refuses it the same way."""

from __future__ import annotations

import json
import zipfile

from cli_helpers import run_main
from conftest import FIXTURES

from replay_core.storage.store import Store

CASSETTE = FIXTURES / "anthropic/test_anthropic_tools_history_legacy.yaml"
EVAL = FIXTURES / "inspect_ai/2024-11-05T13-32-37-05-00_input-task_hxs4q9azL3ySGkjJirypKZ.eval"


def _import(monkeypatch, tmp_path, path, *flags):
    db = f"sqlite:///{tmp_path / 'd.db'}"
    ran = run_main(monkeypatch, ["import", str(path), "--db", db, "--json", *flags], env={})
    store = Store(db)
    try:
        return ran, json.loads(ran.stdout), store.session_ids()
    finally:
        store.close()


def test_a_cassette_with_a_byte_yaml_refuses_is_one_line(monkeypatch, tmp_path):
    data = CASSETTE.read_bytes()
    at = data.index(b"\n", 200)
    bad = tmp_path / "cassette.yaml"
    bad.write_bytes(data[:at] + b"\xff\xfe" + data[at:])  # invalid UTF-8: yaml.reader.ReaderError below the reader
    for flags in ((), ("--skip-bad",)):
        ran, out, stored = _import(monkeypatch, tmp_path, bad, *flags)
        assert ran.returncode == 1 and "Traceback" not in ran.stderr and stored == []
        assert out["refused"][0].startswith(f"{bad}:") and "invalid YAML" in out["refused"][0]
        assert all(r.startswith(str(bad)) and "\n" not in r for r in out["refused"])


def test_an_eval_archive_with_a_corrupt_member_names_the_member(monkeypatch, tmp_path):
    data = bytearray(EVAL.read_bytes())
    with zipfile.ZipFile(EVAL) as zf:
        info = zf.getinfo("samples/1_epoch_1.json")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for i in range(start + 40, start + 80):  # the deflate stream's middle, the CRC and sizes untouched
        data[i] ^= 0x5A
    bad = tmp_path / "log.eval"
    bad.write_bytes(bytes(data))
    ran, out, stored = _import(monkeypatch, tmp_path, bad)
    assert ran.returncode == 1 and "Traceback" not in ran.stderr and stored == []
    assert any(r.startswith(f"{bad}!samples/1_epoch_1.json: cannot read this ZIP member") for r in out["refused"]), out


def test_skip_bad_with_nothing_left_exits_1_and_lists_the_file(monkeypatch, tmp_path):
    """Every record of the file is bad: --skip-bad has nothing to store, and says so as a refusal."""
    lines = (FIXTURES / "openai_chat/chat_log.jsonl").read_bytes().split(b"\n")
    bad = tmp_path / "all_bad.jsonl"
    bad.write_bytes(b"\n".join(line[:-5] if line else line for line in lines))  # every line cut short
    ran, out, stored = _import(monkeypatch, tmp_path, bad, "--skip-bad")
    assert ran.returncode == 1 and stored == [] and out["sessions"] == []
    assert any(r.startswith(str(bad)) for r in out["refused"]), out

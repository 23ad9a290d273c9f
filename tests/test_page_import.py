"""The import page: uploads of several formats, per-file results with the lines at fault."""

from __future__ import annotations

import orjson
from apptest_helpers import REPO, demo_store, empty_store, page  # noqa: F401  (fixtures)

from replay_core.ingest.formats import registry
from ui.common import md

IMPORT = "pages/import_runs.py"
DEMO_FILE = REPO / "data" / "demo" / "01-refund-defective-backpack.jsonl"
OPENAI_LOG = REPO / "tests" / "fixtures" / "openai_chat" / "chat_log.jsonl"


def native_lines(*objs: dict) -> bytes:
    return b"\n".join(orjson.dumps({"schema": "agent-replay/v1", **o}) for o in objs) + b"\n"


GOOD = native_lines(
    {"kind": "session", "session_id": "up-1", "name": "uploaded"},
    {"kind": "step", "session_id": "up-1", "type": "think", "content": "token=abcd1234secretvalue here"},
    {"kind": "step", "session_id": "up-1", "type": "decision", "content": "done"},
)
BAD = native_lines(
    {"kind": "session", "session_id": "up-2"},
    {"kind": "step", "session_id": "up-2", "type": "thinking"},
    {"kind": "step", "session_id": "up-2", "type": "decision"},
)


def results(at) -> list[dict]:
    return at.dataframe[0].value.to_dict("records")


def upload(at, *files):
    at.file_uploader(key="uploads").set_value(list(files))
    return at.run()


def test_files_are_imported_each_with_its_result(empty_store):
    at = page(IMPORT)
    upload(
        at,
        ("good.jsonl", GOOD, "application/json"),
        ("bad.jsonl", BAD, "application/json"),
        ("notes.txt", b"just some text\n", "text/plain"),
        ("demo.jsonl", DEMO_FILE.read_bytes(), "application/json"),
        ("chat_log.jsonl", OPENAI_LOG.read_bytes(), "application/json"),
    )
    at.button[0].click().run()
    assert not at.exception
    rows = {r["File"]: r for r in results(at)}
    assert rows["good.jsonl"] == {
        "File": "good.jsonl",
        "Result": "Imported",
        "Format": "native",
        "Records": "3 of 3 lines used",
        "Ignored": "",
        "Runs": 1,
        "Steps": 2,
        "Duplicates": 0,
        "Redacted": 1,
        "Errors": 0,
    }
    assert rows["bad.jsonl"]["Result"] == "Refused: 1 bad record, nothing imported"
    assert rows["notes.txt"]["Result"] == "Not imported: no reader recognises it"
    assert [e.value for e in at.error] == [
        "notes.txt: not imported, no reader recognises it. It looks like plain text of 1 lines. Readers tried: none, no known "
        "format's signature is in it (known formats: " + ", ".join(registry()) + ")"
    ]
    assert rows["demo.jsonl"]["Steps"] == 17
    assert (rows["chat_log.jsonl"]["Format"], rows["chat_log.jsonl"]["Runs"], rows["chat_log.jsonl"]["Steps"]) == (
        "openai_chat",
        2,
        7,
    )
    assert [e.label for e in at.expander] == ["bad\\.jsonl: 1 bad record"]  # a file name is shown as text
    assert at.code[0].value.startswith("bad.jsonl:2: type: Input should be 'think'")
    assert empty_store.get_session("up-2") is None
    assert "[REDACTED]" in empty_store.load_steps("up-1")[0].content
    assert at.get("progress")[0].value == 100
    # Links to open what came in.
    assert [p.label for p in at.get("page_link")][:2] == [
        "Open up\\-1",
        "Open demo\\-01\\-refund\\-defective\\-backpack",
    ]  # ids shown as text


def test_bad_records_can_be_skipped(empty_store):
    at = page(IMPORT)
    upload(at, ("bad.jsonl", BAD, "application/json"))
    at.checkbox[0].check()
    at.button[0].click().run()
    row = results(at)[0]
    assert (row["Result"], row["Steps"], row["Errors"]) == ("Imported, 1 bad record skipped", 1, 1)
    assert empty_store.get_session("up-2")["steps"] == 1


def test_importing_twice_reports_duplicates(demo_store):
    at = page(IMPORT)
    upload(at, ("again.jsonl", DEMO_FILE.read_bytes(), "application/json"))
    at.button[0].click().run()
    row = results(at)[0]
    assert (row["Result"], row["Steps"], row["Duplicates"]) == ("Already imported: every step was a duplicate", 0, 17)


def test_every_known_format_is_offered_and_the_page_starts_empty(empty_store):
    at = page(IMPORT)
    assert not at.exception
    assert at.selectbox[0].options == ["Recognise it", *(f.label for f in registry().values())]
    (said,) = [m.value for m in at.markdown if m.value.startswith("Upload trace files")]
    assert ", ".join(md(f.label) for f in registry().values()) in said  # every reader's label, from the registry
    assert r"\~/\.claude/projects/\*/\*\.jsonl" in said  # shown as written, not struck through or in italics
    assert at.info[0].value == "No file chosen yet. Drop files above, or click to browse."
    assert at.button[0].disabled

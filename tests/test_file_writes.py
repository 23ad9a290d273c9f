"""A write shown as a diff against the last read of the same path (understand/file_writes.py).

Real files (tests/fixtures/SOURCES.md): Claude Code 2.1.258 (kzahel/yepanywhere @ 76ea6130…, a Read then a
Write of another path), Gemini CLI (yoavf/ai-sessions @ 85f76359…, write_file then `replace` edits, one failed),
Codex CLI 0.47 (yoavf/ai-sessions @ f685c3d5…, apply_patch), OpenHands V0 (All-Hands-AI/OpenHands @ dad59de5…,
str_replace_editor create); the demo coding run; and properties over generated runs (hypothesis).
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from replay_core.demo import load_demo
from replay_core.events import StepEvent
from replay_core.ingest.pipeline import import_file
from replay_core.understand.file_writes import MAX_DIFF_CHARS, MAX_DIFF_LINES, file_write, known_before, read_text

FIXTURES = Path(__file__).parent / "fixtures"


def steps_of(store, relative: str) -> list[StepEvent]:
    import_file(store, FIXTURES / relative)
    (row,) = store.list_sessions(limit=2)
    return store.load_steps(row["id"])


def at(steps: list[StepEvent], seq: int):
    return file_write(steps, next(i for i, s in enumerate(steps) if s.seq == seq))


def lines_of(text: str) -> list[str]:
    return text.splitlines()


def apply_unified(base: str, diff: str) -> list[str]:
    """The lines a unified diff turns `base` into (hunks in order; enough for difflib's output)."""
    old = base.splitlines()
    out: list[str] = []
    i = 0
    for line in diff.splitlines()[2:]:
        hunk = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", line)
        if hunk:
            start = int(hunk.group(1)) - (0 if hunk.group(2) == "0" else 1)
            out += old[i:start]
            i = start
        elif line.startswith("-"):
            assert old[i] == line[1:]
            i += 1
        elif line.startswith("+"):
            out.append(line[1:])
        elif line.startswith(" "):
            assert old[i] == line[1:]
            out.append(old[i])
            i += 1
    return out + old[i:]


def test_claude_code_write_with_no_earlier_read_of_that_path(sqlite_store):
    steps = steps_of(sqlite_store, "claude_code/yepanywhere_claude-basic_native.jsonl")
    write = at(steps, 7)  # Write /fixture/project/claude-result.txt; the run read notes.txt before, not this file
    assert (write.kind, write.path, write.base) == ("write", "/fixture/project/claude-result.txt", None)
    assert write.diff == "alpha beta gamma\n"
    assert write.note.startswith("No earlier read of /fixture/project/claude-result.txt in this run")
    known = known_before(steps, len(steps))
    assert known["/fixture/project/notes.txt"].text == "alpha\nbeta\n"  # Claude Code's "1\talpha" numbering taken off
    assert known["/fixture/project/notes.txt"].framing == ("the line numbers the tool added",)
    assert known["/fixture/project/claude-result.txt"].origin == "the read at step 18"  # the later read wins over the write
    assert all(at(steps, s.seq) is None for s in steps if s.tool_name in ("Read", "Bash"))


def test_gemini_cli_edits_are_diffed_against_the_write_with_earlier_edits_applied(sqlite_store):
    steps = steps_of(sqlite_store, "gemini_cli/yoavf_gemini-cli-pomodoro-timer.json")
    first = at(steps, 16)
    assert first.kind == "edit" and first.note.startswith("Diff against the write at step 7 (derived by this app, not recorded).")
    assert "+    transition: background-color 0.5s ease;" in first.diff.splitlines()
    written = next(s for s in steps if s.seq == 7).tool_args["content"]
    args = next(s for s in steps if s.seq == 16).tool_args
    assert (apply_unified(written, first.diff)) == lines_of(written.replace(args["old_string"], args["new_string"]))
    assert at(steps, 55).note.startswith("Diff against the write at step 9 with the edits at steps 29, 50 applied")
    failed = at(steps, 60)  # the tool refused this replace: its old text is not in what the run knows
    assert failed.note.startswith("The old text is not in the write at step 9 with the edits at steps 29, 50, 55 applied")
    assert failed.note.endswith("The tool reported this write as failed.")


def test_codex_patches_are_shown_as_recorded(sqlite_store):
    steps = steps_of(sqlite_store, "codex_cli/yoavf_codex-pomodoro-timer_rollout.jsonl")
    patch = at(steps, 31)
    assert (patch.kind, patch.path, patch.base) == ("patch", "styles.css", None)
    assert patch.diff.startswith("*** Begin Patch\n*** Update File: styles.css") and "nothing was computed" in patch.note


def test_openhands_create_is_a_write(sqlite_store):
    steps = steps_of(sqlite_store, "openhands/basic.json")
    write = at(steps, 3)
    assert (write.kind, write.path) == ("write", "/workspace/game_2048.py") and write.diff.startswith("import random\n")


def test_demo_coding_run_write_against_the_read_at_step_7(sqlite_store):
    load_demo(sqlite_store, only_if_empty=False)
    steps = sqlite_store.load_steps("demo-02-coding-format-price-failed")
    write = at(steps, 9)
    assert write.note == (
        "Diff against the read at step 7 (derived by this app, not recorded). "
        "Left out of the read: its first line (it names the file)."
    )
    assert write.diff.startswith("--- pricing/format.py (the read at step 7)\n+++ pricing/format.py (step 9)\n")
    assert '+CURRENCY_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥"}' in write.diff.splitlines()
    read = next(s for s in steps if s.seq == 7).content
    assert (apply_unified(read_text(read, "pricing/format.py")[0], write.diff)) == lines_of(
        next(s for s in steps if s.seq == 9).tool_args["content"]
    )
    assert at(steps, 12).note.startswith("No earlier read of checkout/summary.py in this run: shown is the edit itself")
    assert at(steps, 10) is None  # the write's result carries the arguments too: the diff is on the call


lines = st.lists(st.sampled_from(["a", "b", "c", "def f():", "    return 1", "", "x = 2"]), max_size=12)


def run(base: list[str], new: list[str], *, other_read: bool, read_after: bool) -> list[StepEvent]:
    steps = [
        StepEvent(session_id="s", seq=1, type="tool_call", tool_name="read_file", tool_args={"path": "f.py"}, tool_call_id="r1"),
        StepEvent(session_id="s", seq=2, type="tool_result", tool_name="read_file", tool_call_id="r1", content="\n".join(base)),
    ]
    if other_read:
        steps.append(
            StepEvent(
                session_id="s", seq=3, type="tool_result", tool_name="read_file", tool_args={"path": "g.py"}, content="other"
            )
        )
    steps.append(
        StepEvent(
            session_id="s",
            seq=4,
            type="tool_call",
            tool_name="write_file",
            tool_call_id="w1",
            tool_args={"path": "f.py", "content": "\n".join(new)},
        )
    )
    if read_after:
        steps.append(
            StepEvent(
                session_id="s", seq=5, type="tool_result", tool_name="read_file", tool_args={"path": "f.py"}, content="later"
            )
        )
    return steps


@settings(deadline=None)
@given(lines, lines, st.booleans(), st.booleans())
def test_a_write_is_diffed_against_the_last_earlier_read_of_its_path(base, new, other_read, read_after):
    steps = run(base, new, other_read=other_read, read_after=read_after)
    write = file_write(steps, next(i for i, s in enumerate(steps) if s.seq == 4))
    assert write.base is not None and write.base.seq == 2 and write.base.origin == "the read at step 2"
    if "\n".join(base) == "\n".join(new):
        assert write.diff == "" and write.note.startswith("No change against the read at step 2")
    elif lines_of("\n".join(base)) == lines_of("\n".join(new)):
        assert write.diff == "" and "only line endings or the final newline differ" in write.note
    else:
        assert (apply_unified("\n".join(base), write.diff)) == lines_of("\n".join(new))


@settings(deadline=None)
@given(lines, st.text(alphabet="xyz\n ", max_size=20))
def test_an_edit_is_applied_to_the_read_or_said_not_to_apply(base, replacement):
    text = "\n".join(base + ["MARK"])
    steps = [
        StepEvent(session_id="s", seq=1, type="tool_result", tool_name="Read", tool_args={"file_path": "f.py"}, content=text),
        StepEvent(
            session_id="s",
            seq=2,
            type="tool_call",
            tool_name="Edit",
            tool_args={"file_path": "f.py", "old_string": "MARK", "new_string": replacement},
        ),
    ]
    edit = file_write(steps, 1)
    assert edit.base.seq == 1
    assert (apply_unified(text, edit.diff)) == lines_of(text.replace("MARK", replacement))
    steps[0] = StepEvent(
        session_id="s", seq=1, type="tool_result", tool_name="Read", tool_args={"file_path": "g.py"}, content=text
    )
    assert file_write(steps, 1).note.startswith("No earlier read of f.py in this run: shown is the edit itself")


def test_a_partial_read_is_not_a_base():
    steps = [
        StepEvent(
            session_id="s",
            seq=1,
            type="tool_result",
            tool_name="Read",
            tool_args={"file_path": "f.py", "offset": 10, "limit": 5},
            content="part",
        ),
        StepEvent(session_id="s", seq=2, type="tool_call", tool_name="Write", tool_args={"file_path": "f.py", "content": "x"}),
    ]
    assert file_write(steps, 1).base is None


def test_a_file_too_large_to_diff_is_said_and_shown_whole():
    big = "\n".join(f"line {i}" for i in range(MAX_DIFF_LINES + 1))
    steps = [
        StepEvent(session_id="s", seq=1, type="tool_result", tool_name="read_file", tool_args={"path": "f.py"}, content=big),
        StepEvent(
            session_id="s", seq=2, type="tool_call", tool_name="write_file", tool_args={"path": "f.py", "content": big + "\nmore"}
        ),
    ]
    write = file_write(steps, 1)
    assert write.base.seq == 1 and write.diff == big + "\nmore"
    assert write.note.startswith(f"Too large to diff here (over {MAX_DIFF_CHARS:,} characters or {MAX_DIFF_LINES:,} lines)")

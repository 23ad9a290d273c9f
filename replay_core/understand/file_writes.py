"""A write to a file, shown as a diff against what the run last saw of that file.

Derived, and said so: the diff is against the last time the same path appears earlier in
the run as content — a read (a tool result of a read-like tool naming the path), a whole
write (a call carrying the full text), or an edit applied to one of those. Nothing is
invented: with no earlier content the write is shown whole and the note says so; an edit
whose old text is not in the known content is shown as old text → new text, with that said.

Which calls count (by their arguments, whatever the agent framework):
- a **write**: a path argument (`PATH_KEYS`) and a full-text argument (`TEXT_KEYS`), on a tool
  whose name does not say it reads (Write, write_file, str_replace_editor `create`…);
- an **edit**: a path and an old/new pair (`EDIT_PAIRS`: Edit, replace, str_replace…);
  `replace_all` replaces every occurrence, else exactly one must match;
- a **patch**: a tool named like `apply_patch`, or a text argument that is a patch
  (`*** Begin Patch`, `--- `/`diff --git`): it is already a diff and is shown as recorded;
  the files it names are no longer known afterwards;
- a **read**: an ok result of a tool whose name reads (`READ_WORDS`) naming one path, not
  partial (no offset/limit/range argument). The tool's own framing is taken off and said:
  a first line that names the path (`pricing/format.py (9 lines)`), and line numbers
  when every line carries one (`cat -n`, Claude Code's `12→`/`12\\t`).
A write or edit whose result failed does not change what is known.

Diffs are `difflib.unified_diff` by line (a change of line endings or of the final newline alone is
said, not drawn); texts over `MAX_DIFF_CHARS` characters or `MAX_DIFF_LINES` lines are not diffed
(said): difflib is quadratic at worst.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from ..events import StepEvent
from ..ingest.formats.jsondoc import parse_arguments

PATH_KEYS = ("file_path", "path", "filepath", "filename", "file", "target_file", "notebook_path", "absolute_path")
TEXT_KEYS = ("content", "file_text", "contents", "text", "new_content", "code")
EDIT_PAIRS = (("old_string", "new_string"), ("old_str", "new_str"), ("old", "new"), ("old_text", "new_text"))
PARTIAL_KEYS = ("offset", "limit", "view_range", "start_line", "end_line", "line_start", "line_end", "lines")
READ_WORDS = ("read", "view", "cat", "open", "get_file", "show")
PATCH_START = re.compile(r"^(\*\*\* Begin Patch|--- |diff --git )", re.M)
PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\+\+\+ (?:b/)?(.+?)\s*$", re.M)
NUMBERED = re.compile(r"^\s*\d+(?:\t|→|: ?)")
MAX_DIFF_CHARS = 400_000
MAX_DIFF_LINES = 2000  # per side: difflib is quadratic in lines at worst (~0.6 s at 2,000 here, ~5 s at 5,000)


@dataclass(frozen=True)
class Known:
    """What the run last saw of a file: its text and where that came from."""

    text: str
    seq: int  # the step it was last seen or changed at
    origin: str  # "the read at step 7", "the write at step 9"
    edits: tuple[int, ...] = ()  # seqs of the edits applied to it since
    framing: tuple[str, ...] = ()  # what was taken off a read (module docstring)

    @property
    def how(self) -> str:
        """'the read at step 7', or 'the read at step 7 with the edits at steps 12, 14 applied'."""
        if not self.edits:
            return self.origin
        plural = "s" if len(self.edits) > 1 else ""
        return f"{self.origin} with the edit{plural} at step{plural} {', '.join(map(str, self.edits))} applied"


@dataclass(frozen=True)
class FileWrite:
    seq: int
    path: str
    kind: str  # write | edit | patch
    base: Known | None  # None: nothing earlier in the run shows this file
    diff: str  # unified diff; the patch as recorded; or the whole new text when there is no base
    note: str  # said beside the diff: what it is against, and what was derived


def _args(step: StepEvent, calls: dict[str, StepEvent]) -> dict | None:
    args = step.tool_args
    if args is None and step.tool_call_id and step.tool_call_id in calls:
        args = calls[step.tool_call_id].tool_args
    args = parse_arguments(args)
    return args if isinstance(args, dict) else None


def _path(args: dict) -> str | None:
    for key in PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _reads(tool: str | None, args: dict) -> bool:
    name = (tool or "").lower()
    command = str(args.get("command", "")).lower()
    return command == "view" or (not command and any(w in name for w in READ_WORDS))


def _patch_text(tool: str | None, args: dict) -> str | None:
    for value in args.values():
        if isinstance(value, str) and (
            PATCH_START.search(value[:2000])
            and ("patch" in (tool or "").lower() or value.lstrip().startswith(("*** Begin Patch", "diff --git")))
        ):
            return value
    return None


def _patch_paths(patch: str) -> list[str]:
    return list(
        dict.fromkeys((m.group(1) or m.group(2)) for m in PATCH_FILE.finditer(patch) if (m.group(1) or m.group(2)) != "/dev/null")
    )


def classify(step: StepEvent, calls: dict[str, StepEvent]) -> tuple[str, dict] | None:
    """'write', 'edit', 'patch' or 'read' with the step's arguments; None for anything else."""
    if step.type not in ("tool_call", "tool_result"):
        return None
    args = _args(step, calls)
    if args is None:
        return None
    if step.type == "tool_call":
        if _patch_text(step.tool_name, args) is not None:
            return "patch", args
        path = _path(args)
        if path is None or _reads(step.tool_name, args):
            return None
        if any(isinstance(args.get(old), str) and isinstance(args.get(new), str) for old, new in EDIT_PAIRS):
            return "edit", args
        if any(isinstance(args.get(k), str) for k in TEXT_KEYS):
            return "write", args
        return None
    if step.status == "ok" and _path(args) and _reads(step.tool_name, args) and not any(k in args for k in PARTIAL_KEYS):
        return "read", args
    return None


def read_text(content: str, path: str) -> tuple[str, list[str]]:
    """A read result without the tool's framing (module docstring), and what was taken off."""
    lines = content.split("\n")
    taken = []
    name = path.rsplit("/", 1)[-1]
    if len(lines) > 1 and name and name in lines[0] and (path in lines[0] or lines[0].rstrip().endswith((":", ")"))):
        lines = lines[1:]
        taken.append("its first line (it names the file)")
    body = [ln for ln in lines if ln.strip()]
    if body and all(NUMBERED.match(ln) for ln in body):
        lines = [NUMBERED.sub("", ln, count=1) if ln.strip() else ln for ln in lines]
        taken.append("the line numbers the tool added")
    return "\n".join(lines), taken


def _failed_calls(steps: list[StepEvent]) -> set[str]:
    return {s.tool_call_id for s in steps if s.type != "tool_call" and s.tool_call_id and (s.type == "error" or s.status != "ok")}


def _edit(args: dict) -> tuple[str, str]:
    old, new = next((args[o], args[n]) for o, n in EDIT_PAIRS if isinstance(args.get(o), str) and isinstance(args.get(n), str))
    return old, new


def _diff(before: str, after: str, a: str, b: str) -> str | None:
    old, new = before.splitlines(), after.splitlines()
    if len(before) + len(after) > MAX_DIFF_CHARS or max(len(old), len(new)) > MAX_DIFF_LINES:
        return None
    return "\n".join(difflib.unified_diff(old, new, a, b, n=3, lineterm=""))


def known_before(steps: list[StepEvent], position: int) -> dict[str, Known]:
    """What the run had seen of each path before the step at `position` (one pass, in run order)."""
    calls = {s.tool_call_id: s for s in steps if s.type == "tool_call" and s.tool_call_id}
    failed = _failed_calls(steps)
    known: dict[str, Known] = {}
    for step in steps[:position]:
        found = classify(step, calls)
        if found is None:
            continue
        kind, args = found
        if step.type == "tool_call" and step.tool_call_id in failed:
            continue
        if kind == "patch":
            for p in _patch_paths(_patch_text(step.tool_name, args) or ""):
                known.pop(p, None)
            continue
        path = _path(args)
        if path is None:  # classify names only reads, writes and edits of a named file here
            continue
        seq = step.stored_seq
        if kind == "read":
            text, taken = read_text(step.content or "", path)
            known[path] = Known(text, seq, f"the read at step {seq}", framing=tuple(taken))
        elif kind == "write":
            text = next(args[k] for k in TEXT_KEYS if isinstance(args.get(k), str))
            known[path] = Known(text, seq, f"the write at step {seq}")
        else:
            base = known.get(path)
            old, new = _edit(args)
            if base is not None and old and (args.get("replace_all") or base.text.count(old) == 1):
                known[path] = Known(base.text.replace(old, new), seq, base.origin, (*base.edits, seq), base.framing)
            else:
                known.pop(path, None)  # what the file holds now is not known from the run
    return known


def file_write(steps: list[StepEvent], position: int) -> FileWrite | None:
    """The step at `position` as a write to a file with its diff (module docstring); None when it writes no file."""
    step = steps[position]
    if step.type != "tool_call":
        return None
    calls = {s.tool_call_id: s for s in steps if s.type == "tool_call" and s.tool_call_id}
    found = classify(step, calls)
    if found is None or found[0] == "read":
        return None
    kind, args = found
    seq = step.stored_seq
    if kind == "patch":
        patch = _patch_text(step.tool_name, args) or ""
        paths = _patch_paths(patch)
        return FileWrite(
            seq,
            ", ".join(paths) or "(files named in the patch)",
            "patch",
            None,
            patch,
            "The patch as the agent sent it (it is a diff already; nothing was computed).",
        )
    path = _path(args)
    if path is None:  # classify names only writes and edits of a named file here
        return None
    base = known_before(steps, position).get(path)
    failed = step.tool_call_id in _failed_calls(steps) if step.tool_call_id else False
    after_note = " The tool reported this write as failed." if failed else ""
    if kind == "write":
        text = next(args[k] for k in TEXT_KEYS if isinstance(args.get(k), str))
        if base is None:
            return FileWrite(
                seq,
                path,
                "write",
                None,
                text,
                f"No earlier read of {path} in this run: the written text is shown whole, with nothing to "
                f"compare it with.{after_note}",
            )
        return _against(seq, path, "write", base, text, after_note)
    old, new = _edit(args)
    if base is not None and old and (args.get("replace_all") or base.text.count(old) == 1):
        return _against(seq, path, "edit", base, base.text.replace(old, new), after_note)
    why = (
        f"No earlier read of {path} in this run"
        if base is None
        else f"The old text is {'not' if old not in base.text else 'more than once'} in {base.how}"
    )
    diff = _diff(old, new, f"{path} (old text)", f"{path} (new text)")
    if diff is None:
        return FileWrite(
            seq,
            path,
            "edit",
            base,
            new,
            f"{why}, and the edit is too large to diff here: its new text is shown whole.{after_note}",
        )
    return FileWrite(seq, path, "edit", base, diff, f"{why}: shown is the edit itself, old text against new text.{after_note}")


def _against(seq: int, path: str, kind: str, base: Known, text: str, after_note: str) -> FileWrite:
    diff = _diff(base.text, text, f"{path} ({base.how})", f"{path} (step {seq})")
    if diff is None:
        return FileWrite(
            seq,
            path,
            kind,
            base,
            text,
            f"Too large to diff here (over {MAX_DIFF_CHARS:,} characters or "
            f"{MAX_DIFF_LINES:,} lines): the new text is shown whole.{after_note}",
        )
    note = f"Diff against {base.how} (derived by this app, not recorded)."
    if not diff:
        note = (
            f"No change against {base.how}: the file was written with what the run last saw in it."
            if text == base.text
            else f"Against {base.how} only line endings or the final newline differ (a line diff does not show them)."
        )
    framing = f" Left out of the read: {' and '.join(base.framing)}." if base.framing else ""
    return FileWrite(seq, path, kind, base, diff, note + after_note + framing)

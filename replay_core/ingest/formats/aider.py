"""Aider chat histories (`.aider.chat.history.md`): the markdown log aider appends to as it works.

`# aider chat started at <local time>` opens a session (a run). After it, `#### ` lines are what the
person typed (an input step; `/commands` included), `> ` lines are aider's own output and every other
line is the model's answer (a decision). Of aider's output: `Main model: <model> with …` (or the older
`Model: …`) sets the model of the answers that follow (a `/model` switch shows it again), `Aider vX`
the run's version, `Tokens: 3.2k sent, 222 received. Cost: $0.0014 message, …` the tokens and cost of
the answer before it (aider rounds to thousands: `tokens_rounded` says so), `Applied edit to <file>` an
edit's tool_result, `Commit <hash> <message>` a commit's; the rest (questions, warnings, file lists) an
observation per block. Times: only a session's start is written, in the machine's local time without a
zone, read as UTC.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from .reader import BadRecord, Event, Records
from .runs import Run, parse_time, stable_id

_START = re.compile(r"^# aider chat started at (.+?)\s*$")
_MODEL = re.compile(r"^(?:Main model|Model): (\S+)")
_VERSION = re.compile(r"^Aider v(\S+)")
_TOKENS = re.compile(
    r"^Tokens: ([\d.]+)(k?) sent(?:, ([\d.]+)(k?) cache \w+)*?, ([\d.]+)(k?) received\.(?: Cost: \$([\d.]+) message)?"
)
_APPLIED = re.compile(r"^Applied edit to (.+)$")
_COMMIT = re.compile(r"^Commit ([0-9a-f]{6,40}) (.*)$")
_RESULTS = ((_APPLIED, "edit", "file"), (_COMMIT, "git_commit", "commit"))  # aider's lines that are a tool's result


def _count(number: str, k: str) -> int:
    return round(float(number) * (1000 if k else 1))


class _Session:
    def __init__(self, run: Run, where: str):
        self.run, self.where = run, where
        self.model: str | None = None
        self.answers: list[int] = []  # indexes of answer steps, for the token line that follows them
        self.n = 0

    def key(self) -> str:
        self.n += 1
        return f"b{self.n}"

    def user(self, lines: list[str], line: int) -> None:
        text = "\n".join(lines)
        self.run.step(self.key(), "input", where=f"{self.where}:{line}", content=text, metadata={"role": "user"})
        self.run.session.setdefault("name", next((t for t in lines if not t.startswith("/")), text)[:200])

    def answer(self, lines: list[str], line: int) -> None:
        text = "\n".join(lines).strip("\n")
        if text:
            self.run.step(self.key(), "decision", where=f"{self.where}:{line}", content=text, model=self.model)
            self.answers.append(len(self.run.steps) - 1)

    def output(self, lines: list[str], line: int) -> None:
        rest: list[str] = []
        for text in lines:
            if m := _MODEL.match(text):
                self.model = m.group(1)
                self.run.session.setdefault("model", self.model)
            if m := _VERSION.match(text):
                self.run.session.setdefault("agent_version", m.group(1)[:100])
            if (m := _TOKENS.match(text)) and self.answers:
                self._usage(m)
            done = next(((tool, key, m) for pattern, tool, key in _RESULTS if (m := pattern.match(text))), None)
            if done is not None:
                tool, key, m = done
                where = f"{self.where}:{line}"
                self.run.step(self.key(), "tool_result", where=where, tool_name=tool, content=text, metadata={key: m.group(1)})
            else:
                rest.append(text)
        if rest:
            self.run.step(
                self.key(), "observation", where=f"{self.where}:{line}", content="\n".join(rest), metadata={"role": "aider"}
            )

    def _usage(self, m: re.Match[str]) -> None:
        """The token line names the answer just before it; set on that step (made again with the figures)."""
        at = self.answers.pop()
        step = self.run.steps[at]
        rounded = bool(m.group(2) or m.group(6))
        fields: dict[str, Any] = {
            "tokens_in": _count(m.group(1), m.group(2)),
            "tokens_out": _count(m.group(5), m.group(6)),
            "cost_usd": float(m.group(7)) if m.group(7) else None,
            "metadata": {**(step.metadata or {}), "tokens_rounded": True} if rounded else step.metadata,
        }
        self.run.steps[at] = step.model_copy(update=fields)


class AiderFormat:
    name = "aider"
    label = "Aider chat history (.aider.chat.history.md)"
    unwatchable = "names its runs by a hash of the whole file, which changes as the file grows"  # (watch refuses it)

    def sniff(self, head: bytes, filename: str) -> bool:
        return b"# aider chat started at " in head[:8192]

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Records]:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield BadRecord(f"{filename}: byte {exc.start}", "not UTF-8 text")
            return
        blocks = list(_blocks(text.split("\n")))
        yield Records(len(blocks), "blocks")
        session: _Session | None = None
        runs: list[Run] = []
        for kind, lines, line in blocks:
            if kind == "start":
                started: datetime | None = parse_time(lines[0])
                run = Run(stable_id(filename, data, len(runs)), f"{filename}:{line}", agent_id="aider", started_at=started)
                runs.append(run)
                session = _Session(run, filename)
                continue
            if session is None:  # lines before the first session header
                run = Run(stable_id(filename, data, 0), filename, agent_id="aider")
                runs.append(run)
                session = _Session(run, filename)
            getattr(session, kind)(lines, line)
        for run in runs:
            yield from run.events()


def _blocks(lines: list[str]) -> Iterator[tuple[str, list[str], int]]:
    """(kind, lines, first line number): kind start / user / output / answer; markdown's trailing
    two-space line breaks taken off."""
    kind: str | None = None
    held: list[str] = []
    first = 0
    for number, raw in enumerate(lines, start=1):
        line = raw[:-2] if raw.endswith("  ") else raw
        if m := _START.match(line):
            if kind and (kind != "answer" or "".join(held).strip()):
                yield kind, held, first
            yield "start", [m.group(1)], number
            kind, held = None, []
            continue
        this = "user" if line.startswith("#### ") else "output" if line.startswith(">") else "answer"
        if this == "answer" and kind != "answer" and not line.strip():
            continue  # blank lines between blocks
        if this != kind:
            if kind and (kind != "answer" or "".join(held).strip()):
                yield kind, held, first
            kind, held, first = this, [], number
        held.append(line[5:] if this == "user" else line[1:].lstrip() if this == "output" else line)
    if kind and (kind != "answer" or "".join(held).strip()):
        yield kind, held, first


FORMAT = AiderFormat()

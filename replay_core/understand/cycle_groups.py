"""What a run did, in a sentence per group of decision cycles, for readers who are not engineers.

Consecutive cycles that call the same tools (or none) form one group: "Steps 4–9: searched
flights three times; it failed twice." Everything in a sentence is counted from the steps:
calls are the group's `tool_call` steps (or results, for sources that record only those),
failures its errored or blocked results of that tool. Verbs come from the tool's name
(`search_flights` → "searched flights", `browser.click` → "clicked"); a name that does not start with a known verb is
told as "called NAME". Steps outside any cycle (inputs, groups) are not told. At most
`MAX_GROUPS` sentences: the rest are counted in a last one, never dropped silently.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from .cycles import Cycle

MAX_GROUPS = 8
PAST = {
    "search": "searched",
    "read": "read",
    "write": "wrote",
    "run": "ran",
    "get": "got",
    "fetch": "fetched",
    "list": "listed",
    "edit": "edited",
    "create": "created",
    "update": "updated",
    "delete": "deleted",
    "remove": "removed",
    "open": "opened",
    "click": "clicked",
    "send": "sent",
    "book": "booked",
    "check": "checked",
    "find": "found",
    "query": "queried",
    "lookup": "looked up",
    "look": "looked",
    "call": "called",
    "navigate": "navigated",
    "type": "typed",
    "submit": "submitted",
    "download": "downloaded",
    "upload": "uploaded",
    "save": "saved",
    "load": "loaded",
    "view": "viewed",
    "execute": "ran",
    "exec": "ran",
    "apply": "applied",
    "replace": "replaced",
    "grep": "searched with grep",
    "glob": "listed files",
    "bash": "ran shell commands",
    "shell": "ran shell commands",
    "cancel": "cancelled",
    "refund": "refunded",
    "add": "added",
    "set": "set",
    "post": "posted",
    "put": "put",
    "scroll": "scrolled",
    "go": "went",
    "ask": "asked",
    "lock": "locked",
    "unlock": "unlocked",
    "reset": "reset",
    "compute": "computed",
    "calculate": "calculated",
    "describe": "described",
    "append": "appended to",
    "issue": "issued",
    "request": "requested",
    "fill": "filled in",
    "select": "selected",
    "goto": "went to",
    "publish": "published",
    "migrate": "migrated",
    "flag": "flagged",
    "verify": "verified",
    "snapshot": "took a snapshot of",
    "install": "installed",
    "move": "moved",
    "rename": "renamed",
}
_NUMBERS = {
    1: "once",
    2: "twice",
    3: "three times",
    4: "four times",
    5: "five times",
    6: "six times",
    7: "seven times",
    8: "eight times",
    9: "nine times",
    10: "ten times",
}
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


@dataclass(frozen=True)
class CycleGroup:
    first_seq: int
    last_seq: int
    cycles: int
    tools: tuple[str, ...]  # in order of first call; () for cycles that call no tool
    calls: dict[str, int]
    failures: dict[str, int]
    errors: int  # errored steps of the group with no tool (the run's own errors)

    @property
    def sentence(self) -> str:
        span = f"Step {self.first_seq}" if self.first_seq == self.last_seq else f"Steps {self.first_seq}–{self.last_seq}"
        if not self.tools:
            what = "reasoned without calling a tool" + (f" ({self.cycles} cycles)" if self.cycles > 1 else "")
        else:
            parts = []
            for tool in self.tools:
                part = f"{action(tool)} {times(self.calls[tool])}"
                failed = self.failures.get(tool, 0)
                if failed:
                    part += (
                        " (failed)"
                        if failed >= self.calls[tool] == 1
                        else f" (failed {'every time' if failed >= self.calls[tool] else times(failed)})"
                    )
                parts.append(part)
            what = _join(parts)
        if self.errors:
            what += f"; {self.errors} error{'s' if self.errors != 1 else ''} recorded"
        return f"{span}: {what}."

    def to_dict(self) -> dict:
        return {
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "cycles": self.cycles,
            "tools": list(self.tools),
            "calls": self.calls,
            "failures": self.failures,
            "errors": self.errors,
            "sentence": self.sentence,
        }


def action(tool: str) -> str:
    """`search_flights` → 'searched flights'; `browser.click` → 'clicked'; `Bash` → 'ran shell commands';
    else 'called NAME'."""
    words = [w.lower() for w in _WORDS.findall(tool.rsplit(".", 1)[-1])]
    if words and words[0] in PAST:
        rest = " ".join(words[1:])
        return f"{PAST[words[0]]} {rest}".strip()
    return f"called {tool}"


def times(n: int) -> str:
    return _NUMBERS.get(n, f"{n} times")


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


_ANSWERS = frozenset(("tool_result", "observation"))
_FAILED = frozenset(("error", "blocked"))


@dataclass(slots=True)
class _CycleSteps:
    """One cycle's steps as a group's sentence counts them, each step looked at once."""

    cycle: Cycle
    calls: list  # the tool each tool_call step names (None: none), in run order
    answers: list  # the same of each tool_result and observation step
    failed: list  # (tool, is a tool call) of each errored or blocked step

    def tools(self) -> tuple[str, ...]:
        """The tools its calls name (results', for sources that record only those), first call first."""
        named = dict.fromkeys(self.calls or self.answers)
        named.pop(None, None)
        named.pop("", None)
        return tuple(named)


def _runs(columns: Mapping[str, Sequence], cycles: list[Cycle]) -> Iterator[list[_CycleSteps]]:
    """The cycles with their steps, in runs of consecutive cycles that call the same tools, one run at a
    time (a 100,000-step run can have 25,000 of them: held all at once, they set off full collections)."""
    types, names, statuses = columns["type"], columns["tool_name"], columns["status"]
    run: list[_CycleSteps] = []
    last: frozenset | None = None
    for cycle in cycles:
        calls, answers, failed = [], [], []
        for p in cycle.positions:
            kind = types[p]
            if kind == "tool_call":
                calls.append(names[p])
            elif kind in _ANSWERS:
                answers.append(names[p])
            if kind == "error" or statuses[p] in _FAILED:
                failed.append((names[p], kind == "tool_call"))
        steps = _CycleSteps(cycle, calls, answers, failed)
        key = frozenset(steps.tools())
        if run and key != last:
            yield run
            run = []
        run.append(steps)
        last = key
    if run:
        yield run


def _group(run: list[_CycleSteps]) -> CycleGroup:
    tools = tuple(dict.fromkeys(t for c in run for t in c.tools()))
    any_call = any(c.calls for c in run)
    calls = {t: sum((c.calls if any_call else c.answers).count(t) for c in run) for t in tools}
    failures = {t: n for t in tools if (n := sum(name == t and not call for c in run for name, call in c.failed))}
    errors = sum(name not in calls for c in run for name, _ in c.failed)
    return CycleGroup(run[0].cycle.first_seq, run[-1].cycle.last_seq, len(run), tools, calls, failures, errors)


def _calls(run: list[_CycleSteps]) -> int:
    """sum(_group(run).calls.values()), without making the group: every cycle of a run names the same tools,
    so that is every call naming a tool (every such result, in a run without calls)."""
    any_call = any(c.calls for c in run)
    return sum(1 for c in run for t in (c.calls if any_call else c.answers) if t)


def cycle_groups(columns: Mapping[str, Sequence], cycles: list[Cycle]) -> list[CycleGroup]:
    """Consecutive cycles with the same tools, each as a CycleGroup, in run order; from the run's step
    columns (Timeline.columns: type, tool_name, status), so that telling a run builds no step object."""
    return [_group(run) for run in _runs(columns, cycles)]


def story(columns: Mapping[str, Sequence], cycles: list[Cycle]) -> list[str]:
    """The sentences of the plain header: one per group, the groups past MAX_GROUPS counted in a last one
    (only counted: making each of a 100,000-step run's 25,000 groups was most of its header)."""
    lines: list[str] = []
    first = last = None
    groups = counted_cycles = calls = 0
    for run in _runs(columns, cycles):
        if len(lines) < MAX_GROUPS:
            lines.append(_group(run).sentence)
            continue
        first = run[0].cycle.first_seq if first is None else first
        last = run[-1].cycle.last_seq
        groups, counted_cycles, calls = groups + 1, counted_cycles + len(run), calls + _calls(run)
    if groups:
        lines.append(
            f"Steps {first}–{last}: {groups} more groups of cycles "
            f"({counted_cycles} cycles, {calls} tool call{'s' if calls != 1 else ''}), not told one by one."
        )
    return lines

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .cycles import Cycle

MAX_GROUPS = 8
PAST = {"search": "searched", "read": "read", "write": "wrote", "run": "ran", "get": "got", "fetch": "fetched", "list": "listed",
        "edit": "edited", "create": "created", "update": "updated", "delete": "deleted", "remove": "removed", "open": "opened",
        "click": "clicked", "send": "sent", "book": "booked", "check": "checked", "find": "found", "query": "queried",
        "lookup": "looked up", "look": "looked", "call": "called", "navigate": "navigated", "type": "typed", "submit": "submitted",
        "download": "downloaded", "upload": "uploaded", "save": "saved", "load": "loaded", "view": "viewed", "execute": "ran",
        "exec": "ran", "apply": "applied", "replace": "replaced", "grep": "searched with grep", "glob": "listed files",
        "bash": "ran shell commands", "shell": "ran shell commands", "cancel": "cancelled", "refund": "refunded",
        "add": "added", "set": "set", "post": "posted", "put": "put", "scroll": "scrolled", "go": "went", "ask": "asked",
        "lock": "locked", "unlock": "unlocked", "reset": "reset", "compute": "computed", "calculate": "calculated",
        "describe": "described", "append": "appended to", "issue": "issued", "request": "requested", "fill": "filled in",
        "select": "selected", "goto": "went to", "publish": "published", "migrate": "migrated", "flag": "flagged",
        "verify": "verified", "snapshot": "took a snapshot of", "install": "installed", "move": "moved", "rename": "renamed"}
_NUMBERS = {1: "once", 2: "twice", 3: "three times", 4: "four times", 5: "five times", 6: "six times", 7: "seven times",
            8: "eight times", 9: "nine times", 10: "ten times"}
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
                    part += " (failed)" if failed >= self.calls[tool] == 1 else \
                        f" (failed {'every time' if failed >= self.calls[tool] else times(failed)})"
                parts.append(part)
            what = _join(parts)
        if self.errors:
            what += f"; {self.errors} error{'s' if self.errors != 1 else ''} recorded"
        return f"{span}: {what}."

    def to_dict(self) -> dict:
        return {"first_seq": self.first_seq, "last_seq": self.last_seq, "cycles": self.cycles, "tools": list(self.tools),
                "calls": self.calls, "failures": self.failures, "errors": self.errors, "sentence": self.sentence}


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


@dataclass
class _CycleCounts:
    """One cycle's steps counted once (a 100,000-step run's header went over its steps twice per cycle)."""

    tools: tuple[str, ...]  # the tools its calls name (results', for sources that record only those), first call first
    called: dict  # tool_call steps by tool
    answered: dict  # tool_result and observation steps by tool
    failed: dict  # errored or blocked steps by tool (None: no tool), tool calls included
    failed_results: dict  # the same, tool calls left out


def _counts(columns: Mapping[str, Sequence], cycle: Cycle) -> _CycleCounts:
    called: dict = {}
    answered: dict = {}
    failed: dict = {}
    failed_results: dict = {}
    types, names, statuses = columns["type"], columns["tool_name"], columns["status"]
    for p in cycle.positions:
        kind, name = types[p], names[p]
        if kind == "tool_call":
            called[name] = called.get(name, 0) + 1
        elif kind in ("tool_result", "observation"):
            answered[name] = answered.get(name, 0) + 1
        if kind == "error" or statuses[p] in ("error", "blocked"):
            failed[name] = failed.get(name, 0) + 1
            if kind != "tool_call":
                failed_results[name] = failed_results.get(name, 0) + 1
    named = called if called else answered
    return _CycleCounts(tuple(t for t in named if t), called, answered, failed, failed_results)


def cycle_groups(columns: Mapping[str, Sequence], cycles: list[Cycle]) -> list[CycleGroup]:
    """Consecutive cycles with the same tools, each as a CycleGroup, in run order; from the run's step
    columns (Timeline.columns: type, tool_name, status), so that telling a run builds no step object."""
    runs: list[list[tuple[Cycle, _CycleCounts]]] = []
    keys: list[frozenset] = []
    for cycle in cycles:
        counts = _counts(columns, cycle)
        key = frozenset(counts.tools)
        if runs and keys[-1] == key:
            runs[-1].append((cycle, counts))
        else:
            runs.append([(cycle, counts)])
            keys.append(key)
    out = []
    for group in runs:
        tools = tuple(dict.fromkeys(t for _, c in group for t in c.tools))
        any_call = any(c.called for _, c in group)
        calls = {t: sum((c.called if any_call else c.answered).get(t, 0) for _, c in group) for t in tools}
        failures = {t: n for t in tools if (n := sum(c.failed_results.get(t, 0) for _, c in group))}
        errors = sum(n for _, c in group for name, n in c.failed.items() if name not in calls)
        out.append(CycleGroup(group[0][0].first_seq, group[-1][0].last_seq, len(group), tools, calls, failures, errors))
    return out


def story(columns: Mapping[str, Sequence], cycles: list[Cycle]) -> list[str]:
    """The sentences of the plain header: one per group, the groups past MAX_GROUPS counted in a last one."""
    groups = cycle_groups(columns, cycles)
    lines = [g.sentence for g in groups[:MAX_GROUPS]]
    rest = groups[MAX_GROUPS:]
    if rest:
        calls = sum(sum(g.calls.values()) for g in rest)
        lines.append(f"Steps {rest[0].first_seq}–{rest[-1].last_seq}: {len(rest)} more groups of cycles "
                     f"({sum(g.cycles for g in rest)} cycles, {calls} tool call{'s' if calls != 1 else ''}), not told one by one.")
    return lines

"""Compare two runs down to the first step where they part ways (docs/architecture.md, "Replay and compare").

The steps of both runs are aligned in two passes of an exact longest common subsequence: first on the
whole normalised step (identical steps anchor the alignment, so an inserted or dropped
step reads as such), then, between anchors, on the step signature (type, tool name), so
that a changed step is paired with its counterpart. Each aligned pair that differs is
diffed with DeepDiff on normalised fields; ids, times, durations, tokens, costs and the
model name are left out unless asked for, so that "same behaviour" means the same.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import orjson
from rapidfuzz.distance import Indel

from ..events import StepEvent
from ..ingest.formats.jsondoc import parse_arguments
from ..ingest.pipeline import collector_paused
from ..storage.store import Store
from .cycles import cycle_of_steps

# Compared by default; everything a run *did*.
COMPARED = ("type", "tool_name", "tool_args", "content", "status", "error_class", "retry", "agent_id", "metadata")
# Left out unless named in `include`.
OPTIONAL = {
    "ids": ("event_id", "tool_call_id", "parent_id"),
    "timing": ("timestamp", "duration_ms"),
    "tokens": ("tokens_in", "tokens_out"),
    "cost": ("cost_usd",),
    "model": ("model",),
}
# Metadata keys replay adds to say where a step came from; never part of what a step did.
REPLAY_MARKERS = frozenset({"recorded", "source_seq", "live", "provider_retries", "latency_ms"})
# Metadata keys that say how the source recorded a step: its span's identity (ids, names, times) and
# whether its cost was estimated. A replay's own steps cannot have them, and they are not behaviour.
RECORD_MARKERS = frozenset({"otel", "cost_estimated"})
KINDS = (
    "different tool",
    "different arguments",
    "different result",
    "different text",
    "extra step",
    "missing step",
    "different outcome",
)
# ---------------------------------------------------------------------------- alignment


def _interned(a: Sequence, b: Sequence) -> tuple[list[int], list[int]]:
    """Both sequences as small ints, one per distinct item, so equal means equal (no hash collisions)."""
    ids: dict[Any, int] = {}
    return [ids.setdefault(x, len(ids)) for x in a], [ids.setdefault(x, len(ids)) for x in b]


def lcs_pairs(a: Sequence, b: Sequence) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of a and b: exact at any number of edits.

    rapidfuzz's bit-parallel LCS (C++, O(N·M/64), common prefix and suffix trimmed first)
    stays under a second for two 50,000-step runs with thousands of differences, where
    Myers in Python costs O(D²).
    """
    ia, ib = _interned(a, b)
    pairs: list[tuple[int, int]] = []
    for op in Indel.opcodes(ia, ib):
        if op.tag == "equal":
            pairs += zip(range(op.src_start, op.src_end), range(op.dest_start, op.dest_end), strict=True)
    return pairs


def align(keys_a: Sequence, keys_b: Sequence, sigs_a: Sequence, sigs_b: Sequence) -> list[tuple[int | None, int | None]]:
    """Alignment rows (i, j), (i, None) or (None, j) in order.

    Pass 1 matches identical steps; pass 2 pairs steps of the same signature between them.
    Within a gap, steps only A has come before steps only B has.
    """
    pairs: list[tuple[int, int]] = []
    prev_i = prev_j = -1
    for i, j in [*lcs_pairs(keys_a, keys_b), (len(keys_a), len(keys_b))]:
        gap_a, gap_b = sigs_a[prev_i + 1 : i], sigs_b[prev_j + 1 : j]
        if gap_a and gap_b:
            pairs += [(prev_i + 1 + x, prev_j + 1 + y) for x, y in lcs_pairs(gap_a, gap_b)]
        if i < len(keys_a):
            pairs.append((i, j))
        prev_i, prev_j = i, j
    rows: list[tuple[int | None, int | None]] = []
    prev_i = prev_j = -1
    for i, j in [*pairs, (len(sigs_a), len(sigs_b))]:
        rows += [(x, None) for x in range(prev_i + 1, i)]
        rows += [(None, y) for y in range(prev_j + 1, j)]
        if i < len(sigs_a):
            rows.append((i, j))
        prev_i, prev_j = i, j
    return rows


# ---------------------------------------------------------------------------- normalising


def _compared_names(include: Iterable[str]) -> tuple[str, ...]:
    return (*COMPARED, *(name for group in include for name in OPTIONAL[group]))


def _without_markers(metadata: dict | None) -> dict | None:
    kept = {k: v for k, v in (metadata or {}).items() if k not in REPLAY_MARKERS and k not in RECORD_MARKERS}
    return kept or None


# How a compared field's value is normalised; one rule set for a step's key and for its diffed dict.
NORMALISED = {
    "tool_args": parse_arguments,
    "metadata": _without_markers,
    "content": lambda text: text or None,  # no text, written "" or left out
    "retry": lambda retry: retry or 0,
    "timestamp": lambda stamp: None if stamp is None else stamp.isoformat(),
}


def normalise(step: StepEvent, include: Iterable[str] = (), *, names: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The fields of a step that say what it did (plus any optional group in `include`)."""
    fields = step.__dict__
    out = {name: fields.get(name) for name in names or _compared_names(include)}
    for name, rule in NORMALISED.items():
        if name in out:
            out[name] = rule(out[name])
    return out


def _hashable(value: Any) -> Any:
    return (
        orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)
        if isinstance(value, dict | list)
        else value
    )


def step_keys(steps: Sequence[StepEvent], names: tuple[str, ...]) -> list[tuple]:
    """Each step's normalised fields as one hashable key, equal when the steps did the same: the text
    fields as they are, the JSON ones (arguments, metadata) dumped with sorted keys. Built a field at a
    time over all steps, with no dict per step and no text copied: building and dumping a dict per step
    was a third of comparing two 50,000-step runs."""
    columns = []
    for name in names:
        column = [step.__dict__.get(name) for step in steps]
        rule = NORMALISED.get(name)
        column = [rule(value) for value in column] if rule else column
        columns.append([_hashable(value) for value in column] if name in ("tool_args", "metadata") else column)
    return list(zip(*columns, strict=True))


def signature(step: StepEvent) -> tuple[str, str | None]:
    return (step.type, step.tool_name)


# ---------------------------------------------------------------------------- describing


def _short(value: Any, limit: int = 80) -> str:
    """A value for a sentence: text in quotes on one line, cut at `limit`; other values as JSON."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return f"“{text}”" if isinstance(value, str) else text


def _call(step: StepEvent) -> str:
    args = parse_arguments(step.tool_args)
    if isinstance(args, dict):
        inner = ", ".join(f"{k}={_short(v, 40)}" for k, v in args.items())
    else:
        inner = "" if args is None else _short(args, 60)
    text = f"{step.tool_name or 'a tool'}({inner})"
    return text if len(text) <= 160 else text[:159] + "…)"


def describe(step: StepEvent) -> str:
    """What a step did, as the rest of a sentence whose subject is the run ("A called …")."""
    kind = step.type
    if kind == "tool_call":
        return f"called {_call(step)}"
    if kind in ("tool_result", "observation") and (step.status == "error" or step.error_class):
        return f"got an error from {step.tool_name or 'the tool'} ({step.error_class or 'error'}): {_short(step.content or '')}"
    if kind == "tool_result":
        return f"got {_short(step.content or '')} from {step.tool_name or 'the tool'}"
    if kind == "error":
        return f"hit an error ({step.error_class or 'error'}): {_short(step.content or '')}"
    verbs = {
        "think": "thought",
        "decision": "answered",
        "input": "received the input",
        "observation": "observed",
        "span": "opened",
    }
    return f"{verbs.get(kind, kind)} {_short(step.content or '')}"


def _where(a_seq: int | None, b_seq: int | None) -> str:
    if a_seq is not None and a_seq == b_seq:
        return f"Step {a_seq}"
    if a_seq is None:
        return f"Step {b_seq} of B (after the end of A)"
    if b_seq is None:
        return f"Step {a_seq} of A (after the end of B)"
    return f"Step {a_seq} of A (step {b_seq} of B)"


def _arg_changes(a: StepEvent, b: StepEvent) -> str:
    args_a, args_b = parse_arguments(a.tool_args), parse_arguments(b.tool_args)
    if not (isinstance(args_a, dict) and isinstance(args_b, dict)):
        return f"A {_short(args_a)}, B {_short(args_b)}"
    keys = [k for k in dict.fromkeys([*args_a, *args_b]) if args_a.get(k, ...) != args_b.get(k, ...)]
    parts = []
    for k in keys[:3]:
        va = _short(args_a[k], 40) if k in args_a else "(none)"
        vb = _short(args_b[k], 40) if k in args_b else "(none)"
        parts.append(f"{k}: A {va}, B {vb}")
    more = f" (and {len(keys) - 3} more)" if len(keys) > 3 else ""
    return "; ".join(parts) + more


# ---------------------------------------------------------------------------- result


@dataclass
class Row:
    """One line of the side-by-side view: a pair, or a step only one run has."""

    a: StepEvent | None
    b: StepEvent | None
    names: tuple[str, ...] = field(repr=False)  # the compared fields
    same_key: bool = field(repr=False)  # both steps' keys equal: nothing to normalise

    @property
    def paired(self) -> bool:
        return self.a is not None and self.b is not None

    @property
    def step(self) -> StepEvent:
        """A's step, else B's: a row holds one at least."""
        step = self.a if self.a is not None else self.b
        if step is None:
            raise ValueError("a row holds one step at least")
        return step

    @cached_property
    def norm_a(self) -> dict | None:
        return normalise(self.a, names=self.names) if self.a is not None else None

    @cached_property
    def norm_b(self) -> dict | None:
        return normalise(self.b, names=self.names) if self.b is not None else None

    @cached_property
    def changed(self) -> tuple[str, ...]:
        """Fields that differ (normalised); empty for an identical pair."""
        # equal keys first: most rows of two runs are identical pairs, which need no normalising
        if self.same_key or (a := self.norm_a) is None or (b := self.norm_b) is None:
            return ()
        return tuple(k for k in a if a[k] != b.get(k))

    @property
    def same(self) -> bool:
        return self.paired and not self.changed

    @property
    def kind(self) -> str | None:
        if self.a is None:
            return "extra step"
        if self.b is None:
            return "missing step"
        if not self.changed:
            return None
        if self.a.type == "tool_call":
            return "different arguments" if "tool_args" in self.changed else "different text"
        if self.a.type in ("tool_result", "observation", "error"):
            return "different result"
        return "different text"

    @cached_property
    def diff(self) -> str:
        """DeepDiff of the normalised pair, as sentences ('' for identical or one-sided rows)."""
        if not self.paired or not self.changed:
            return ""
        from deepdiff import DeepDiff

        text = DeepDiff(self.norm_a, self.norm_b, verbose_level=2).pretty()
        return text.replace("root['", "['")

    def to_dict(self, with_diff: bool = True) -> dict:
        out: dict[str, Any] = {
            "a_seq": self.a.seq if self.a else None,
            "b_seq": self.b.seq if self.b else None,
            "type": self.step.type,
            "tool_name": self.step.tool_name,
            "same": self.same,
            "kind": self.kind,
        }
        if self.paired and self.changed:
            out["changed"] = list(self.changed)
            if with_diff:
                out["diff"] = self.diff
        return out


@dataclass
class Divergence:
    a_seq: int | None
    b_seq: int | None
    kind: str
    summary: str
    row: int | None  # index into Comparison.rows (None for a different outcome)

    def to_dict(self) -> dict:
        return {"a_seq": self.a_seq, "b_seq": self.b_seq, "kind": self.kind, "summary": self.summary, "row": self.row}


@dataclass
class Comparison:
    a: dict  # session rows (with "id")
    b: dict
    rows: list[Row]
    first_divergence: Divergence | None
    totals: dict[str, dict]
    source_range: tuple[int, int] | None = None  # the source cut to the replayed range, when one replays the other

    @property
    def aligned(self) -> list[Row]:
        return [r for r in self.rows if r.paired]

    @property
    def seq_pairs(self) -> list[tuple[int | None, int | None]]:
        """The alignment as (A seq, B seq), None where only one side has the step (the side-by-side video)."""
        return [(r.a.seq if r.a else None, r.b.seq if r.b else None) for r in self.rows]

    @property
    def only_a(self) -> list[int]:
        return [r.step.stored_seq for r in self.rows if r.b is None]

    @property
    def only_b(self) -> list[int]:
        return [r.step.stored_seq for r in self.rows if r.a is None]

    def to_dict(self, with_diffs: bool = True) -> dict:
        return {
            "a": self.a["id"],
            "b": self.b["id"],
            "source_range": list(self.source_range) if self.source_range else None,
            "first_divergence": self.first_divergence.to_dict() if self.first_divergence else None,
            "aligned": [r.to_dict(with_diffs) for r in self.aligned],
            "only_a": self.only_a,
            "only_b": self.only_b,
            "totals": self.totals,
        }


def totals_of(session: dict, steps: Sequence[StepEvent]) -> dict[str, Any]:
    """Steps, cycles, tokens, cost (None when no step had a known cost), duration, outcome."""
    cycles = [c for c in cycle_of_steps([s.type for s in steps]) if c is not None]
    costs = [s.cost_usd for s in steps if s.cost_usd is not None]
    stamps = [(s.timestamp, s.duration_ms) for s in steps if s.timestamp is not None]
    duration = None
    if stamps:
        last, took = stamps[-1]
        end = last.timestamp() + (took or 0) / 1000
        duration = round(end - stamps[0][0].timestamp(), 3)
    return {
        "steps": len(steps),
        "cycles": (cycles[-1] + 1) if cycles else 0,
        # the Store's run totals when the session row carries them (steps' sums, else the source's)
        "tokens_in": session["tokens_in"] if "tokens_in" in session else sum(s.tokens_in or 0 for s in steps),
        "tokens_out": session["tokens_out"] if "tokens_out" in session else sum(s.tokens_out or 0 for s in steps),
        "cost_usd": (round(session["cost_usd"], 6) if session["cost_usd"] is not None else None)
        if "cost_usd" in session
        else (round(sum(costs), 6) if costs else None),
        "duration_s": duration,
        "status": session.get("status"),
        "error_class": session.get("error_class"),
    }


def unspoken(step: StepEvent) -> bool:
    """A thought without text: the trace of a model call that only asked for tools. One recording
    keeps it and another (or a replay) does not; on its own it is nothing one run did that the
    other did not, so it never makes a divergence (paired with a thought that has text, it does)."""
    return step.type == "think" and step.status in (None, "ok") and not (step.content or "").strip()


def _first_divergence(rows: list[Row], a: dict, b: dict, compare_outcome: bool) -> Divergence | None:
    for index, row in enumerate(rows):
        if row.same or (not row.paired and unspoken(row.step)):
            continue
        if row.a is not None and row.b is not None:
            kind = row.kind or "different text"  # a pair that is not the same differs in some field
            return Divergence(row.a.seq, row.b.seq, kind, _pair_summary(row.a, row.b, row.changed, kind), index)
        return _gap_divergence(rows, index)
    # a run still going has no outcome yet, and a finished file that recorded none (`unknown`) has none to compare
    ended = not {"running", "unknown"} & {a.get("status"), b.get("status")}
    if compare_outcome and ended and (a.get("status"), a.get("error_class")) != (b.get("status"), b.get("error_class")):

        def outcome(s: dict) -> str:
            return f"{s.get('status')}" + (f" ({s['error_class']})" if s.get("error_class") else "")

        summary = f"Every step matches, but A ended {outcome(a)} and B ended {outcome(b)}."
        return Divergence(None, None, "different outcome", summary, None)
    return None


def _pair_summary(a: StepEvent, b: StepEvent, changed: tuple[str, ...], kind: str) -> str:
    where = _where(a.seq, b.seq)
    if kind == "different arguments":
        return f"{where}: both called {a.tool_name}, with different arguments — {_arg_changes(a, b)}."
    if kind == "different result":
        return f"{where}: A {describe(a)}; B {describe(b)}."
    fields = ", ".join(changed)
    if "content" in changed:
        return f"{where}: A {describe(a)}; B {describe(b)}."
    return f"{where}: the {a.type} steps differ in {fields}."


def _gap_divergence(rows: list[Row], index: int) -> Divergence:
    """The first step only one run has: a missing or extra step, or a call of another tool."""
    row = rows[index]
    gap_end = next((k for k in range(index, len(rows)) if rows[k].paired), len(rows))
    only_b = (rows[k].step for k in range(index, gap_end) if rows[k].a is None)
    counterpart = next((s for s in only_b if not unspoken(s)), None)
    if row.a is not None:
        a = row.a
        b = counterpart or next((r.b for r in rows[gap_end:] if r.b is not None), None)
        if counterpart is not None and a.type == counterpart.type and a.tool_name and counterpart.tool_name:
            summary = f"{_where(a.seq, counterpart.seq)}: A {describe(a)}; B {describe(counterpart)}."
            return Divergence(a.seq, counterpart.seq, "different tool", summary, index)
        instead = f"; B {describe(counterpart)} instead" if counterpart is not None else ""
        summary = f"{_where(a.seq, b.seq if b else None)}: A {describe(a)}; B has no such step{instead}."
        return Divergence(a.seq, b.seq if b else None, "missing step", summary, index)
    b = row.step  # B's: this row has no A
    a_next = next((r.a for r in rows[index:] if r.a is not None and not (r.b is None and unspoken(r.a))), None)
    a_seq = a_next.seq if a_next else None
    summary = f"{_where(a_seq, b.seq)}: B {describe(b)}, a step A does not have."
    return Divergence(a_seq, b.seq, "extra step", summary, index)


def _has_live(steps: Sequence[StepEvent]) -> bool:
    """Whether a live model wrote some of these steps (a live replay). Its steps carry no more metadata
    than where they came from, never what the source recorded around its own (span attributes, a
    framework's fields), so metadata is left out of such a comparison: it would tell only the records apart."""
    return any(isinstance(s.metadata, dict) and s.metadata.get("live") for s in steps)


def compare_steps(
    steps_a: Sequence[StepEvent],
    steps_b: Sequence[StepEvent],
    session_a: dict,
    session_b: dict,
    *,
    include: Iterable[str] = (),
    compare_outcome: bool = True,
) -> Comparison:
    """Compare two step lists (the library behind `compare`; sessions give ids and outcomes)."""
    include = tuple(include)
    unknown = [g for g in include if g not in OPTIONAL]
    if unknown:
        raise ValueError(f"include: unknown field group {unknown[0]!r}; known: {', '.join(OPTIONAL)}")
    names = _compared_names(include)
    if _has_live(steps_a) or _has_live(steps_b):
        names = tuple(n for n in names if n != "metadata")
    keys_a, keys_b = step_keys(steps_a, names), step_keys(steps_b, names)
    order = align(keys_a, keys_b, [signature(s) for s in steps_a], [signature(s) for s in steps_b])
    rows = [
        Row(
            steps_a[i] if i is not None else None,
            steps_b[j] if j is not None else None,
            names,
            i is not None and j is not None and keys_a[i] == keys_b[j],
        )
        for i, j in order
    ]
    return Comparison(
        a=session_a,
        b=session_b,
        rows=rows,
        first_divergence=_first_divergence(rows, session_a, session_b, compare_outcome),
        totals={"a": totals_of(session_a, steps_a), "b": totals_of(session_b, steps_b)},
    )


def replay_range(a: dict, b: dict) -> tuple[int, int] | None:
    """The replayed range of A when B is a replay of A."""
    if b.get("replay_of") == a["id"] and b.get("replay_from") is not None:
        to = b.get("replay_to")
        return (b["replay_from"], to if to is not None else 2**62)
    return None


def compare(
    store: Store,
    a_id: str,
    b_id: str,
    *,
    include: Iterable[str] = (),
    whole: bool = False,
    loaded: dict[str, tuple[dict, Sequence[StepEvent]]] | None = None,
) -> Comparison:
    """Compare two stored sessions.

    When one is a replay of the other, the source is cut to the replayed range (unless
    `whole`), and outcomes are compared only when that range reaches the source's end.
    `loaded`: sessions the caller holds already (row, steps), not read again (a replay's source).
    """
    held = loaded or {}

    def session(sid: str) -> dict:
        found = held[sid][0] if sid in held else store.get_session(sid)
        if found is None:
            raise KeyError(sid)
        return found

    a, b = session(a_id), session(b_id)
    with collector_paused():  # two 50,000-step runs are millions of objects, none of them cyclic garbage
        steps_a, steps_b = (held[i][1] if i in held else store.load_steps(i) for i in (a_id, b_id))
        cut = None if whole else (replay_range(a, b) or replay_range(b, a))
        compare_outcome = True
        if cut:
            source_is_a = b.get("replay_of") == a_id
            source = steps_a if source_is_a else steps_b
            last_seq = source[-1].stored_seq if source else 0
            kept = [s for s in source if cut[0] <= s.stored_seq <= cut[1]]
            steps_a, steps_b = (kept, steps_b) if source_is_a else (steps_a, kept)
            compare_outcome = cut[1] >= last_seq
            cut = (cut[0], min(cut[1], last_seq))
        result = compare_steps(steps_a, steps_b, a, b, include=include, compare_outcome=compare_outcome)
    result.source_range = cut
    return result

"""What each MCP tool answers, from the Store: text an LLM reads well plus the same facts as data.

Every answer is bounded (`Answer.limit`, 20,000 characters unless the caller asks for more): items
are added until the next one would not fit, and the text then says how many were left out and which
call brings them (a step window, a page offset). A 100,000-step run never floods a context.
These functions know nothing of MCP; server.py wires them to tools, roles and the audit log.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from ..events import StepEvent
from ..storage.filters import SessionFilter
from ..storage.store import Store
from ..understand.timeline import Timeline, open_timeline

DEFAULT_CHARS = 20_000
MAX_CHARS = 200_000
CONTENT_CHARS = 300  # one step's content in a list of steps


class AnswerError(ValueError):
    """Bad input (an unknown run, a step out of range): one sentence the calling agent can act on."""


@dataclass
class Answer:
    """Text lines and structured data filled side by side, within `limit` characters of text."""

    limit: int = DEFAULT_CHARS
    lines: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    used: int = 0
    truncated: bool = False

    def add(self, line: str) -> bool:
        """Add a line if it fits (keeping room for the truncation note); False, adding nothing, if not."""
        if self.used + len(line) + 1 > self.limit - 300:
            self.truncated = True
            return False
        self.lines.append(line)
        self.used += len(line) + 1
        return True

    def note(self, line: str) -> None:
        """A closing line (how to ask for more), always kept."""
        self.lines.append(line)
        self.used += len(line) + 1

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def budget(max_chars: int | None) -> int:
    if max_chars is None:
        return DEFAULT_CHARS
    if not 1_000 <= max_chars <= MAX_CHARS:
        raise AnswerError(f"max_chars: expected 1,000 to {MAX_CHARS:,}, got {max_chars:,}")
    return max_chars


def _short(text: Any, limit: int) -> str:
    if text is None:
        return ""
    if not isinstance(text, str):
        text = orjson.dumps(text, default=str).decode()
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[: limit - 1]}… [cut: {len(text):,} characters]"


def _when(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else value


def run_line(row: dict) -> str:
    """One run in one line: id, name, status, model, agent, size, when."""
    tokens = (row.get("tokens_in") or 0) + (row.get("tokens_out") or 0)
    cost = row.get("cost_usd")
    bits = [
        f"{row['id']}",
        f"“{_short(row.get('name'), 80)}”" if row.get("name") else "(no name)",
        row.get("status") or "unknown",
        f"model {row['model']}" if row.get("model") else None,
        f"agent {row['agent_id']}" if row.get("agent_id") else None,
        f"workflow {row['workflow']}" if row.get("workflow") else None,
        f"{row.get('steps') or 0} steps",
        f"{tokens:,} tokens",
        f"${cost:.4f}" if isinstance(cost, int | float) else None,
        f"started {_when(row.get('started_at'))}" if row.get("started_at") else None,
    ]
    return " · ".join(b for b in bits if b)


def _run_data(row: dict) -> dict:
    keys = ("id", "name", "status", "outcome", "model", "agent_id", "workflow", "agent_version", "steps", "errors")
    out = {k: row.get(k) for k in keys}
    out |= {"tokens": (row.get("tokens_in") or 0) + (row.get("tokens_out") or 0), "cost_usd": row.get("cost_usd")}
    out["started_at"] = _when(row.get("started_at"))
    return out


def step_line(step: StepEvent, content_chars: int = CONTENT_CHARS) -> str:
    """One step in one line: seq, type, tool, status, a short content or the tool's arguments."""
    what = step.content if step.content else (step.tool_args if step.tool_args is not None else "")
    head = f"step {step.seq} [{step.type}]"
    if step.tool_name:
        head += f" {step.tool_name}"
    if step.status != "ok":
        head += f" ({step.status}{': ' + step.error_class if step.error_class else ''})"
    return f"{head}: {_short(what, content_chars)}" if what not in ("", None) else head


def _bounded(value: Any, limit: int) -> Any:
    """`value` as it is if its JSON fits in `limit` characters, else its JSON text cut there (marked): the
    structured half of an answer is bounded like its text."""
    if value is None or isinstance(value, bool | int | float):
        return value
    text = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
    if len(text) <= limit:
        return value
    return {"truncated": True, "chars": len(text), "start": text[:limit]}


def _step_data(step: StepEvent, content_chars: int = CONTENT_CHARS) -> dict:
    return {
        "seq": step.seq,
        "type": str(step.type),
        "status": str(step.status),
        "tool_name": step.tool_name,
        "error_class": step.error_class,
        "model": step.model,
        "content": _short(step.content, content_chars) if step.content else None,
        "tool_args": _bounded(step.tool_args, content_chars),
    }


OPEN_RUNS = 8  # runs kept open between calls: a 100,000-step run takes a second to open, a state at a step ~1 ms after


def _version(session: dict) -> tuple:
    """A version of the run: changes with new steps, a new status or outcome (a cached timeline is then stale)."""
    keys = ("steps", "max_seq", "last_event_at", "status", "ended_at", "outcome")
    return tuple(str(session.get(k)) for k in keys)


_open: OrderedDict[tuple[str, str], tuple[tuple, Timeline]] = OrderedDict()
_open_lock = threading.Lock()


def open_run(store: Store, run_id: str) -> Timeline:
    """The run's timeline, kept open across calls while the run is unchanged (one cheap read checks it)."""
    session = store.get_session(run_id)
    if session is None:
        raise AnswerError(f"no run {run_id!r}: search_runs lists run ids")
    key, version = (store.url, run_id), _version(session)
    with _open_lock:
        found = _open.get(key)
        if found is not None and found[0] == version:
            _open.move_to_end(key)
            return found[1]
    try:
        timeline = open_timeline(store, run_id)
    except KeyError:  # deleted meanwhile
        raise AnswerError(f"no run {run_id!r}: search_runs lists run ids") from None
    with _open_lock:
        _open[key] = (_version(timeline.session), timeline)
        while len(_open) > OPEN_RUNS:
            _open.popitem(last=False)
    return timeline


def search_runs(store: Store, flt: SessionFilter, *, limit: int, offset: int, max_chars: int | None) -> Answer:
    """Runs matching the filter, newest first, one line each, paged."""
    answer = Answer(budget(max_chars))
    total = store.count_sessions(flt)
    rows = store.list_sessions(flt, limit=limit, offset=offset)
    answer.add(
        f"{total:,} run{'s' if total != 1 else ''} match; showing {offset + 1}–{offset + len(rows)}."
        if rows
        else f"{total:,} runs match; none at offset {offset}."
    )
    shown = []
    for row in rows:
        if not answer.add("- " + run_line(row)):
            break
        shown.append(_run_data(row))
    following = offset + len(shown)
    if following < total:
        answer.note(f"{total - following:,} more: call search_runs again with offset={following}.")
    answer.data = {"total": total, "offset": offset, "runs": shown}
    return answer


def get_run(store: Store, run_id: str, *, first_steps: int, max_chars: int | None) -> Answer:
    """The run's header (asked, did, ended, why), totals, structure, and its first steps."""
    from ..understand.cycle_groups import story
    from ..understand.explain import EXPLAINED, explain

    tl = open_run(store, run_id)
    s = tl.session
    answer = Answer(budget(max_chars))
    first = tl.first_input()
    why = explain(store, run_id).cause_line() if (s.get("status") or "unknown") in EXPLAINED else None
    did = story(tl.columns, tl.cycles)
    answer.add("Run " + run_line(s | {"steps": len(tl.steps)}))
    answer.add(f"Asked: {_short(first.content, 600) if first is not None and first.content else '(no input recorded)'}")
    for sentence in did[:20]:
        answer.add(f"Did: {sentence}")
    answer.add(f"Ended: {s.get('status') or 'unknown'}" + (f" — {_short(s.get('outcome'), 600)}" if s.get("outcome") else ""))
    if why:
        answer.add(f"Why: {why} (explain_failure gives the causal chain)")
    answer.add(f"Summary: {tl.summary()}")
    answer.add(
        f"Structure: {len(tl.steps)} steps in {len(tl.cycles)} decision cycles"
        + (f", {len(tl.gaps)} gaps in the recorded seqs" if tl.gaps else "")
    )
    steps = []
    answer.add(f"First {min(first_steps, len(tl.steps))} steps:")
    for step in tl.steps[:first_steps]:
        if not answer.add("  " + step_line(step)):
            break
        steps.append(_step_data(step))
    if len(steps) < len(tl.steps):
        nxt = steps[-1]["seq"] + 1 if steps else (tl.steps[0].seq if tl.steps else 0)
        answer.note(f"{len(tl.steps) - len(steps):,} more steps: call get_steps with run_id={run_id!r}, start={nxt}.")
    answer.data = {
        "run": _run_data(s) | {"steps": len(tl.steps)},
        "asked": first.content if first is not None else None,
        "did": did,
        "why": why,
        "summary": tl.summary(),
        "cycles": len(tl.cycles),
        "steps": steps,
    }
    return answer


def get_steps(
    store: Store,
    run_id: str,
    *,
    start: int | None,
    around: int | None,
    count: int,
    query: str | None,
    max_chars: int | None,
    content_chars: int = 1_000,
) -> Answer:
    """A window of steps (from `start`, or centred on `around`), or the steps whose text holds `query`."""
    tl = open_run(store, run_id)
    answer = Answer(budget(max_chars))
    if not tl.steps:
        answer.add(f"Run {run_id} has no steps yet.")
        answer.data = {"run_id": run_id, "steps": []}
        return answer
    first_seq, last_seq = tl.steps[0].seq or 0, tl.steps[-1].seq or 0  # stored steps always carry their seq
    if query:
        needle = query.casefold()
        chosen = [s for s in tl.steps if needle in (s.content or "").casefold() or needle in (s.tool_name or "").casefold()]
        answer.add(f"{len(chosen):,} steps of {run_id} hold {query!r}.")
    else:
        if around is not None:
            pos = _position(tl, around)
            lo = max(0, pos - count // 2)
        else:
            lo = _position(tl, start) if start is not None else 0
        chosen = list(tl.steps[lo : lo + count])
        answer.add(f"Steps {chosen[0].seq}–{chosen[-1].seq} of {run_id} (its steps run {first_seq}–{last_seq}).")
    shown = []
    for step in chosen:
        if not answer.add(step_line(step, content_chars)):
            break
        shown.append(_step_data(step, content_chars))
    if len(shown) < len(chosen):
        answer.note(f"{len(chosen) - len(shown):,} more: call get_steps with start={chosen[len(shown)].seq}.")
    elif not query and chosen and (chosen[-1].seq or 0) < last_seq:
        answer.note(f"Next: get_steps with start={(chosen[-1].seq or 0) + 1}.")
    answer.data = {"run_id": run_id, "first_seq": first_seq, "last_seq": last_seq, "steps": shown}
    return answer


def _position(tl: Timeline, seq: int) -> int:
    if tl.step_at_seq(seq) is None:
        raise AnswerError(f"run {tl.id} has no step {seq}: its steps run {tl.steps[0].seq}–{tl.steps[-1].seq}")
    return tl.position_of(seq)


def state_at_step(store: Store, run_id: str, step: int, *, max_chars: int | None) -> Answer:
    """What the agent had in front of it at `step`: context messages with their origin, running totals, state."""
    from ..understand.snapshot import state_at

    tl = open_run(store, run_id)
    if not tl.steps:
        raise AnswerError(f"run {run_id} has no steps yet")
    _position(tl, step)
    snap = state_at(tl, step, store)
    answer = Answer(budget(max_chars))
    answer.add(f"State of {run_id} at step {step} ({step_line(snap.step, 200)}), cycle {snap.cycle}.")
    answer.add(f"Running totals: {_short(snap.totals, 400)}")
    if snap.state:
        answer.add(f"Source state (goal, memory…): {_short(snap.state, 2_000)}")
    answer.add(f"Context ({snap.context_source}): {snap.agent.note()}")
    messages = []
    for message, origin in zip(snap.context, snap.agent.origins, strict=True):
        where = f"{origin['source']} {'at' if origin['source'] == 'recorded' else 'from'} step {origin['seq']}"
        body = message.get("content")
        calls = message.get("tool_calls")
        line = f"-- {message.get('role')} ({where}): {_short(body, 2_000)}" + (
            f" tool_calls={_short(calls, 600)}" if calls else ""
        )
        if not answer.add(line):
            break
        messages.append({"message": {k: _bounded(v, 2_000) for k, v in message.items()}, "origin": origin})
    if len(messages) < len(snap.context):
        answer.note(
            f"{len(snap.context) - len(messages)} of {len(snap.context)} context messages left out (the latest ones): "
            "call again with a larger max_chars, or read the steps with get_steps."
        )
    answer.data = {
        "run_id": run_id,
        "step": _step_data(snap.step, 2_000),
        "cycle": snap.cycle,
        "totals": snap.totals,
        "state": snap.state,
        "context_source": snap.context_source,
        "context": messages,
        "context_messages": len(snap.context),
    }
    return answer


def explain_failure(store: Store, run_id: str, *, max_chars: int | None) -> Answer:
    """Turning point, causal chain, contradictions and the successful twin, from what is recorded (no model)."""
    from ..understand.explain import ExplainError, explain

    open_run(store, run_id)
    try:
        result = explain(store, run_id)
    except ExplainError as exc:
        raise AnswerError(str(exc)) from None
    answer = Answer(budget(max_chars))
    answer.add(f"{run_id} {result.status}" + (f": {_short(result.outcome, 600)}" if result.outcome else ""))
    answer.add(result.cause_line())
    tp = result.turning_point
    if tp is not None:
        answer.add(
            f"Turning point: step {tp.seq}, against step {tp.compared_seq} of the successful run {tp.compared_with} "
            f"({tp.kind}): {tp.summary}"
        )
    answer.add("Causal chain (earliest first):")
    for link in result.chain:
        answer.add(f"  step {link.seq} [{link.kind}] {link.summary}")
    for c in result.contradictions:
        answer.add(f"Contradiction: step {c.seq} vs step {c.earlier_seq} ({c.resource}): {c.summary}")
    for note in result.notes:
        answer.add(f"Note: {note}")
    answer.data = result.to_dict()
    return answer


def compare_runs(store: Store, a: str, b: str, *, max_chars: int | None) -> Answer:
    """The first divergence in a sentence, then the aligned steps around it and the totals side by side."""
    from ..understand.compare import compare

    open_run(store, a)
    open_run(store, b)
    result = compare(store, a, b)
    answer = Answer(budget(max_chars))
    div = result.first_divergence
    answer.add(f"First divergence ({div.kind}): {div.summary}" if div else "No divergence: same steps, same outcome.")
    answer.add(f"{sum(1 for r in result.rows if r.same)} of {len(result.rows)} aligned rows are the same.")
    rows = []
    for row in result.rows:
        if row.same:
            continue
        where = f"A {row.a.seq if row.a else '—'} / B {row.b.seq if row.b else '—'}"
        line = f"{where} [{row.step.type}] {row.step.tool_name or ''} {row.kind or ''}"
        if not answer.add(line.rstrip()):
            break
        rows.append({"a_seq": row.a.seq if row.a else None, "b_seq": row.b.seq if row.b else None, "kind": row.kind})
    answer.add(
        "Totals A vs B: " + "; ".join(f"{k} {result.totals['a'][k]} vs {result.totals['b'][k]}" for k in result.totals["a"])
    )
    answer.data = {"first_divergence": div.summary if div else None, "differing_rows": rows, "totals": result.totals}
    return answer


def similar_failures(store: Store, run_id: str, *, limit: int, max_chars: int | None) -> Answer:
    """Runs whose failure pattern (turning point's or chain head's tool, kind, error class) matches this run's."""
    from ..understand.explain import EXPLAINED, failure_patterns

    tl = open_run(store, run_id)
    if (tl.session.get("status") or "unknown") not in EXPLAINED:
        raise AnswerError(
            f"run {run_id} {tl.session.get('status')}: only failed, incomplete or unknown-outcome runs have a failure pattern"
        )
    patterns, skipped = failure_patterns(store, SessionFilter(workflow=tl.session.get("workflow")))
    mine = next((p for p in patterns if run_id in p.runs), None)
    answer = Answer(budget(max_chars))
    if mine is None:
        answer.add(f"{run_id} is not among the {sum(len(p.runs) for p in patterns)} newest failing runs grouped.")
        answer.data = {"run_id": run_id, "pattern": None, "runs": []}
        return answer
    others = [r for r in mine.runs if r != run_id]
    answer.add(f"Pattern: {mine.sentence}.")
    answer.add(f"{len(others)} other run{'s' if len(others) != 1 else ''} failed the same way.")
    rows = store.list_sessions(SessionFilter(ids=tuple(others[: max(limit, 0)]), include_replays=True), limit=limit)
    shown = []
    for row in rows:
        if not answer.add("- " + run_line(row)):
            break
        shown.append(_run_data(row))
    if skipped:
        answer.note(f"{skipped} older failing runs were not grouped.")
    answer.data = {"run_id": run_id, "pattern": mine.to_dict(), "runs": shown}
    return answer

"""Why did this run fail? Answered from what is recorded, with no model.

Three parts, each pointing at steps:

- **turning point**: the nearest successful run of the same task (same first input;
  else the same workflow with the most similar opening steps; replays left out unless
  asked) is compared with `compare`, and its first divergence is the likely turning point;
- **causal chain**: from the failure back to the earliest step that explains it, through
  the rules below, as steps in run order with one plain sentence each;
- **contradictions**: a tool result that disagrees with an earlier one about the same
  resource (the same call read twice with different content, no write in between; a
  search hit `path:line:text` that a later read of that path does not contain).

Chain rules (each adds steps; a step is named once, by the first rule that finds it):
the failure (the last errored or blocked step, else the last step); the first earlier
step that failed the same way (same tool or error class); the step that acted on a
contradicted resource, and the two contradicting results; the turning point when the
compared run did the same task; blocked steps; retries and the failure they retried;
slow operations; for a context overflow whose error gives its figures, the errored step with
those figures (before anything else), else for a budget, token or context error the step that
spent the most;
for an argument-shaped error, the call whose arguments were refused; other errors, one
per tool and error class. At most `MAX_CHAIN` steps are kept, the failure and its first
occurrence always among them.

A slow operation is a tool result or error whose duration is at least `SLOW_FACTOR` ×
the median duration of that tool's results and at least `SLOW_MARGIN_MS` above it, the
median taken over every other result of that tool in this run and in up to
`PEER_RUNS` recent runs of the same workflow (at least `SLOW_MIN_SAMPLES` of them);
a step whose error class says it timed out counts as slow whatever the figures.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

import orjson

from ..events import StepEvent
from ..ingest.formats.jsondoc import parse_arguments
from ..storage.store import SessionFilter, Store
from .compare import compare, compare_steps, describe, signature

EXPLAINED = ("failed", "incomplete", "unknown")
MAX_CHAIN = 8
CANDIDATES = 40  # successful runs looked at for the turning point
OPENING = 12  # steps compared for "most similar opening steps"
MIN_OPENING_SIMILARITY = 0.5
PEER_RUNS = 30
SLOW_FACTOR = 3.0
SLOW_MARGIN_MS = 1000.0
SLOW_MIN_SAMPLES = 3

WRITE_WORDS = (
    "write",
    "edit",
    "update",
    "delete",
    "remove",
    "put",
    "post",
    "create",
    "patch",
    "move",
    "rename",
    "replace",
    "insert",
    "save",
    "upload",
    "set_",
)
RESOURCE_KEYS = ("path", "file", "file_path", "filepath", "filename", "url", "uri", "id", "key")
SEARCH_HIT = re.compile(r"^\s*([\w./\\-]+\.\w+):(\d+):(.*\S.*)$")
ARGUMENT_ERROR = re.compile(
    r"invalid|argument|param|validation|bad request|unprocessable|malformed|not found|unknown|missing", re.I
)
BUDGET_ERROR = re.compile(
    r"budget|context.?window|context.?length|tokens?\b|max.?(steps|iterations|turns)|cost limit|quota|"
    r"limits?.?exceeded|exceeded (the |its )?(limit|budget)",
    re.I,
)
TIMEOUT_ERROR = re.compile(r"time.?out|timed out|deadline", re.I)
PERMISSION_ERROR = re.compile(r"permission|forbidden|denied|unauthori[sz]ed|not allowed|blocked|403", re.I)


class ExplainError(ValueError):
    """The run cannot be explained (unknown, still running, or it succeeded)."""


@dataclass
class Link:
    seq: int
    summary: str
    kind: str  # failure, first_failure, contradiction, acted_on, turning_point, blocked, retry, slow, budget, argument, error
    tool: str | None = None
    error_class: str | None = None

    def to_dict(self) -> dict:
        return {"seq": self.seq, "summary": self.summary, "kind": self.kind, "tool": self.tool, "error_class": self.error_class}


@dataclass
class Contradiction:
    seq: int
    earlier_seq: int
    resource: str
    summary: str
    earlier_summary: str = ""  # the same disagreement told from the earlier step's side

    def to_dict(self) -> dict:
        return {"seq": self.seq, "earlier_seq": self.earlier_seq, "resource": self.resource, "summary": self.summary}


@dataclass
class TurningPoint:
    seq: int | None
    compared_with: str
    compared_seq: int | None
    kind: str
    summary: str
    same_task: bool  # the compared run had the same first input

    def to_dict(self) -> dict:
        return {
            "seq": self.seq,
            "compared_with": self.compared_with,
            "compared_seq": self.compared_seq,
            "kind": self.kind,
            "summary": self.summary,
            "same_task": self.same_task,
        }


@dataclass
class Explanation:
    session: str
    status: str
    outcome: str | None
    turning_point: TurningPoint | None
    chain: list[Link]
    contradictions: list[Contradiction]
    notes: list[str] = field(default_factory=list)  # what was looked at, what was not found

    @property
    def head(self) -> Link | None:
        """The earliest step of the chain: where the explanation starts."""
        return self.chain[0] if self.chain else None

    def cause_line(self) -> str:
        """One sentence for the run's header: the likely cause, then what followed."""
        if not self.chain:
            return "No cause found in what was recorded."
        first, rest = self.chain[0], self.chain[1:]
        text = f"Likely cause: step {first.seq} — {_cut_whole(first.summary.rstrip('.'), 220)}"
        if rest:
            text += "; then " + ", ".join(f"step {link.seq} ({_KIND_WORDS.get(link.kind, link.kind)})" for link in rest)
        return text + "."

    def to_dict(self) -> dict:
        return {
            "session": self.session,
            "status": self.status,
            "outcome": self.outcome,
            "cause": self.cause_line(),
            "turning_point": self.turning_point.to_dict() if self.turning_point else None,
            "chain": [link.to_dict() for link in self.chain],
            "contradictions": [c.to_dict() for c in self.contradictions],
            "notes": self.notes,
        }


_KIND_WORDS = {
    "failure": "the end",
    "first_failure": "first failure",
    "contradiction": "contradiction",
    "acted_on": "acted on it",
    "turning_point": "turning point",
    "blocked": "blocked",
    "retry": "retry",
    "slow": "slow",
    "budget": "budget",
    "argument": "refused arguments",
    "error": "error",
}


# ---------------------------------------------------------------------------- small readers


def _errored(step: StepEvent) -> bool:
    return step.type == "error" or step.status in ("error", "blocked")


def _blocked(step: StepEvent) -> bool:
    return step.status == "blocked" or bool(step.error_class and PERMISSION_ERROR.search(step.error_class))


def _is_write(tool: str | None) -> bool:
    name = (tool or "").lower()
    return any(word in name for word in WRITE_WORDS)


def _resources(args: Any) -> list[str]:
    """Paths, URLs and ids named by a tool's arguments."""
    args = parse_arguments(args)
    if not isinstance(args, dict):
        return []
    out = []
    for key, value in args.items():
        k = str(key).lower()
        if (
            isinstance(value, str | int)
            and not isinstance(value, bool)
            and (k in RESOURCE_KEYS or k.endswith(("_id", "_path", "_url", "_file")))
        ):
            out.append(str(value))
    return out


def _first_line(text: str | None, limit: int = 90) -> str:
    line = next((ln.strip() for ln in plain_words(text or "").splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


MESSAGE_KEYS = ("message", "detail", "reason", "description", "msg", "error_description")
CODE_KEYS = ("error", "code", "type", "status", "error_code")
_DECODER = json.JSONDecoder()


def _said(obj: Any) -> str | None:
    """What an error object says, in words: its message, with its code after it ("… (INVALID_DATE)")."""
    if not isinstance(obj, dict):
        return None
    inner = obj.get("error")
    if isinstance(inner, dict):  # {"error": {"message": …, "code": …}}
        return _said(inner)
    message = next((str(obj[k]) for k in MESSAGE_KEYS if isinstance(obj.get(k), str | int | float) and obj.get(k) != ""), None)
    code = next((str(obj[k]) for k in CODE_KEYS if isinstance(obj.get(k), str | int) and str(obj.get(k)) != message), None)
    if message is None:
        return code
    return f"{message} ({code})" if code else message


def plain_words(text: str) -> str:
    """`text` with each JSON error object in it told in words: `{"error": "INVALID_DATE", "message": "depart_date
    2025-12-17 is in the past"}` → `depart_date 2025-12-17 is in the past (INVALID_DATE)`. Objects that carry no
    message or code are left as they are."""
    if "{" not in text:
        return text
    out, i = [], 0
    while (start := text.find("{", i)) != -1:
        try:
            obj, end = _DECODER.raw_decode(text, start)
        except ValueError:
            out.append(text[i : start + 1])
            i = start + 1
            continue
        words = _said(obj)
        out.append(text[i:start] + (words if words else text[start:end]))
        i = end
    return "".join(out) + text[i:]


def _canonical(args: Any) -> str:
    args = parse_arguments(args)
    return orjson.dumps(args if args is not None else {}, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()


def _lines(text: str | None) -> int:
    return len((text or "").splitlines())


# ---------------------------------------------------------------------------- contradictions


def find_contradictions(steps: list[StepEvent]) -> list[Contradiction]:
    """Tool results that disagree with an earlier one about the same resource (module docstring)."""
    calls = {s.tool_call_id: s for s in steps if s.type == "tool_call" and s.tool_call_id}
    reads: dict[tuple[str, str], StepEvent] = {}  # (tool, canonical args) -> last ok result
    hits: dict[str, list[tuple[int, int, str]]] = {}  # path -> (seq, line, text)
    out: list[Contradiction] = []
    for step in steps:
        call = calls.get(step.tool_call_id) if step.tool_call_id else None
        args = step.tool_args if step.tool_args is not None else (call.tool_args if call else None)
        if step.type == "tool_call" and _is_write(step.tool_name):
            for res in _resources(step.tool_args):  # a write makes earlier reads of it stale, not contradicted
                hits.pop(res, None)
                for key in [k for k in reads if res in _resources(k[1])]:
                    reads.pop(key)
            continue
        if step.type != "tool_result" or step.status != "ok" or _is_write(step.tool_name):
            continue
        content = step.content or ""
        key = (step.tool_name or "", _canonical(args))
        earlier = reads.get(key)
        if earlier is not None and (earlier.content or "") != content:
            res = (_resources(args) or [key[1]])[0]
            out.append(
                Contradiction(
                    step.stored_seq,
                    earlier.stored_seq,
                    res,
                    f"{step.tool_name} on {res} returned something other than it did at step {earlier.seq}, "
                    "with no write to it in between",
                    f"{step.tool_name} on {res} returned “{_cut(_first_line(earlier.content), 60)}”; the same "
                    f"call at step {step.seq} returned something else",
                )
            )
        reads[key] = step
        for res in _resources(args):
            for hit_seq, line, text in hits.get(res, ()):
                if text.strip() not in content:
                    out.append(
                        Contradiction(
                            step.stored_seq,
                            hit_seq,
                            res,
                            f"step {hit_seq}'s search found “{_cut(text.strip(), 70)}” at {res}:{line}, but this read of {res} "
                            f"({_lines(content)} lines) does not contain it",
                            f"the search found “{_cut(text.strip(), 70)}” at {res}:{line}; the read of {res} at step {step.seq} "
                            f"({_lines(content)} lines) does not contain it",
                        )
                    )
                    break
        for ln in content.splitlines():
            m = SEARCH_HIT.match(ln)
            if m:
                hits.setdefault(m.group(1), []).append((step.stored_seq, int(m.group(2)), m.group(3)))
    return out


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cut_whole(text: str, limit: int) -> str:
    """`text` up to `limit` characters, cut only after a whole clause ("; ", ". ", " — "), never inside a value;
    "…" says more was left out."""
    if len(text) <= limit:
        return text
    ends = [text.rfind(mark, 0, limit) for mark in ("; ", ". ", " — ")]
    end = max(ends)
    if end <= 0:  # one long clause: cut at a space outside quotes
        end = next((j for j in range(limit, 0, -1) if text[j] == " " and text.count("“", 0, j) == text.count("”", 0, j)), limit)
    return text[:end].rstrip(" ;.—") + " …"


# ---------------------------------------------------------------------------- turning point


def _first_input(steps: list[StepEvent]) -> str | None:
    return next((s.content for s in steps if s.type == "input" and (s.metadata or {}).get("role") != "system"), None)


def _opening(steps: list[StepEvent]) -> list[tuple]:
    return [signature(s) for s in steps if s.type not in ("input", "span")][:OPENING]


def _candidates(reads: Reads, session: dict, include_replays: bool) -> list[dict]:
    if session.get("workflow"):
        flt = SessionFilter(status="succeeded", workflow=session["workflow"], include_replays=include_replays)
    elif session.get("agent_id"):
        flt = SessionFilter(status="succeeded", agent_id=session["agent_id"], include_replays=include_replays)
    else:
        flt = SessionFilter(status="succeeded", include_replays=include_replays)
    rows = reads.sessions(flt, CANDIDATES)
    return [r for r in rows if r["id"] != session["id"] and (include_replays or not r.get("replay_of"))]


def turning_point(
    reads: Reads, session: dict, steps: list[StepEvent], *, include_replays: bool = False
) -> tuple[TurningPoint | None, str]:
    """The first divergence from the nearest successful run of the same task, and a note on how it was chosen."""
    rows = _candidates(reads, session, include_replays)
    if not rows:
        return None, "No successful run of the same workflow to compare with."
    mine_input, mine_open = _first_input(steps), _opening(steps)
    best, best_score, best_steps = rows[0], (False, -1.0), []  # any row scores above that
    for row in rows:
        theirs = reads.steps(row["id"])
        same = mine_input is not None and _first_input(theirs) == mine_input
        ratio = SequenceMatcher(None, mine_open, _opening(theirs), autojunk=False).ratio()
        score = (same, ratio)
        if score > best_score:
            best, best_score, best_steps = row, score, theirs
    same, ratio = best_score
    if not same and ratio < MIN_OPENING_SIMILARITY:
        return None, (
            f"No successful run with the same first input; the most similar opening ({best['id']}) "
            f"matches {ratio:.0%} of the first steps, below {MIN_OPENING_SIMILARITY:.0%}."
        )
    if same:
        # list_sessions' rows are get_session's
        held: dict[str, tuple[dict, Sequence[StepEvent]]] = {session["id"]: (session, steps), best["id"]: (best, best_steps)}
        comparison = compare(reads.store, session["id"], best["id"], loaded=held)
    else:  # another task of the same workflow: its inputs differ by definition, so compare what follows them

        def body(ss: list[StepEvent]) -> list[StepEvent]:
            return [s for s in ss if s.type != "input"]

        comparison = compare_steps(body(steps), body(best_steps), session, best)
    div = comparison.first_divergence
    how = (
        f"Compared with {best['id']}, a successful run with the same first input."
        if same
        else f"Compared with {best['id']}, a successful run of the same workflow whose opening steps match {ratio:.0%} "
        "(not the same first input, so its divergence is a weaker hint)."
    )
    if div is None:
        return None, how + " No divergence found."
    summary = f"{div.summary} (A is this run, B is {best['id']})"
    return TurningPoint(div.a_seq, best["id"], div.b_seq, div.kind, summary, same), how


# ---------------------------------------------------------------------------- causal chain


def _usual_durations(reads: Reads, session: dict, steps: list[StepEvent]) -> dict[str, list[float]]:
    """Durations of each tool's results in this run and in recent runs of the same workflow."""
    out: dict[str, list[float]] = {}
    peers: list[list[StepEvent]] = [steps]
    if session.get("workflow"):
        rows = reads.sessions(SessionFilter(workflow=session["workflow"]), PEER_RUNS + 1)
        peers += [reads.steps(r["id"]) for r in rows if r["id"] != session["id"] and not r.get("replay_of")][:PEER_RUNS]
    for run in peers:
        for s in run:
            if s.type in ("tool_result", "error") and s.tool_name and s.duration_ms is not None:
                out.setdefault(s.tool_name, []).append(s.duration_ms)
    return out


def _slow(step: StepEvent, durations: dict[str, list[float]]) -> str | None:
    """Why the step counts as slow (module docstring), or None."""
    if step.type not in ("tool_result", "error") or not step.tool_name:
        return None
    if step.error_class and TIMEOUT_ERROR.search(step.error_class):
        took = f" after {step.duration_ms / 1000:.1f} s" if step.duration_ms else ""
        return f"{step.tool_name} timed out{took} ({step.error_class})"
    if step.duration_ms is None:
        return None
    others = list(durations.get(step.tool_name, []))
    if step.duration_ms in others:
        others.remove(step.duration_ms)
    if len(others) < SLOW_MIN_SAMPLES:
        return None
    usual = statistics.median(others)
    if step.duration_ms >= SLOW_FACTOR * usual and step.duration_ms >= usual + SLOW_MARGIN_MS:
        return (
            f"{step.tool_name} took {step.duration_ms / 1000:.1f} s, {step.duration_ms / max(usual, 1):.0f}× its usual "
            f"{usual / 1000:.1f} s (median of {len(others)} results)"
        )
    return None


CONTEXT_FIGURES = re.compile(
    r"(?:maximum context length|context (?:window|length|limit))\D{0,40}?([\d,]{3,})\s*tokens?"
    r".{0,200}?(?:resulted in|requested|have|got|is)\D{0,20}?([\d,]{3,})\s*tokens?",
    re.I | re.S,
)


def _overflow(step: StepEvent) -> str | None:
    """For an error that gives the context limit and what was sent ("maximum context length is 128000 tokens
    … resulted in 131772 tokens"), the sentence that blames it on those figures."""
    found = CONTEXT_FIGURES.search(f"{step.error_class or ''} {step.content or ''}")
    if found is None:
        return None
    limit, sent = (int(g.replace(",", "")) for g in found.groups())
    if sent <= limit:
        return None
    return (
        f"The prompt reached {sent:,} tokens, over the model's limit of {limit:,} "
        f"(by {sent - limit:,}; the figures of the error at step {step.seq})"
    )


def _failure(steps: list[StepEvent]) -> int:
    errored = [i for i, s in enumerate(steps) if _errored(s)]
    return errored[-1] if errored else len(steps) - 1


def _what_failed(step: StepEvent) -> str:
    detail = _first_line(step.content)
    cls = f" ({step.error_class})" if step.error_class else ""
    if step.status == "blocked":
        return (
            f"{step.tool_name or 'the action'} was blocked{cls}: {detail}"
            if detail
            else f"{step.tool_name or 'the action'} was blocked{cls}"
        )
    who = step.tool_name or ("the run" if step.type == "error" else step.type)
    return f"{who} failed{cls}: {detail}" if detail else f"{who} failed{cls}"


def causal_chain(
    steps: list[StepEvent],
    session: dict,
    contradictions: list[Contradiction],
    turning: TurningPoint | None,
    durations: dict[str, list[float]],
) -> list[Link]:
    """The chain from the earliest explaining step to the failure (module docstring), in run order."""
    if not steps:
        return []
    links: dict[int, Link] = {}
    pos_of = {s.seq: i for i, s in enumerate(steps)}
    calls = {s.tool_call_id: s for s in steps if s.type == "tool_call" and s.tool_call_id}

    def add(step: StepEvent, kind: str, summary: str) -> None:
        seq = step.stored_seq
        if seq not in links:
            links[seq] = Link(seq, summary, kind, step.tool_name, step.error_class)

    f = _failure(steps)
    fail = steps[f]
    overflow = next(((s, found) for s in steps[: f + 1] if _errored(s) and (found := _overflow(s))), None)
    if overflow is not None:  # the error's own figures say what went wrong: they come first
        add(overflow[0], "budget", overflow[1])
    ended_badly = _errored(fail)
    if ended_badly:
        add(fail, "failure", f"The run ended here: {_what_failed(fail)}.")
    else:
        status = session.get("status") or "unknown"
        add(fail, "failure", f"The run stopped here ({status}, no error recorded): it {describe(fail)}.")
    before = steps[: f + 1]
    errors = [s for s in before if _errored(s)]
    # the first step that failed the way the run ended
    same_way = [
        s
        for s in errors
        if s.seq != fail.seq
        and ((fail.tool_name and s.tool_name == fail.tool_name) or (fail.error_class and s.error_class == fail.error_class))
    ]
    if same_way:
        first = same_way[0]
        again = len(same_way) - 1
        more = f" (and {again} more time{'s' if again != 1 else ''} before the end)" if again else ""
        add(first, "first_failure", f"First failure of this kind: {_what_failed(first)}{more}.")
    # contradictions and the action taken on the contradicted resource
    for c in contradictions:
        if c.seq > fail.stored_seq:
            continue
        later = steps[pos_of[c.seq]]
        acted = next(
            (
                s
                for s in steps[pos_of[c.seq] + 1 : f + 1]
                if s.type == "tool_call" and _is_write(s.tool_name) and c.resource in _resources(s.tool_args)
            ),
            None,
        )
        add(later, "contradiction", f"{later.tool_name} returned a result that contradicts step {c.earlier_seq}: {c.summary}.")
        earlier = steps[pos_of[c.earlier_seq]]
        add(earlier, "contradiction", f"Contradicted later: {c.earlier_summary or c.summary}.")
        if acted is not None:
            add(acted, "acted_on", f"The agent then {describe(acted)}, acting on what step {c.seq} returned.")
    if (
        turning is not None
        and turning.same_task
        and turning.seq is not None
        and turning.seq in pos_of
        and turning.seq <= fail.stored_seq
    ):
        add(
            steps[pos_of[turning.seq]],
            "turning_point",
            f"Here this run parted from the successful run {turning.compared_with} ({turning.kind}): {turning.summary}",
        )
    for s in before:
        if _blocked(s):
            add(s, "blocked", f"Blocked: {_what_failed(s)}; the agent could not go on this way.")
    for i, s in enumerate(before):
        if (s.retry or 0) > 0 and s.type == "tool_call":
            prior = next((p for p in reversed(before[:i]) if p.tool_name == s.tool_name and _errored(p)), None)
            if prior is not None:
                add(prior, "retry", f"Error: {_what_failed(prior)}; it was retried at step {s.seq}.")
            add(s, "retry", f"Retry {s.retry} of {s.tool_name}" + (f" after step {prior.seq} failed." if prior else "."))
    for s in before:
        why = _slow(s, durations)
        if why:
            add(s, "slow", f"Slow operation: {why}.")
    text = f"{fail.error_class or ''} {fail.content or ''} {session.get('error_class') or ''}"
    if BUDGET_ERROR.search(text) and overflow is None:  # without the error's figures, the biggest spender is a lead
        spent = [s for s in before if (s.tokens_in or 0) + (s.tokens_out or 0) > 0]
        total = sum((s.tokens_in or 0) + (s.tokens_out or 0) for s in spent)
        if spent and total:
            top = max(spent, key=lambda s: (s.tokens_in or 0) + (s.tokens_out or 0))
            used = (top.tokens_in or 0) + (top.tokens_out or 0)
            add(top, "budget", f"The step that spent the most tokens: {used:,} of the run's {total:,} ({used / total:.0%}).")
        big = max(
            (s for s in before if s.type in ("tool_result", "observation")), key=lambda s: len(s.content or ""), default=None
        )
        if big is not None and len(big.content or "") >= 4000:
            add(
                big,
                "budget",
                f"The largest result put into the context: {len(big.content or ''):,} characters from "
                f"{big.tool_name or 'the environment'}.",
            )
    for s in errors:
        if ARGUMENT_ERROR.search(f"{s.error_class or ''} {_first_line(s.content, 300)}"):
            call = calls.get(s.tool_call_id) if s.tool_call_id else None
            if call is None:
                call = next(
                    (c for c in reversed(before[: pos_of[s.seq]]) if c.type == "tool_call" and c.tool_name == s.tool_name), None
                )
            if call is not None:
                add(call, "argument", f"The call whose arguments were refused at step {s.seq}: it {describe(call)}.")
    seen: set[tuple] = set()
    for s in errors:
        kind = (s.tool_name, s.error_class)
        if kind not in seen:
            seen.add(kind)
            add(s, "error", f"Error: {_what_failed(s)}.")
    chain = sorted(links.values(), key=lambda link: pos_of[link.seq])
    if len(chain) > MAX_CHAIN:  # keep the failure, its first occurrence and the strongest of the rest
        rank = [
            "failure",
            "first_failure",
            "contradiction",
            "acted_on",
            "turning_point",
            "blocked",
            "retry",
            "slow",
            "argument",
            "budget",
            "error",
        ]
        keep = sorted(chain, key=lambda link: (rank.index(link.kind), pos_of[link.seq]))[:MAX_CHAIN]
        chain = sorted(keep, key=lambda link: pos_of[link.seq])
    return chain


# ---------------------------------------------------------------------------- the whole answer


class Reads:
    """The store, read through: each run's steps and each list of runs read once and kept, so that
    explaining many runs reads once what they share (the successful runs compared with, the recent runs of
    a workflow whose durations are the usual ones). Held for one explanation or one `failure_patterns`."""

    def __init__(self, store: Store):
        self.store = store
        self._steps: dict[str, list[StepEvent]] = {}
        self._lists: dict[tuple[SessionFilter, int], list[dict]] = {}

    def steps(self, session_id: str, *, keep: bool = True) -> list[StepEvent]:
        """A run's steps; `keep=False` for a run read once (a failing run's own): used if kept, not kept."""
        found = self._steps.get(session_id)
        if found is None:
            found = self.store.load_steps(session_id)
            if keep:
                self._steps[session_id] = found
        return found

    def sessions(self, flt: SessionFilter, limit: int) -> list[dict]:
        if (flt, limit) not in self._lists:
            self._lists[flt, limit] = self.store.list_sessions(flt, limit=limit)
        return self._lists[flt, limit]


def explain(store: Store, session_id: str, *, include_replays: bool = False) -> Explanation:
    """Why the run failed: turning point, causal chain, contradictions (module docstring)."""
    session = store.get_session(session_id)
    if session is None:
        raise ExplainError(f"no such session: {session_id}")
    return _explained(Reads(store), session, include_replays=include_replays)[0]


def _explained(reads: Reads, session: dict, *, include_replays: bool = False) -> tuple[Explanation, list[StepEvent]]:
    """explain for a run's session row (get_session's, or list_sessions': the same), with the steps it read."""
    session_id = session["id"]
    status = session.get("status") or "unknown"
    if status not in EXPLAINED:
        raise ExplainError(f"session {session_id} is {status}: only failed, incomplete or unknown-outcome runs are explained")
    steps = reads.steps(session_id, keep=False)
    if not steps:
        return Explanation(session_id, status, session.get("outcome"), None, [], [], ["The run has no steps recorded."]), steps
    contradictions = find_contradictions(steps)
    turning, how = turning_point(reads, session, steps, include_replays=include_replays)
    durations = _usual_durations(reads, session, steps)
    chain = causal_chain(steps, session, contradictions, turning, durations)
    notes = [how, f"{len(steps)} steps read; chain rules and the slow-operation rule are in replay_core/understand/explain.py."]
    return Explanation(session_id, status, session.get("outcome"), turning, chain, contradictions, notes), steps


# ---------------------------------------------------------------------------- failure patterns


@dataclass
class FailurePattern:
    """Failed runs of one workflow that turn, or start to go wrong, at the same kind of step."""

    workflow: str | None
    key: tuple  # ("diverge", tool, kind) or ("chain", tool, kind, error_class)
    runs: list[str]
    of: int  # failures of that workflow looked at

    @property
    def sentence(self) -> str:
        where = f"failures of {self.workflow}" if self.workflow else "failures with no workflow"
        if self.key[0] == "diverge":
            _, tool, kind = self.key
            what = f"diverge from a successful run at {tool or 'a step with no tool'} with {kind}"
        else:
            _, tool, kind, error_class = self.key
            what = f"start going wrong at {tool or 'a step with no tool'} ({_KIND_WORDS.get(kind, kind)}" + (
                f", {error_class})" if error_class else ")"
            )
        return f"{len(self.runs)} of {self.of} {where} {what}"

    def to_dict(self) -> dict:
        return {
            "workflow": self.workflow,
            "key": list(self.key),
            "runs": self.runs,
            "count": len(self.runs),
            "of": self.of,
            "sentence": self.sentence,
        }


def pattern_key(result: Explanation, steps_by_seq: dict[int, StepEvent]) -> tuple:
    """How a failed run is grouped: its turning point's tool and kind, else its chain head's tool, kind, error class."""
    tp = result.turning_point
    if tp is not None and tp.seq is not None:
        step = steps_by_seq.get(tp.seq)
        return ("diverge", step.tool_name if step else None, tp.kind)
    head = result.head
    if head is None:
        return ("chain", None, "none", None)
    return ("chain", head.tool, head.kind, head.error_class)


def failure_patterns(store: Store, flt: SessionFilter | None = None, *, limit: int = 500) -> tuple[list[FailurePattern], int]:
    """Failed, incomplete and unknown-outcome runs (replays left out) grouped by pattern_key, biggest group first.

    Returns the groups and how many failing runs were left out past `limit` (newest first are kept).
    """
    from dataclasses import replace

    base = flt or SessionFilter()
    rows: list[dict] = []
    for status in EXPLAINED:
        if base.status in (None, status):
            rows += store.list_sessions(replace(base, status=status), limit=limit + 1)
    rows = [r for r in rows if not r.get("replay_of")]
    rows.sort(key=lambda r: (r.get("started_at") is None, r.get("started_at")), reverse=True)
    skipped = max(0, len(rows) - limit)
    groups: dict[tuple, list[str]] = {}
    totals: dict[str | None, int] = {}
    # a workflow's runs one after the other, each workflow's shared reads (the runs compared with, the
    # usual durations' runs) kept while its runs are explained and let go after: held are one workflow's
    reads, reading = Reads(store), None
    for row in sorted(rows[:limit], key=lambda r: r.get("workflow") or ""):
        if row.get("workflow") != reading:
            reads, reading = Reads(store), row.get("workflow")
        result, steps_read = _explained(reads, row)
        steps = {s.stored_seq: s for s in steps_read}
        wf = row.get("workflow")
        totals[wf] = totals.get(wf, 0) + 1
        groups.setdefault((wf, pattern_key(result, steps)), []).append(row["id"])
    patterns = [FailurePattern(wf, key, sorted(ids), totals[wf]) for (wf, key), ids in groups.items()]
    patterns.sort(key=lambda p: (-len(p.runs), p.workflow or "", str(p.key)))
    return patterns, skipped

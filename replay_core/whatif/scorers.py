"""Scorers: did a replay do what counts as right for its case? Each says yes or no, and why.

A scorer is a function of a `ScoreInput` (the case, the original run, the replay) that
returns a `Score`. The built-in ones are registered below; a team adds its own with
`@scorer("name")` (in code that the experiment imports, or through the entry point group
`agent_replay.scorers`), or names one as `package.module:function`. A scorer that raises
fails its case with the error as the reason: one broken scorer never stops an experiment.

`judge` asks an LLM through litellm (provider.ask: retries, error classes, cost) with a
rubric; it costs money, so it runs only when asked, and its score keeps the prompt, the
model and the cost.
"""

from __future__ import annotations

import difflib
import importlib
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from importlib.metadata import entry_points
from typing import Any

import orjson

from ..events import StepEvent
from .provider import ProviderError, ask
from .recording import call_key
from .replay import ReplayResult
from .replay_config import ReplayConfig

ENTRY_POINT_GROUP = "agent_replay.scorers"
DEFAULT_SCORERS = ("outcome",)


@dataclass
class Score:
    name: str
    passed: bool
    reason: str
    score: float | None = None  # a 0–1 measure where the scorer has one (similarity, judge)
    cost_usd: float | None = None  # what the scorer itself spent (judge)
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v not in (None, {})}


@dataclass
class ScoreInput:
    case_session: str
    expected: str | None  # None: the original's own final answer is what counts as right
    match: str  # the dataset's rule for expected outcomes: equals | contains | regex
    original: dict  # the original session's row
    original_steps: Sequence[StepEvent]
    replay: ReplayResult
    replay_steps: list[StepEvent]
    from_seq: int
    options: dict[str, Any] = field(default_factory=dict)  # this scorer's options
    original_verdict: str | None = None  # a reviewer's verdict on the original run: good | bad | needs_attention


Scorer = Callable[[ScoreInput], Score]
SCORERS: dict[str, Scorer] = {}


def scorer(name: str | None = None) -> Callable[[Scorer], Scorer]:
    """Register a scorer under `name` (default: the function's name)."""

    def register(fn: Scorer) -> Scorer:
        SCORERS[name or fn.__name__] = fn
        return fn

    return register


class ScorerError(ValueError):
    """A scorer name that names nothing."""


def get_scorer(name: str) -> Scorer:
    """A registered scorer, one from an installed package's entry point, or `module:function`."""
    if name in SCORERS:
        return SCORERS[name]
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            SCORERS[name] = ep.load()
            return SCORERS[name]
    module, sep, attr = name.partition(":")
    if sep:
        try:
            fn = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ScorerError(f"scorer {name!r}: cannot load it ({exc})") from None
        if not callable(fn):
            raise ScorerError(f"scorer {name!r}: not a function")
        SCORERS[name] = fn
        return fn
    raise ScorerError(f"scorer {name!r}: unknown; known: {', '.join(sorted(SCORERS))} (or give package.module:function)")


def run_scorers(names: list[str], inp: ScoreInput, options: dict[str, dict]) -> list[Score]:
    out = []
    for name in names:
        inp.options = options.get(name, {})
        try:
            result = get_scorer(name)(inp)
            if not isinstance(result, Score):
                result = Score(name, False, f"scorer returned {type(result).__name__}, not a Score")
            result.name = name
        except Exception as exc:  # a custom scorer's bug fails its case, named
            result = Score(name, False, f"scorer raised {type(exc).__name__}: {str(exc)[:300]}")
        out.append(result)
    return out


# ---------------------------------------------------------------------------- what the scorers read


def final_answer(steps: Sequence[StepEvent]) -> str | None:
    """The run's final answer: its last decision's text."""
    for step in reversed(steps):
        if step.type == "decision" and step.content:
            return step.content
    return None


def run_verdict(annotations: Sequence[dict]) -> str | None:
    """The latest reviewer verdict on a whole run (annotations on no step), or None."""
    whole = [a for a in annotations if not a.get("event_id")]
    return whole[-1]["label"] if whole else None


NO_REFERENCE = (
    "the original {why}, so its answer is not what counts as right; give the case an expected outcome, "
    "or mark the original good on Review if its answer was right"
)


def expected_of(inp: ScoreInput) -> tuple[str | None, str]:
    """What counts as right, and where that came from (None: nothing does, and why).

    A failed original's answer is not right unless a reviewer marked the run good; a run a reviewer
    marked bad or for attention is not right whatever its status."""
    if inp.expected is not None:
        return inp.expected, "the expected outcome"
    verdict = inp.original_verdict
    if verdict in ("bad", "needs_attention"):
        return None, NO_REFERENCE.format(why=f"was marked {verdict.replace('_', ' ')} by a reviewer")
    if verdict != "good" and inp.original.get("status") != "succeeded":
        return None, NO_REFERENCE.format(why=f"ended {inp.original.get('status') or 'without a recorded outcome'}")
    vouched = " (a reviewer marked it good)" if verdict == "good" else ""
    answer = final_answer(inp.original_steps)
    if answer is not None:
        return answer, "the original's final answer" + vouched
    outcome = inp.original.get("outcome")
    if outcome is None:
        return None, "the original has no final answer or outcome, and the case no expected text"
    return outcome, "the original's outcome" + vouched


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text.casefold()).strip().rstrip(".!").strip()


def _short(text: str | None, n: int = 80) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _calls(steps: Sequence[StepEvent], from_seq: int = 0) -> list[StepEvent]:
    return [s for s in steps if s.type == "tool_call" and s.stored_seq >= from_seq]


def _call_text(step: StepEvent) -> str:
    name, args = call_key(step)
    return f"{name}({args})"


# ---------------------------------------------------------------------------- the built-in scorers


@scorer("outcome")
def outcome(inp: ScoreInput) -> Score:
    want, where = expected_of(inp)
    got = final_answer(inp.replay_steps)
    reference = {"reference": where}
    if want is None:
        return Score("outcome", False, f"nothing to compare with: {where}", details=reference)
    if got is None:
        return Score(
            "outcome",
            False,
            f"the replay gave no final answer (it ended {inp.replay.outcome}: {_short(inp.replay.message)})",
            details=reference,
        )
    rule = inp.match if inp.expected is not None else "equals"
    if rule == "regex":
        ok = re.search(want, got) is not None
        how = f"matches /{_short(want, 60)}/" if ok else f"does not match /{_short(want, 60)}/"
    elif rule == "contains":
        ok = normalise(want) in normalise(got)
        how = f"{'contains' if ok else 'does not contain'} “{_short(want, 60)}”"
    else:
        ok = normalise(want) == normalise(got)
        how = "equals it" if ok else f"differs from it: “{_short(want, 60)}”"
    return Score("outcome", ok, f"final answer “{_short(got)}” {how} (compared with {where})", details=reference)


@scorer("final_tool")
def final_tool(inp: ScoreInput) -> Score:
    want = _calls(inp.original_steps)
    got = _calls(inp.replay_steps)
    if not want:
        return Score(
            "final_tool",
            not got,
            "the original made no tool call" + ("" if not got else f"; the replay called {_call_text(got[-1])}"),
        )
    if not got:
        return Score("final_tool", False, f"the replay made no tool call; the original's last was {_call_text(want[-1])}")
    ok = call_key(want[-1]) == call_key(got[-1])
    return Score(
        "final_tool",
        ok,
        f"last call {_call_text(got[-1])}" + (" is the original's" if ok else f", the original's was {_call_text(want[-1])}"),
    )


@scorer("tool_sequence")
def tool_sequence(inp: ScoreInput) -> Score:
    threshold = float(inp.options.get("threshold", 0.8))
    want = [call_key(s) for s in _calls(inp.original_steps, inp.from_seq)]
    got = [call_key(s) for s in _calls(inp.replay_steps, inp.from_seq)]
    ratio = 1.0 if not want and not got else difflib.SequenceMatcher(a=want, b=got, autojunk=False).ratio()
    ok = ratio >= threshold
    return Score(
        "tool_sequence",
        ok,
        f"tool calls {ratio:.0%} alike ({len(got)} vs the original's {len(want)}; threshold {threshold:.0%})",
        score=round(ratio, 4),
    )


@scorer("no_divergence")
def no_divergence(inp: ScoreInput) -> Score:
    div = inp.replay.first_divergence
    if div is None:
        return Score("no_divergence", True, "the replay took the original's steps")
    return Score("no_divergence", False, div.get("summary") or f"departs at step {div.get('a_seq')}")


def _ceiling(name: str, option: str, ceiling: Any, value: float | None, show: Callable[[float], str], unknown: str) -> Score:
    if ceiling is None:
        return Score(name, False, f"no ceiling given (option {option})")
    if value is None:
        return Score(name, False, unknown)
    ok = value <= float(ceiling)
    return Score(name, ok, f"{show(value)} {'≤' if ok else '>'} {show(float(ceiling))}")


@scorer("cost_ceiling")
def cost_ceiling(inp: ScoreInput) -> Score:
    return _ceiling(
        "cost_ceiling",
        "usd",
        inp.options.get("usd"),
        inp.replay.cost_usd,
        lambda v: f"${v:.6f}",
        "the replay's cost is unknown (no price for its model)",
    )


@scorer("latency_ceiling")
def latency_ceiling(inp: ScoreInput) -> Score:
    return _ceiling("latency_ceiling", "ms", inp.options.get("ms"), inp.replay.latency_ms, lambda v: f"{v:.0f} ms", "")


JUDGE_RUBRIC = (
    "Does the agent's final answer accomplish what the expected outcome describes? Minor wording differences "
    "do not matter; a different decision does."
)
JUDGE_PROMPT = """You grade one run of an AI agent.

Rubric: {rubric}

Expected outcome ({where}):
{expected}

The agent's tool calls:
{calls}

The agent's final answer:
{answer}

Reply with a JSON object only: {{"pass": true or false, "reason": "one sentence"}}"""


@scorer("judge")
def judge(inp: ScoreInput) -> Score:
    opts = inp.options
    model = opts.get("model")
    if not model:
        return Score("judge", False, "no judge model given (option model)")
    want, where = expected_of(inp)
    calls = "\n".join(_call_text(s) for s in _calls(inp.replay_steps, inp.from_seq)) or "(none)"
    prompt = JUDGE_PROMPT.format(
        rubric=opts.get("rubric") or JUDGE_RUBRIC,
        where=where,
        expected=want or "(none recorded)",
        calls=calls,
        answer=final_answer(inp.replay_steps) or "(no final answer)",
    )
    settings = {
        k: opts[k]
        for k in (
            "api_base",
            "api_key_env",
            "input_cost_per_token",
            "output_cost_per_token",
            "request_timeout_s",
            "retries",
            "backoff_s",
        )
        if opts.get(k) is not None
    }
    config = ReplayConfig(model=model, temperature=opts.get("temperature", 0.0), **settings)
    details: dict[str, Any] = {"model": model, "prompt": prompt}
    try:
        answer = ask(config, model, [{"role": "user", "content": prompt}], [], config.request_timeout_s)
    except ProviderError as exc:
        return Score("judge", False, f"the judge failed: {exc.error_class}: {exc.message}", details=details)
    details["answer"] = answer.content
    details["tokens"] = [answer.tokens_in, answer.tokens_out]
    verdict = _verdict(answer.content or "")
    if verdict is None:
        return Score(
            "judge",
            False,
            f"the judge's answer is not the asked JSON: “{_short(answer.content)}”",
            cost_usd=answer.cost_usd,
            details=details,
        )
    ok, reason = verdict
    return Score("judge", ok, f"judge {model}: {reason}", score=1.0 if ok else 0.0, cost_usd=answer.cost_usd, details=details)


def _verdict(text: str) -> tuple[bool, str] | None:
    found = re.search(r"\{.*\}", text, re.S)
    if not found:
        return None
    try:
        obj = orjson.loads(found.group(0))
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("pass"), bool):
        return None
    return obj["pass"], str(obj.get("reason") or "no reason given")

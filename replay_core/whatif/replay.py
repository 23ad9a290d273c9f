"""What-if replay: re-run a stretch of a recorded run with another model (docs/replay.md).

The model gets the run's context at the start of the range (with the prompt change
applied) and the tools the run used. Its answers become the steps of a new session
(`replay_of` the source). Tool calls are answered from the recording when the run made
the same call; a call the recording does not hold stops the replay as `diverged`,
unless the caller passed a live function for that tool. While the model makes the same
calls as the original turn by turn, the replay follows the original's script: whatever
the environment said back (results, observations, user inputs) is served as recorded.

Replay outcome → session status: completed and final_answer → succeeded (a replay that
followed the original's calls to the end of the run takes the original's outcome),
diverged and budget → incomplete, provider_error (and an internal error) → failed. The outcome itself is kept
in the session's metadata["replay_outcome"].
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

from ..events import SessionEndEvent, SessionEvent, StepEvent, now_utc
from ..ingest.pipeline import ingest
from ..storage.actor import REPLAY, Actor
from ..storage.store import Store
from ..understand.compare import compare
from ..understand.timeline import Timeline, open_timeline
from .provider import ModelAnswer, ProviderError, ask, load_litellm, prices
from .recording import Recording, Turn, call_key, canonical_args
from .replay_config import RECORDED, ReplayConfig

# replay outcome -> the replay session's status ("error": a fault of the replay itself)
STATUS_OF = {
    "completed": "succeeded",
    "final_answer": "succeeded",
    "diverged": "incomplete",
    "budget": "incomplete",
    "provider_error": "failed",
    "error": "failed",
}
LiveTools = dict[str, Callable[..., Any]]
FLUSH_EVERY_S = 0.5


class ReplayError(ValueError):
    """A replay that cannot start (no such session, bad range); nothing was stored."""


@dataclass
class ReplayResult:
    session: str
    model: str
    status: str  # the replay session's status
    outcome: str  # a key of STATUS_OF: completed, final_answer, diverged, budget, provider_error, error
    message: str
    error_class: str | None = None
    steps: int = 0
    model_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = 0.0  # None: some call's cost is unknown
    latency_ms: float = 0.0  # time spent waiting for the model
    overhead_ms: float = 0.0  # time spent in the replay itself (context, matching, storing)
    first_divergence: dict | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Progress:
    """What a running replay reports after each turn."""

    model: str
    session: str
    steps: int
    done: bool = False
    outcome: str | None = None
    message: str = ""


def open_recording(store: Store, session_id: str, from_step: int | None, to_step: int | None) -> Recording:
    """The source session's range, checked: it must exist and hold model output."""
    try:
        timeline = open_timeline(store, session_id)
    except KeyError:
        raise ReplayError(f"no such session: {session_id}") from None
    return recording_in(timeline, store, from_step, to_step)


def recording_in(timeline: Timeline, store: Store, from_step: int | None, to_step: int | None) -> Recording:
    """An opened session's range, checked (experiments open each case's timeline once for every variant)."""
    session_id = timeline.session["id"]
    if not timeline.steps:
        raise ReplayError(f"session {session_id} has no steps to replay")
    first, last = timeline.steps[0].stored_seq, timeline.steps[-1].stored_seq
    from_step = first if from_step is None else from_step
    to_step = last if to_step is None else to_step
    if from_step > last or to_step < first:
        raise ReplayError(f"steps {from_step}–{to_step} are outside the run (steps {first}–{last})")
    if from_step > to_step:
        raise ReplayError(f"--from {from_step} is after --to {to_step}")
    rec = Recording(timeline, store, from_step, to_step)
    if not rec.turns:
        raise ReplayError(
            f"steps {from_step}–{to_step} of {session_id} hold no model output (think, tool_call, decision) to replay"
        )
    return rec


def apply_prompt(messages: list[dict], config: ReplayConfig) -> list[dict]:
    """The messages with the config's system prompt put in place of, or after, the original."""
    if config.system_prompt is None:
        return messages
    if config.system_mode == "replace":
        return [{"role": "system", "content": config.system_prompt}] + [m for m in messages if m.get("role") != "system"]
    if messages and messages[0].get("role") == "system":
        first = dict(messages[0])
        first["content"] = f"{first.get('content') or ''}\n\n{config.system_prompt}".strip()
        return [first, *messages[1:]]
    return [{"role": "system", "content": config.system_prompt}, *messages]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "model"


class _Stop(Exception):
    def __init__(self, outcome: str, message: str, error_class: str | None = None):
        super().__init__(message)
        self.outcome, self.message, self.error_class = outcome, message, error_class


class _Replay:
    """One replay in progress: the new session's steps, written turn by turn."""

    def __init__(
        self,
        store: Store,
        rec: Recording,
        config: ReplayConfig,
        live_tools: LiveTools,
        on_progress,
        source: str = "replay",
        tags: tuple[str, ...] = (),
    ):
        self.store, self.rec, self.config = store, rec, config
        self.source, self.extra_tags = source, tags
        self.live_tools = live_tools
        self.on_progress = on_progress
        self.session_id = f"{rec.session['id'][:120]}~replay-{_slug(config.model)}-{uuid.uuid4().hex[:8]}"
        self.steps: list[StepEvent] = []
        self.written = 0
        self.last_flush = 0.0
        self.log = rec.start_log()  # the replay's chat messages so far
        self.logged = rec.covered  # steps already in the log (lead steps the recorded context covers)
        self.next_seq = rec.from_step
        self.turn = 0  # the original turn the replay stands at
        self.on_script = True  # every turn so far made the original's calls
        self.ids: dict[str | None, str] = {}  # original event_id -> replay event_id, for parent links
        self.tools = [] if config.tool_mode == "none" else rec.tools()
        range_len = len(rec.range_steps)
        self.max_steps = config.budget.max_steps or 2 * range_len + 20
        self.started = time.monotonic()
        self.known_cost = 0.0  # what the budget counts: the costs that are known
        self.result = ReplayResult(self.session_id, config.label, "running", "", "")

    # ------------------------------------------------------------------ storing

    def _open(self) -> None:
        src = self.rec.session
        name = f"{src.get('name') or src['id']} · what-if {self.config.label} (steps {self.rec.from_step}–{self.rec.to_step})"
        event = SessionEvent(
            session_id=self.session_id,
            name=name[:300],
            agent_id=src.get("agent_id"),
            model=self.config.label,
            workflow=src.get("workflow"),
            environment=src.get("environment"),
            agent_version=src.get("agent_version"),
            tags=[*(src.get("tags") or []), "replay", *self.extra_tags],
            started_at=now_utc(),
            source=self.source,
            replay_of=src["id"],
            replay_from=self.rec.from_step,
            replay_to=self.rec.to_step,
            replay_config=self.config.to_json(),
        )
        ingest(self.store, [event], source="replay")

    def _flush(self, force: bool = True) -> None:
        """Store the steps made since the last flush, at most twice a second unless forced.

        The timeline shows a replay while it runs; flushing every turn of a fast
        (recorded) replay would cost a transaction per turn.
        """
        fresh = self.steps[self.written :]
        if fresh and (force or time.monotonic() - self.last_flush >= FLUSH_EVERY_S):
            ingest(self.store, fresh, source="replay")
            self.written = len(self.steps)
            self.last_flush = time.monotonic()
        self._progress(False)

    def _progress(self, done: bool) -> None:
        if self.on_progress is not None:
            self.on_progress(
                Progress(
                    self.config.label, self.session_id, len(self.steps), done, self.result.outcome or None, self.result.message
                )
            )

    def _step(self, **fields: Any) -> StepEvent:
        seq = self.next_seq
        self.next_seq += 1
        original = fields.pop("original", None)
        event_id = f"r{seq:06d}"
        if original is not None:
            self.ids[original.event_id] = event_id
            fields.setdefault("parent_id", self.ids.get(original.parent_id))
        step = StepEvent(session_id=self.session_id, event_id=event_id, seq=seq, timestamp=now_utc(), **fields)
        self.steps.append(step)
        return step

    def _copy(self, original: StepEvent, *, call_ids: dict[str, str | None] | None = None, **overrides: Any) -> StepEvent:
        """A recorded step served into the replay, marked with where it came from."""
        names = (
            "type",
            "agent_id",
            "model",
            "content",
            "tool_name",
            "tool_args",
            "status",
            "error_class",
            "retry",
            "tokens_in",
            "tokens_out",
            "cost_usd",
            "duration_ms",
        )
        fields = {n: getattr(original, n) for n in names}
        call_id = original.tool_call_id
        fields["tool_call_id"] = call_ids.get(call_id, call_id) if call_ids and call_id else call_id
        fields["metadata"] = {**(original.metadata or {}), "recorded": True, "source_seq": original.seq}
        fields.update(overrides)
        return self._step(original=original, **fields)

    # ------------------------------------------------------------------ the loop

    def run(self) -> ReplayResult:
        self._open()
        try:
            for step in self.rec.lead:
                self._copy(step)
            self._flush(force=False)
            while True:
                self._turn()
        except _Stop as stop:
            self._finish(stop.outcome, stop.message, stop.error_class)
        except Exception as exc:  # a bug or a broken store: the replay ends failed, steps kept
            self._finish("error", str(exc)[:500], type(exc).__name__)
        return self.result

    def _budget(self) -> tuple[float, bool]:
        """Seconds the next call may take (and whether the time budget sets it); _Stop when a budget is spent."""
        b = self.config.budget
        if self.turn >= len(self.rec.turns):
            raise _Stop("completed", f"reached the end of the range (step {self.rec.to_step})")
        if len(self.steps) >= self.max_steps:
            raise _Stop("budget", f"step budget spent ({len(self.steps)} of {self.max_steps} steps)")
        spent = self.known_cost
        if b.max_cost_usd is not None and spent >= b.max_cost_usd:
            raise _Stop("budget", f"cost budget spent (${spent:.4f} of ${b.max_cost_usd:.4f})")
        if b.timeout_s is not None:
            remaining = b.timeout_s - (time.monotonic() - self.started)
            if remaining <= 0:
                raise _Stop("budget", f"time budget spent ({b.timeout_s:g} s)")
            if remaining < self.config.request_timeout_s:
                return remaining, True
        return self.config.request_timeout_s, False

    def _turn(self) -> None:
        timeout = self._budget()
        original = self.rec.turns[self.turn]
        self.log.extend(self.steps[self.logged :])
        self.logged = len(self.steps)
        messages = self.log.messages()
        answer = self._ask(messages, timeout)
        turn_steps = answer if isinstance(answer, list) else self._record(answer, original, messages)
        calls = [s for s in turn_steps if s.type == "tool_call"]
        same = Counter(call_key(s) for s in calls) == original.call_keys
        live_first = self.config.tool_mode == "live" and any((c.tool_name or "") in self.live_tools for c in calls)
        if same and not live_first:  # the original's calls: the environment says what it said then
            call_ids = _pair_call_ids(original.calls, calls)
            for step in original.env:
                self._copy(step, call_ids=call_ids)
            self._flush(force=False)
            self.turn += 1
            return
        self.on_script = False
        if not calls:
            raise _Stop("final_answer", "the model gave its final answer")
        self._answer_calls(calls)
        if same:
            self.turn = max(self.turn, original.index + 1)

    def _ask(self, messages: list[dict], timeout: tuple[float, bool]) -> ModelAnswer | list[StepEvent]:
        """The model's answer: served from the recording (steps) or asked live (answer)."""
        config = self.config
        model = config.model
        if model == RECORDED:
            started = time.perf_counter()
            turn = self.rec.recorded_answer(self.log.key())
            if turn is not None:
                elapsed = round((time.perf_counter() - started) * 1000, 1)
                steps = [self._copy(s, cost_usd=0.0, duration_ms=elapsed if i == 0 else 0.0) for i, s in enumerate(turn.steps)]
                self.result.model_calls += 1
                self._count(steps)
                return steps
            if not config.fallback_model:
                raise _Stop("diverged", "the recording holds no answer for this context (it departs from the original run)")
            model = config.fallback_model
        try:
            answer = ask(config, model, apply_prompt(messages, config), self.tools, timeout[0])
        except ProviderError as exc:
            self.result.latency_ms += exc.latency_ms
            if exc.error_class == "timeout" and timeout[1]:
                raise _Stop("budget", f"time budget spent ({config.budget.timeout_s:g} s) waiting for {model}") from None
            self._step(
                type="error",
                status="error",
                error_class=exc.error_class,
                model=model,
                content=f"Provider error from {model}: {exc.message}",
            )
            raise _Stop("provider_error", exc.message, exc.error_class) from None
        self.result.model_calls += 1
        self.result.latency_ms += answer.latency_ms
        return answer

    def _record(self, answer: ModelAnswer, original: Turn, messages: list[dict]) -> list[StepEvent]:
        """The live answer as steps: thought and tool calls, or a text answer."""
        lead = original.steps[0]
        common = {"agent_id": lead.agent_id, "parent_id": self.ids.get(lead.parent_id)}
        usage = {
            "model": answer.model or self.config.model,
            "tokens_in": answer.tokens_in,
            "tokens_out": answer.tokens_out,
            "cost_usd": answer.cost_usd,
            "duration_ms": answer.latency_ms,
            "context": apply_prompt(messages, self.config),
            "metadata": {"live": True, "provider_retries": answer.retries} if answer.retries else {"live": True},
        }
        steps = []
        if answer.content is not None or not answer.tool_calls:
            if answer.tool_calls:
                kind = "think"
            else:
                kind = original.text_type if not original.calls and original.text_type else "decision"
            steps.append(self._step(type=kind, content=answer.content or "", **common, **usage))
            usage = {}
        for call in answer.tool_calls:
            steps.append(
                self._step(
                    type="tool_call",
                    tool_name=call.name,
                    tool_args=call.arguments,
                    tool_call_id=call.id,
                    **common,
                    **(usage or {"model": answer.model or self.config.model}),
                )
            )
            usage = {}
        self._count(steps)
        if answer.cost_usd is None and self.result.cost_usd is not None:
            self.result.cost_usd = None
        return steps

    def _count(self, steps: list[StepEvent]) -> None:
        for s in steps:
            self.result.tokens_in += s.tokens_in or 0
            self.result.tokens_out += s.tokens_out or 0
            if s.cost_usd is not None:
                self.known_cost += s.cost_usd
                if self.result.cost_usd is not None:
                    self.result.cost_usd = round(self.result.cost_usd + s.cost_usd, 8)

    def _answer_calls(self, calls: list[StepEvent]) -> None:
        """Calls off the original's script: each answered from anywhere in the recording, or live."""
        plan: list[tuple[StepEvent, Callable[..., Any] | tuple[StepEvent, int]]] = []  # live, or (answer, its call's seq)
        for call in calls:
            live = self.live_tools.get(call.tool_name or "")
            found = self.rec.find_call(call.tool_name or "", call.tool_args)
            if live is not None and (self.config.tool_mode == "live" or found is None or found.answer is None):
                plan.append((call, live))
            elif found is not None and found.answer is not None:
                if found.call.stored_seq > self.rec.to_step:
                    raise _Stop(
                        "completed",
                        f"the model made the call the original made at step {found.call.seq}, "
                        f"after the end of the range (step {self.rec.to_step})",
                    )
                plan.append((call, (found.answer, found.call.stored_seq)))
            else:
                held = " (recorded without a result)" if found is not None else ""
                raise _Stop(
                    "diverged",
                    f"the model called {call.tool_name}({canonical_args(call.tool_args)}), "
                    f"which the recording does not hold{held}",
                )
        for call, how in plan:
            if callable(how):
                self._run_live(call, how)
                continue
            answer, source_seq = how
            self._copy(answer, call_ids={answer.tool_call_id: call.tool_call_id} if answer.tool_call_id else None)
            turn = self.rec.turn_of_seq(source_seq)
            if turn is not None:
                self.turn = max(self.turn, turn.index + 1)
        self._flush(force=False)

    def _run_live(self, call: StepEvent, fn: Callable[..., Any]) -> StepEvent:
        started = time.perf_counter()
        args = call.tool_args
        try:
            value = fn(**args) if isinstance(args, dict) else fn(args)
            content = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
            status, error_class = "ok", None
        except Exception as exc:  # the tool's failure is the tool's answer
            content, status, error_class = f"{type(exc).__name__}: {exc}", "error", type(exc).__name__
        return self._step(
            type="tool_result",
            tool_name=call.tool_name,
            tool_args=args,
            tool_call_id=call.tool_call_id,
            content=content,
            status=status,
            error_class=error_class,
            agent_id=call.agent_id,
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
            metadata={"live": True},
        )

    def _finish(self, outcome: str, message: str, error_class: str | None) -> None:
        self._flush()
        src = self.rec.session
        status = STATUS_OF.get(outcome, "failed")
        outcome_text = f"Replay {outcome.replace('_', ' ')}: {message}"
        if (
            outcome in ("completed", "final_answer")
            and self.on_script
            and self.rec.covers_end
            and self.turn >= len(self.rec.turns)
        ):
            # The same calls to the end of the recording: the original's outcome stands (an
            # unfinished original leaves the replay unfinished too; one that ended without a recorded
            # outcome leaves the replay's outcome unrecorded too: `unknown`).
            ended = src.get("status") in ("succeeded", "failed", "unknown")
            status, error_class = (src["status"], src.get("error_class")) if ended else ("incomplete", None)
            original_outcome = src.get("outcome") or src.get("status")
            outcome_text += (
                f". It made the original's calls to the end of the recording; the original's outcome: {original_outcome}"
            )
        self.result.status, self.result.outcome, self.result.message, self.result.error_class = (
            status,
            outcome,
            message,
            error_class,
        )
        self.result.steps = len(self.steps)
        meta = {"replay_outcome": outcome, "replay_message": message, "tool_results": tool_results(self.steps)}
        ingest(
            self.store,
            [
                SessionEvent(session_id=self.session_id, metadata=meta),
                SessionEndEvent(
                    session_id=self.session_id,
                    status=status,
                    outcome=outcome_text[:2000],
                    error_class=error_class,
                    ended_at=now_utc(),
                ),
            ],
            source="replay",
        )
        self.result.overhead_ms = round((time.monotonic() - self.started) * 1000 - self.result.latency_ms, 1)
        try:
            found = compare(
                self.store, src["id"], self.session_id, loaded={src["id"]: (src, self.rec.timeline.steps)}
            ).first_divergence
            self.result.first_divergence = found.to_dict() if found else None
        finally:
            self._progress(True)


def tool_results(steps: list[StepEvent]) -> dict[str, list[int]]:
    """The seqs of a replay's tool answers that a live function gave, and those served from the recording."""
    out: dict[str, list[int]] = {"live": [], "recorded": []}
    for s in steps:
        if s.type in ("tool_result", "observation", "error") and (s.tool_name or s.tool_call_id):
            meta = s.metadata or {}
            if meta.get("live"):
                out["live"].append(s.stored_seq)
            elif meta.get("recorded"):
                out["recorded"].append(s.stored_seq)
    return out


def _pair_call_ids(original: list[StepEvent], replayed: list[StepEvent]) -> dict[str, str | None]:
    """Original call id -> the replay's id for the same call, so recorded results answer the right call."""
    free: dict[tuple[str, str], list[str | None]] = {}
    for step in replayed:
        free.setdefault(call_key(step), []).append(step.tool_call_id)
    out: dict[str, str | None] = {}
    for step in original:
        ids = free.get(call_key(step))
        if step.tool_call_id and ids:
            out[step.tool_call_id] = ids.pop(0)
    return out


def replay(
    store: Store,
    session_id: str,
    from_step: int | None,
    to_step: int | None,
    config: ReplayConfig,
    *,
    live_tools: LiveTools | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    source: str = "replay",
    tags: tuple[str, ...] = (),
    actor: Actor | None = None,
    recording: Recording | None = None,
) -> ReplayResult:
    """Replay steps from_step..to_step of a session with `config`; returns how it went.

    The replay is stored as it goes (a session with replay_of set); provider errors
    end it `failed` with every step kept. Raises ReplayError only for bad input.
    `source` and `tags` mark the replay session (experiments mark theirs, to keep them out of lists).
    `recording`: this range already opened (recording_in), shared read-only by concurrent replays.
    Editors only (`actor`, default the local user: replays cost money); each is in the audit log.
    """
    actor = store.authorize(actor, REPLAY, session_id)
    rec = recording if recording is not None else open_recording(store, session_id, from_step, to_step)
    if _needs_model(config):
        load_litellm()  # before the clock starts: its import is not the replay's overhead
    result = _Replay(store, rec, config, live_tools or {}, on_progress, source, tags).run()
    store.record_audit(
        actor,
        REPLAY,
        target=session_id,
        detail={"model": result.model, "replay": result.session, "status": result.status, "from": from_step, "to": to_step},
    )
    return result


def _needs_model(config: ReplayConfig) -> bool:
    """True when the config may call a live model; its API key must then be there (ConfigError if not)."""
    live = config.model != RECORDED or config.fallback_model is not None
    if live:
        config.api_key()
    return live


def replay_many(
    store: Store,
    session_id: str,
    from_step: int | None,
    to_step: int | None,
    configs: list[ReplayConfig],
    *,
    max_workers: int = 4,
    live_tools: LiveTools | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    actor: Actor | None = None,
) -> list[ReplayResult]:
    """Fan-out: one replay session per config, run concurrently (at most max_workers at once). Editors only."""
    actor = store.authorize(actor, REPLAY, session_id)
    if not configs:
        raise ReplayError("name at least one model")
    open_recording(store, session_id, from_step, to_step)  # bad input fails here, before anything runs
    if [c for c in configs if _needs_model(c)]:
        load_litellm()  # once, before the threads start
    lock = threading.Lock()

    def report(p: Progress) -> None:
        if on_progress is not None:
            with lock:
                on_progress(p)

    with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(configs))), thread_name_prefix="replay") as pool:
        futures = [
            pool.submit(replay, store, session_id, from_step, to_step, c, live_tools=live_tools, on_progress=report, actor=actor)
            for c in configs
        ]
        return [f.result() for f in futures]


# ---------------------------------------------------------------------------- estimate


@dataclass
class Estimate:
    """What a replay is likely to cost before it runs: the original range's size per model."""

    model: str
    turns: int
    tokens_in: int
    tokens_out: int
    cost_usd: float | None  # None: price unknown
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _chars(step: StepEvent) -> int:
    args = step.tool_args
    return len(step.content or "") + (len(canonical_args(args)) if args is not None else 0) + 16


def estimate(
    store: Store, session_id: str, from_step: int | None, to_step: int | None, configs: list[ReplayConfig]
) -> list[Estimate]:
    """Tokens and cost per model for replaying this range (see estimate_for)."""
    return estimate_for(open_recording(store, session_id, from_step, to_step), configs)


def estimate_for(rec: Recording, configs: list[ReplayConfig]) -> list[Estimate]:
    """Tokens and cost per model: each original turn's context (its recorded input tokens, else
    about 4 characters a token) in, the original's answers out, at the model's list price."""
    tools_chars = len(orjson.dumps(rec.tools()))
    base = sum(len(orjson.dumps(m)) for m in rec.base) + sum(_chars(s) for s in rec.prefix) + tools_chars
    tokens_in = tokens_out = 0
    seen = rec.covered
    by_seq = {s.seq: i for i, s in enumerate(rec.range_steps)}
    running = base
    for turn in rec.turns:
        upto = by_seq[turn.first_seq]
        running += sum(_chars(s) for s in rec.range_steps[seen:upto])
        seen = upto
        recorded_in = sum(s.tokens_in or 0 for s in turn.steps)
        tokens_in += recorded_in or running // 4
        tokens_out += sum(s.tokens_out if s.tokens_out else _chars(s) // 4 for s in turn.steps)
    out = []
    for config in configs:
        notes = []
        if config.model == RECORDED:
            cost: float | None = 0.0
            notes.append(
                "recorded answers cost nothing" + (f"; misses go to {config.fallback_model}" if config.fallback_model else "")
            )
            if config.fallback_model:
                price = prices(config.fallback_model, config)
                cost = None if price is None else 0.0
                notes.append("the fallback is asked only where the run departs from the recording")
        else:
            price = prices(config.model, config)
            cost = None if price is None else round(tokens_in * price[0] + tokens_out * price[1], 6)
            if price is None:
                notes.append(f"no list price for {config.model}: cost unknown")
        out.append(Estimate(config.label, len(rec.turns), tokens_in, tokens_out, cost, notes))
    return out

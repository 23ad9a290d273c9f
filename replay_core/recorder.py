"""The Python SDK: record a live agent run, step by step, as it happens.

    recorder = Recorder("sqlite:///runs.db")          # or Recorder("https://replay.example", token=...)
    with recorder.session("refund request", agent_id="support-bot") as run:
        run.input("I want a refund for order A-17")
        run.think("Look the order up first.", tokens_in=812, tokens_out=40)
        run.decision("Refund approved.")

Steps are numbered (seq) here, in the order they were recorded, so the order is exact
whatever the delivery does. Recording only appends to memory: delivery happens on a
background thread through the ingestion pipeline (spool.py), and a storage failure
never reaches the agent. Mistakes in the call itself (an unknown field, a negative
token count) do raise, at the line that made them.
"""

from __future__ import annotations

import functools
import inspect
import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import orjson
from pydantic import ValidationError

from . import config
from .events import SessionEndEvent, SessionEvent, StepEvent, describe_validation_error, now_utc
from .step_order import AutoCall, Held, Reserved, StepOrder
from .tool_call import ToolCall, as_text, call_arguments, signature_of

_current_run: ContextVar[Session | None] = ContextVar("agent_replay_run", default=None)
_current_parent: ContextVar[str | None] = ContextVar("agent_replay_parent", default=None)
_STEP_FIELDS = frozenset(StepEvent.model_fields) - {"schema_", "kind", "session_id", "type"}
_JSON_FIELDS = ("tool_args", "context", "metadata")


def _new_id() -> str:
    return os.urandom(16).hex()  # random like uuid4, at a tenth of its cost


def _json_safe(value: Any) -> Any:
    """A JSON copy: later changes to the agent's objects do not change what was recorded."""
    return orjson.loads(orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS))


class _Steps(ABC):
    """One method per step type. A Session records into itself, a Recorder into its current session.

    Every method returns the step's event_id and takes the contract's step fields as
    keywords (model, tokens_in, tokens_out, cost_usd, duration_ms, context, metadata,
    agent_id, status, retry, timestamp, parent_id, ...).
    """

    @abstractmethod
    def _run(self) -> Session:
        """The session the steps go to."""

    def step(self, type: str, content: str | None = None, **fields: Any) -> str:
        return self._run().record(type, content=content, **fields)

    def input(self, content: str, *, role: str = "user", **fields: Any) -> str:
        fields["metadata"] = {**(fields.get("metadata") or {}), "role": role}
        return self.step("input", content, **fields)

    def think(self, content: str | None, **fields: Any) -> str:
        return self.step("think", content, **fields)

    def observation(self, content: str | None, **fields: Any) -> str:
        return self.step("observation", content, **fields)

    def decision(self, content: str | None, **fields: Any) -> str:
        return self.step("decision", content, **fields)

    def tool_call(self, tool_name: str, args: Any = None, **fields: Any) -> str:
        """The returned event_id doubles as the tool_call_id unless one is given."""
        return self.step("tool_call", tool_name=tool_name, tool_args=args, **fields)

    def tool_result(self, tool_name: str, result: Any, **fields: Any) -> str:
        return self.step("tool_result", as_text(result), tool_name=tool_name, **fields)

    def error(self, error: BaseException | str, **fields: Any) -> str:
        """An error step; an exception gives its class name as error_class."""
        if isinstance(error, BaseException):
            fields.setdefault("error_class", type(error).__name__)
            error = str(error) or type(error).__name__
        fields.setdefault("status", "error")
        return self.step("error", error, **fields)

    def span(self, name: str, **fields: Any) -> Span:
        """A parent operation: `with run.span("retrieve"):` makes the steps inside its children."""
        return Span(self._run(), name, fields)

    def fallback(self, task: str, agent: Callable[[str, Exception], Any], **fields: Any):
        """A scripted block that hands over to `agent(task, error)` on its first failure (fallback.py)."""
        from .fallback import FallbackBlock

        return FallbackBlock(self._run(), task, agent, fields)


class Session(_Steps):
    """One recorded run. `with` makes it the current session and ends it: succeeded, or failed
    with the exception's class when one escapes."""

    def __init__(self, recorder: Recorder, session_id: str, *, numbered: bool = True):
        self.recorder, self.id = recorder, session_id
        self.order = StepOrder(numbered)
        self.ended = False
        self._token = None

    def _run(self) -> Session:
        return self

    def __enter__(self) -> Session:
        self._token = _current_run.set(self)
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            if exc is not None and not self.ended:
                self.record_exception(exc)
                self.end("failed", outcome=str(exc) or None, error_class=type(exc).__name__)
            elif not self.ended:
                self.end()
        finally:
            _current_run.reset(self._token)
        return False

    def end(self, status: str = "succeeded", *, outcome: str | None = None, error_class: str | None = None) -> None:
        """Close the run (once; later calls are ignored)."""
        if self.ended:
            return
        event = SessionEndEvent(session_id=self.id, status=status, outcome=outcome, error_class=error_class, ended_at=now_utc())
        self.ended = True
        self.recorder._closed_run(self, event)

    def build(self, type: str, **fields: Any) -> StepEvent:
        """A validated step of this run (not yet recorded)."""
        unknown = fields.keys() - _STEP_FIELDS
        if unknown:
            raise TypeError(f"{type} step: unknown field(s) {', '.join(sorted(unknown))}")
        event_id = fields.get("event_id") or _new_id()
        fields["event_id"] = event_id
        if type == "tool_call" and not fields.get("tool_call_id"):
            fields["tool_call_id"] = event_id
        if fields.get("timestamp") is None:
            fields["timestamp"] = now_utc()
        if "parent_id" not in fields:
            fields["parent_id"] = _current_parent.get()
        for name in _JSON_FIELDS:
            if fields.get(name) is not None:
                fields[name] = _json_safe(fields[name])
        try:
            return StepEvent(session_id=self.id, type=type, **{k: v for k, v in fields.items() if v is not None})
        except ValidationError as exc:
            raise ValueError(f"{type} step: {describe_validation_error(exc)}") from None

    def record(self, type: str, **fields: Any) -> str:
        event = self.build(type, **fields)
        self.add(event)
        return event.event_id

    def add(self, item: StepEvent | AutoCall) -> None:
        """Queue a built step (or a decorated tool's call) in this run's order."""
        self.recorder._enqueue(self, item)

    def record_exception(self, exc: BaseException, **fields: Any) -> None:
        """An error step for `exc`, once: the innermost span or tool it passed through records it."""
        if getattr(exc, "_agent_replay_recorded", False):
            return
        self.error(exc, **fields)
        try:
            exc._agent_replay_recorded = True
        except AttributeError:  # exceptions with __slots__: may be recorded again further out
            pass


class Span:
    """A `span` step around its children. Written when it closes (duration known), under the seq
    it took when it opened, so it sorts before its children; `metadata` may be filled meanwhile."""

    def __init__(self, run: Session, name: str, fields: dict[str, Any]):
        self.run, self.name = run, name
        self.metadata: dict[str, Any] = dict(fields.pop("metadata", None) or {})
        self.event_id: str = fields.pop("event_id", None) or _new_id()
        self.fields = fields

    def __enter__(self):
        self.parent_id = self.fields.pop("parent_id", None) or _current_parent.get()
        self.started = now_utc()
        self._t0 = time.perf_counter()
        self._slot = self.run.recorder._reserve(self.run)
        self._token = _current_parent.set(self.event_id)
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc is not None:
            self.run.record_exception(exc)
        self.close("error" if exc is not None else "ok", type(exc).__name__ if exc is not None else None)
        return False

    def close(self, status: str, error_class: str | None) -> None:
        _current_parent.reset(self._token)
        event = self.run.build(
            "span", content=self.name, event_id=self.event_id, parent_id=self.parent_id, timestamp=self.started,
            duration_ms=(time.perf_counter() - self._t0) * 1000, status=status, error_class=error_class,
            metadata=self.metadata or None, **self.fields,
        )
        self.run.recorder._complete(self.run, self._slot, event)


class Recorder(_Steps):
    """Records runs into a database URL, or into the app's HTTP API (`https://…` with a token).

    With no URL: `AGENT_REPLAY_SERVER` (and `AGENT_REPLAY_TOKEN`) when set, else the database
    of `AGENT_REPLAY_DB_URL` or the default SQLite file. Thread-safe; flushed every
    `batch_size` steps or `flush_interval` seconds, on `flush()`, `close()` and at exit.
    """

    def __init__(self, url: str | None = None, *, token: str | None = None, spool_dir: str | None = None,
                 batch_size: int = 200, flush_interval: float = 1.0, call_timeout: float = 30.0, sink=None):
        from .sinks import DatabaseSink, HttpSink
        from .spool import Shipper, Spool, default_spool_dir

        if sink is None:
            url = url or os.environ.get("AGENT_REPLAY_SERVER") or config.database_url()
            if url.startswith(("http://", "https://")):
                sink = HttpSink(url, token or os.environ.get("AGENT_REPLAY_TOKEN"))
            else:
                sink = DatabaseSink(config.database_url(url))
        self.id = _new_id()
        self.call_timeout = call_timeout
        self.closed = False
        self._logger = None
        self._lock = threading.Lock()
        self._open: dict[str, Session] = {}
        self._calls: dict[str, tuple[Session, Held]] = {}
        self.spool = Spool(spool_dir or default_spool_dir(), sink.key)
        self._shipper = Shipper(sink, self.spool, batch_size=batch_size, interval=flush_interval,
                                before_send=self._release_expired)

    # ------------------------------------------------------------------ sessions

    def session(self, name: str | None = None, *, session_id: str | None = None, **fields: Any) -> Session:
        """Open a run now (agent_id, model, workflow, environment, agent_version, tags, metadata)."""
        sid = session_id or _new_id()
        if fields.get("metadata") is not None:
            fields["metadata"] = _json_safe(fields["metadata"])
        try:
            event = SessionEvent(session_id=sid, name=name, started_at=now_utc(), source="sdk", **fields)
        except ValidationError as exc:
            raise ValueError(f"session: {describe_validation_error(exc)}") from None
        run = Session(self, sid)
        with self._lock:
            self._open[sid] = run
            self._shipper.put([event])
        return run

    @property
    def current(self) -> Session | None:
        """The session of this context (`with recorder.session(...)`), else the only one open."""
        run = _current_run.get()
        if run is not None and run.recorder is self and not run.ended:
            return run
        with self._lock:
            runs = list(self._open.values())
        return runs[0] if len(runs) == 1 else None

    def run_for(self, session_id: str) -> Session:
        """The open run with this id, or a handle on a run opened elsewhere (the store numbers its steps)."""
        with self._lock:
            run = self._open.get(session_id)
        return run if run is not None else Session(self, session_id, numbered=False)

    def _run(self) -> Session:
        run = self.current
        if run is None:
            raise RuntimeError("no current session: record inside `with recorder.session(...)`, or on the session object")
        return run

    def _closed_run(self, run: Session, event: SessionEndEvent) -> None:
        with self._lock:
            self._open.pop(run.id, None)
            self._shipper.put([event])

    # ------------------------------------------------------------------ tools

    def tool(self, fn: Callable | None = None, *, name: str | None = None):
        """Decorator recording each call of a tool function (sync or async) in the current session:
        its arguments, result, duration, and exceptions (re-raised). Outside a session it only runs."""

        def decorate(fn: Callable) -> Callable:
            tool_name = name or fn.__name__
            signature = signature_of(fn)

            def begin(args: tuple, kwargs: dict) -> ToolCall:
                run = self.current
                return ToolCall(run, tool_name, call_arguments(signature, args, kwargs) if run else {}, auto=True)

            if inspect.iscoroutinefunction(fn):

                @functools.wraps(fn)
                async def async_wrapper(*args, **kwargs):
                    with begin(args, kwargs) as call:
                        return call.done(await fn(*args, **kwargs))

                return async_wrapper

            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                with begin(args, kwargs) as call:
                    return call.done(fn(*args, **kwargs))

            return wrapper

        return decorate(fn) if fn is not None else decorate

    def litellm_logger(self):
        """This recorder's litellm CustomLogger (one per recorder, removed from litellm on close):
        `litellm.callbacks = [recorder.litellm_logger()]`."""
        if self._logger is None:
            from .litellm_logger import ReplayLogger

            self._logger = ReplayLogger(self)
        return self._logger

    # ------------------------------------------------------------------ model calls (integrations)

    def call_started(self, run: Session, key: str) -> None:
        """Hold the place of a model call whose steps will come later (from a logging thread)."""
        if not run.order.numbered:
            return
        with self._lock:
            if key not in self._calls:
                self._calls[key] = (run, run.order.hold(key, _current_parent.get(), self.call_timeout))

    def call_finished(self, key: str, steps: Callable[[], list[dict]], run: Session | None) -> None:
        """Record a model call's steps (dicts of step fields) in the place `call_started` held,
        or, without one, in `run` now."""
        with self._lock:
            run, held = self._calls.pop(key, (run, None))
        if run is None:
            return
        parent = held.parent if held is not None else _current_parent.get()
        events = [run.build(fields.pop("type"), parent_id=parent, **fields) for fields in steps()]
        with self._lock:
            if held is not None:
                self._shipper.put(run.order.fill(held, events))
            else:
                self._shipper.put([ready for event in events for ready in run.order.add(event)])

    # ------------------------------------------------------------------ ordering (under the lock)

    def _enqueue(self, run: Session, item: StepEvent | AutoCall) -> None:
        with self._lock:
            self._shipper.put(run.order.add(item))

    def _reserve(self, run: Session) -> Reserved:
        with self._lock:
            return run.order.reserve()

    def _complete(self, run: Session, slot: Reserved, event: StepEvent) -> None:
        with self._lock:
            self._shipper.put(run.order.complete(slot, event))

    def _in_flight(self) -> bool:
        with self._lock:
            return any(not held.abandoned for _, held in self._calls.values())

    def _release_expired(self, *, expire_all: bool = False) -> None:
        """Let steps waiting behind model calls past their deadline go (all of them when closing)."""
        with self._lock:
            runs = {id(r): r for r in self._open.values()}
            runs.update({id(r): r for r, _ in self._calls.values()})
            for run in runs.values():
                if run.order.waiting:
                    self._shipper.put(run.order.release(expire_all=expire_all))
            self._calls = {key: (run, held) for key, (run, held) in self._calls.items() if not held.abandoned}

    # ------------------------------------------------------------------ delivery

    def flush(self) -> bool:
        """Deliver everything recorded so far; True when nothing is left undelivered (else it is spooled)."""
        return self._shipper.flush()

    def close(self, settle: float = 5.0) -> bool:
        """Wait up to `settle` seconds for model calls in flight, deliver, stop. True when all was delivered."""
        deadline = time.monotonic() + settle
        while self._in_flight() and time.monotonic() < deadline:
            time.sleep(0.01)
        if self._logger is not None:
            self._logger.detach()
        self.closed = True
        self._release_expired(expire_all=True)
        return self._shipper.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

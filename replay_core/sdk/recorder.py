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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from .. import config
from ..events import SessionEndEvent, SessionEvent, StepEvent, describe_validation_error, now_utc
from .handles import Run, current_parent, current_run, json_safe, new_id
from .session import Session, StepMethods
from .span import Span
from .step_order import AutoCall, Held, Reserved
from .tool_call import ToolCall, call_arguments, signature_of

if TYPE_CHECKING:  # imported on first use: it loads litellm
    from .litellm_logger import ReplayLogger

__all__ = ["Recorder", "Session", "Span"]


class Recorder(StepMethods):
    """Records runs into a database URL, or into the app's HTTP API (`https://…` with a token).

    With no URL: `AGENT_REPLAY_SERVER` (and `AGENT_REPLAY_TOKEN`) when set, else the database
    of `AGENT_REPLAY_DB_URL` or the default SQLite file. Thread-safe; flushed every
    `batch_size` steps or `flush_interval` seconds, on `flush()`, `close()` and at exit. A delivery over
    HTTP waits up to `http_timeout` seconds for the app's answer; what was not answered stays in the spool.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        token: str | None = None,
        spool_dir: str | None = None,
        batch_size: int = 200,
        flush_interval: float = 1.0,
        call_timeout: float = 30.0,
        http_timeout: float = 10.0,
        sink=None,
    ):
        from .sinks import DatabaseSink, HttpSink
        from .spool import Shipper, Spool, default_spool_dir

        if sink is None:
            url = url or os.environ.get("AGENT_REPLAY_SERVER") or config.database_url()
            if url.startswith(("http://", "https://")):
                sink = HttpSink(url, token or os.environ.get("AGENT_REPLAY_TOKEN"), timeout=http_timeout)
            else:
                sink = DatabaseSink(config.database_url(url))
        self.id = new_id()
        self.call_timeout = call_timeout
        self.closed = False
        self._logger: ReplayLogger | None = None
        self._lock = threading.Lock()
        self._open: dict[str, Session] = {}
        self._calls: dict[str, tuple[Run, Held]] = {}
        self._outside: dict[str, float] = {}  # calls started outside any run: their deadline (monotonic)
        self.spool = Spool(spool_dir or default_spool_dir(), sink.key)
        self._shipper = Shipper(
            sink, self.spool, batch_size=batch_size, interval=flush_interval, before_send=self._release_expired
        )

    # ------------------------------------------------------------------ sessions

    def session(
        self,
        name: str | None = None,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        thread_id: str | None = None,
        **fields: Any,
    ) -> Session:
        """Open a run now (agent_id, model, workflow, environment, agent_version, tags, metadata).

        `user_id`: who the run served (an end user or tenant); `thread_id`: the conversation it is
        one turn of. Analytics group cost and failures by them; a thread's runs read in order."""
        sid = session_id or new_id()
        fields.update({k: v for k, v in (("user_id", user_id), ("thread_id", thread_id)) if v is not None})
        if fields.get("metadata") is not None:
            fields["metadata"] = json_safe(fields["metadata"])
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
        run = current_run.get()
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

    def _closed_run(self, run: Run, event: SessionEndEvent) -> None:
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

    def call_started(self, run: Run | None, key: str) -> None:
        """Hold the place of a model call whose steps will come later (from a logging thread). The
        run is the one of the call's start: a call started outside any run stays out of the run
        opened before its steps come (litellm's thread pool runs the hook late)."""
        with self._lock:
            if run is None:
                self._outside[key] = time.monotonic() + self.call_timeout
            elif run.order.numbered and key not in self._calls:
                self._calls[key] = (run, run.order.hold(key, current_parent.get(), self.call_timeout))

    def call_finished(self, key: str, steps: Callable[[], list[dict]], run: Run | None) -> None:
        """Record a model call's steps (dicts of step fields) in the place `call_started` held, or
        nowhere for a call started outside any run; in `run` (the run now) for a call started in an
        unnumbered run or whose start was not seen."""
        with self._lock:
            if self._outside.pop(key, None) is not None:
                return
            run, held = self._calls.pop(key, (run, None))
        if run is None:
            return
        parent = held.parent if held is not None else current_parent.get()
        events = [run.build(fields.pop("type"), parent_id=parent, **fields) for fields in steps()]
        with self._lock:
            if held is not None:
                self._shipper.put(run.order.fill(held, events))
            else:
                self._shipper.put([ready for event in events for ready in run.order.add(event)])

    # ------------------------------------------------------------------ ordering (under the lock)

    def _enqueue(self, run: Run, item: StepEvent | AutoCall) -> None:
        with self._lock:
            self._shipper.put(run.order.add(item))

    def _deliver(self, run: Run, event) -> None:
        """An attachment event: no seq of its own, so it bypasses the run's order."""
        with self._lock:
            self._shipper.put([event])

    def _reserve(self, run: Run) -> Reserved:
        with self._lock:
            return run.order.reserve()

    def _complete(self, run: Run, slot: Reserved, event: StepEvent) -> None:
        with self._lock:
            self._shipper.put(run.order.complete(slot, event))

    def _in_flight(self) -> bool:
        with self._lock:
            return any(not held.abandoned for _, held in self._calls.values())

    def _release_expired(self, *, expire_all: bool = False) -> None:
        """Let steps waiting behind model calls past their deadline go (all of them when closing)."""
        with self._lock:
            runs: dict[int, Run] = {id(r): r for r in self._open.values()}
            runs.update({id(r): r for r, _ in self._calls.values()})
            for run in runs.values():
                if run.order.waiting:
                    self._shipper.put(run.order.release(expire_all=expire_all))
            self._calls = {key: (run, held) for key, (run, held) in self._calls.items() if not held.abandoned}
            now = time.monotonic()
            self._outside = {} if expire_all else {key: due for key, due in self._outside.items() if due > now}

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

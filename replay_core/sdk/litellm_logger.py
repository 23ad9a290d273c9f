"""litellm → Agent Replay: every chat completion becomes steps of a recorded run.

    recorder = Recorder("sqlite:///runs.db")
    litellm.callbacks = [recorder.litellm_logger()]
    with recorder.session("triage"):
        litellm.completion(model="gpt-4o", messages=[...])

A completion that asks for tools is a `think` step (the assistant's text, possibly
empty) followed by one `tool_call` step per call; one that answers without tools is a
`decision`. The first step carries the model, tokens, cost (unknown, not zero, when
litellm has no price for the model), latency and the request messages as context. A
failed call is an `error` step with litellm's error class. The run is the one named by
`metadata={"agent_replay_session": id}` on the call, else the recorder's current session;
calls outside any run are not recorded.

litellm runs sync hooks later on a thread pool and async ones on the event loop, so the
call's place in the run is taken when it starts (`log_pre_api_call`, in the caller's
thread) and its steps fill that place when they come. Importing this module imports
litellm (seconds); `replay_core.recorder` imports it only when asked for the logger.
"""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
import litellm
from litellm.integrations.custom_logger import CustomLogger

from ..ingest.formats.jsondoc import as_object, parse_arguments
from .handles import CallRecorder, Run

SESSION_KEY = "agent_replay_session"
CALL_TYPES = frozenset({"completion", "acompletion"})
log = logging.getLogger("agent_replay.recorder")


class ReplayLogger(CustomLogger):
    """The hooks keep litellm's exact parameter names: litellm calls them by keyword."""

    def __init__(self, recorder: CallRecorder):
        super().__init__()
        self.recorder = recorder
        # litellm drops a logger whose class and public str attributes equal one it holds:
        # this keeps the loggers of two recorders apart
        self.recorder_id = recorder.id

    def detach(self) -> None:
        """Leave every litellm callback list (the recorder is closing)."""
        litellm.logging_callback_manager.remove_callback_from_all_lists(self)

    def log_pre_api_call(self, model, messages, kwargs):
        self._guarded(self._started, kwargs)

    def log_success_event(self, kwargs, response_obj, start_time, end_time):
        self._guarded(self._finished, kwargs, False)

    def log_failure_event(self, kwargs, response_obj, start_time, end_time):
        self._guarded(self._finished, kwargs, True)

    async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
        self._guarded(self._finished, kwargs, False)

    async def async_log_failure_event(self, kwargs, response_obj, start_time, end_time):
        self._guarded(self._finished, kwargs, True)

    def _guarded(self, hook, *args) -> None:
        if self.recorder.closed:
            return
        try:
            hook(*args)
        except Exception:  # recording must never break the agent's model call
            log.exception("agent-replay: could not record a litellm call")

    def _run(self, kwargs: dict) -> Run | None:
        metadata = (kwargs.get("litellm_params") or {}).get("metadata") or {}
        session_id = metadata.get(SESSION_KEY)
        return self.recorder.run_for(str(session_id)) if session_id else self.recorder.current

    def _started(self, kwargs: dict) -> None:
        if kwargs.get("call_type") in CALL_TYPES and kwargs.get("litellm_call_id"):
            self.recorder.call_started(self._run(kwargs), kwargs["litellm_call_id"])

    def _finished(self, kwargs: dict, failed: bool) -> None:
        slo = kwargs.get("standard_logging_object") or {}
        if (slo.get("call_type") or kwargs.get("call_type")) not in CALL_TYPES:
            return
        build = (lambda: failure_steps(slo, kwargs)) if failed else (lambda: success_steps(slo, kwargs))
        self.recorder.call_finished(str(kwargs.get("litellm_call_id")), build, self._run(kwargs))


def _when(epoch: Any) -> datetime | None:
    return datetime.fromtimestamp(epoch, UTC) if isinstance(epoch, int | float) and epoch > 0 else None


def _common(slo: dict, kwargs: dict) -> dict[str, Any]:
    start, end = _when(slo.get("startTime")), _when(slo.get("endTime"))
    model = (  # the model string as the caller wrote it ("openai/fake"), which litellm keeps in different places
        (slo.get("hidden_params") or {}).get("litellm_model_name")
        or (kwargs.get("agentic_loop_params") or {}).get("model")
        or slo.get("model")
        or kwargs.get("model")
    )
    return {
        "model": model,
        "timestamp": start,
        "duration_ms": (end - start).total_seconds() * 1000 if start and end and end >= start else None,
        "context": slo.get("messages") or kwargs.get("messages"),
    }


def _present(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v not in (None, "", {}, [], False)}


def success_steps(slo: dict, kwargs: dict) -> list[dict]:
    """A `think` + `tool_call`s, or a `decision`, from a successful completion."""
    response = as_object(slo.get("response"))
    choice = (response.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    calls = message.get("tool_calls") or []
    common = _common(slo, kwargs)
    cost = None if slo.get("response_cost_failure_debug_info") else slo.get("response_cost")
    first = {
        "type": "think" if calls else "decision",
        "content": message.get("content"),
        **common,
        "tokens_in": slo.get("prompt_tokens"),
        "tokens_out": slo.get("completion_tokens"),
        "cost_usd": cost,
        "metadata": _present(
            litellm_call_id=kwargs.get("litellm_call_id"),
            finish_reason=choice.get("finish_reason"),
            response_id=response.get("id"),
            provider=slo.get("custom_llm_provider"),
            model_parameters=slo.get("model_parameters"),
            cache_hit=slo.get("cache_hit"),
        ),
    }
    steps = [first]
    for call in calls:
        function = call.get("function") or {}
        steps.append(
            {
                "type": "tool_call",
                "tool_name": function.get("name"),
                "tool_args": parse_arguments(function.get("arguments")),
                "tool_call_id": call.get("id"),
                "model": common["model"],
                "timestamp": common["timestamp"],
            }
        )
    return steps


def failure_steps(slo: dict, kwargs: dict) -> list[dict]:
    """An `error` step with litellm's error class, from a failed completion."""
    info = slo.get("error_information") or {}
    exc = kwargs.get("exception")
    error_class = info.get("error_class") or (type(exc).__name__ if exc is not None else "Exception")
    return [
        {
            "type": "error",
            "content": slo.get("error_str") or (str(exc) if exc is not None else error_class),
            "error_class": error_class,
            "status": "error",
            **_common(slo, kwargs),
            "metadata": _present(
                litellm_call_id=kwargs.get("litellm_call_id"),
                error_code=info.get("error_code"),
                provider=info.get("llm_provider") or slo.get("custom_llm_provider"),
            ),
        }
    ]

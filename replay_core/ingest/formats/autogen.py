"""AutoGen AgentChat runs: a `TaskResult` dumped as JSON (`{"messages": [...], "stop_reason": ...}`), a bare
list of its messages (`[m.dump() for m in result.messages]`), a team's `await team.save_state()`
(`{"type": "TeamState", "agent_states": {...}}`, whose group chat manager keeps the run's `message_thread`),
or an agent's own (`AssistantAgentState`: its model context, `llm_context.messages`).

Each message has a `type`, its `source` (the agent, or `user`), `created_at` and, for a model's output,
`models_usage` (`prompt_tokens`/`completion_tokens`, on the message's first step). By type: `TextMessage` and
`MultiModalMessage` → input from `user` (or as the first message, the task), else decision;
`ThoughtEvent` → think; `ToolCallRequestEvent` → a tool_call per call; `ToolCallExecutionEvent` → a
tool_result per result (`is_error` → error); `ToolCallSummaryMessage`, `HandoffMessage`, `StopMessage` →
decision (the agent's reply); `CodeGenerationEvent` → tool_call of `code_execution`, `CodeExecutionEvent`
→ its tool_result (exit code ≠ 0 → error). Streaming chunks, speaker selections, memory queries and
input requests are accounted as ignored. AgentChat does not write the model's name: runs have none.

A TaskResult exists only once the team stopped on its termination condition, so its run succeeded with the
last reply as outcome (the `stop_reason` kept); a message list or a saved state says nothing of how the run
ended. In a team state each agent's `llm_context` repeats the thread: ignored, named. An agent's own state is
read from that context (`SystemMessage`/`UserMessage` → input, `AssistantMessage` → its `thought` as think,
then decision or a tool_call per call, `FunctionExecutionResultMessage` → tool_results), which holds no
times, tokens or ids. One file is one run.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from .jsondoc import as_array, as_object, has_key, load_json, parse_arguments, starts_json
from .reader import BadRecord, Event, Ignored, Records, kind_of
from .runs import Run, parse_time, stable_id

TEXT = ("TextMessage", "MultiModalMessage")
REPLIES = ("ToolCallSummaryMessage", "HandoffMessage", "StopMessage")
STEPS = (*TEXT, *REPLIES, "ThoughtEvent", "ToolCallRequestEvent", "ToolCallExecutionEvent")
CODE = ("CodeGenerationEvent", "CodeExecutionEvent")
SKIPPED = (
    "ModelClientStreamingChunkEvent",
    "SelectSpeakerEvent",
    "SelectorEvent",
    "MemoryQueryEvent",
    "UserInputRequestedEvent",
)
CONTEXT = ("SystemMessage", "UserMessage", "AssistantMessage", "FunctionExecutionResultMessage")
KNOWN = frozenset((*STEPS, *CODE, *SKIPPED, *CONTEXT, "StructuredMessage"))
_OWN_KEYS = frozenset({"id", "source", "models_usage", "metadata", "created_at", "content", "type"})


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # a MultiModalMessage: text and images; images are counted, not kept
        return "\n".join(v for v in value if isinstance(v, str))
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _is_message(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("type"), str)


class _Thread:
    """One run's messages → steps."""

    def __init__(self, run: Run):
        self.run = run

    def message(self, msg: dict, i: int, where: str) -> Ignored | None:
        kind = msg["type"]
        if kind not in KNOWN:
            return Ignored(where, f"type={kind}"[:60], known=False)
        if kind in SKIPPED:
            return Ignored(where, f"type={kind}")
        if kind in CONTEXT:
            self.context(msg, f"m{i}", kind, where)
            return None
        source = msg.get("source") if isinstance(msg.get("source"), str) else None
        usage = as_object(msg.get("models_usage"))
        key = str(msg.get("id") or f"m{i}")
        extra = {k: v for k, v in msg.items() if k not in _OWN_KEYS and k not in ("tool_calls", "results")}
        own = as_object(msg.get("metadata"))
        meta = {**extra, **({"message_metadata": own} if own else {})}
        first: dict[str, Any] = {
            "tokens_in": _count(usage.get("prompt_tokens")),
            "tokens_out": _count(usage.get("completion_tokens")),
        }
        common: dict[str, Any] = {"where": where, "timestamp": parse_time(msg.get("created_at")), "agent_id": source}
        content = msg.get("content")
        if isinstance(content, list) and any(not isinstance(v, str) for v in content) and kind == "MultiModalMessage":
            meta["images"] = sum(1 for v in content if not isinstance(v, str))
        if kind in TEXT or kind == "StructuredMessage":
            said = source == "user" or (not usage and kind in TEXT and i == 0)
            step_type = "input" if said else "decision"
            self.run.step(
                key, step_type, content=_text(content), metadata={"role": "user" if said else None, **meta}, **first, **common
            )
        elif kind in REPLIES or kind == "ThoughtEvent":
            step_type = "think" if kind == "ThoughtEvent" else "decision"
            self.run.step(key, step_type, content=_text(content), metadata={"message_type": kind, **meta}, **first, **common)
        elif kind == "ToolCallRequestEvent":
            for j, call in enumerate(as_array(content)):
                call = as_object(call)
                self.run.step(
                    f"{key}.{j}",
                    "tool_call",
                    tool_name=call.get("name"),
                    tool_args=parse_arguments(call.get("arguments")),
                    tool_call_id=call.get("id"),
                    metadata=meta if j == 0 else None,
                    **first,
                    **common,
                )
                first = {}
        elif kind == "ToolCallExecutionEvent":
            self.results(key, content, common, meta)
        else:
            self.code(msg, key, kind, meta, first, common)
        return None

    def results(self, key: str, content: Any, common: dict[str, Any], meta: dict | None = None) -> None:
        """Tool results, one step each (a result the tool raised is an error step); `meta` goes on the first."""
        for j, result in enumerate(map(as_object, as_array(content))):
            failed = result.get("is_error") is True
            self.run.step(
                f"{key}.{j}",
                "tool_result",
                content=_text(result.get("content")),
                tool_name=result.get("name"),
                tool_call_id=result.get("call_id"),
                status="error" if failed else "ok",
                error_class="tool_error" if failed else None,
                metadata=meta if j == 0 else None,
                **common,
            )

    def context(self, msg: dict, key: str, kind: str, where: str) -> None:
        """A message of an agent's model context (its save_state()): no ids, times or tokens."""
        source = msg.get("source") if isinstance(msg.get("source"), str) else None
        common: dict[str, Any] = {"where": where, "agent_id": source if kind == "AssistantMessage" else None}
        content = msg.get("content")
        if kind in ("SystemMessage", "UserMessage"):
            role = "system" if kind == "SystemMessage" else "user"
            self.run.step(key, "input", content=_text(content), metadata={"role": role, "source": source}, **common)
        elif kind == "FunctionExecutionResultMessage":
            self.results(key, content, common)
        else:
            calls = [as_object(c) for c in content] if isinstance(content, list) else []
            if isinstance(msg.get("thought"), str) and msg["thought"]:
                self.run.step(f"{key}.thought", "think", content=msg["thought"], **common)
            if not calls:
                self.run.step(key, "decision", content=_text(content), **common)
            for j, call in enumerate(calls):
                self.run.step(
                    f"{key}.{j}",
                    "tool_call",
                    tool_name=call.get("name"),
                    tool_args=parse_arguments(call.get("arguments")),
                    tool_call_id=call.get("id"),
                    **common,
                )

    def code(self, msg: dict, key: str, kind: str, meta: dict, first: dict, common: dict) -> None:
        """A CodeExecutorAgent's generated code (a call) and its execution (the call's result)."""
        if kind == "CodeGenerationEvent":
            blocks = [as_object(b) for b in as_array(msg.get("code_blocks"))]
            args = [{"language": b.get("language"), "code": b.get("code")} for b in blocks]
            meta = {k: v for k, v in meta.items() if k != "code_blocks"}
            self.run.step(
                key,
                "tool_call",
                tool_name="code_execution",
                tool_args=args,
                content=_text(msg.get("content")),
                metadata=meta,
                **first,
                **common,
            )
            return
        result = as_object(msg.get("result"))
        exit_code = result.get("exit_code")
        failed = isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0
        meta = {k: v for k, v in meta.items() if k != "result"} | {"exit_code": exit_code}
        self.run.step(
            key,
            "tool_result",
            tool_name="code_execution",
            content=_text(result.get("output", msg.get("content"))),
            status="error" if failed else "ok",
            error_class=f"exit_code_{exit_code}" if failed else None,
            metadata=meta,
            **common,
        )


def _shape(doc: Any) -> tuple[str, list, dict] | None:
    """(what the file is, its messages, the rest of it), or None when it is no AgentChat file."""
    if (
        isinstance(doc, list)
        and doc
        and all(_is_message(m) and "source" in m for m in doc)
        and any(m["type"] in KNOWN for m in doc)
    ):
        return "messages", doc, {}
    if not isinstance(doc, dict):
        return None
    messages = doc.get("messages")
    if isinstance(messages, list) and "stop_reason" in doc:
        return "task_result", messages, doc
    context = as_object(doc.get("llm_context")).get("messages")
    if isinstance(doc.get("type"), str) and doc["type"].endswith("AgentState") and isinstance(context, list):
        return "agent_state", context, doc
    states = doc.get("agent_states")
    if doc.get("type") == "TeamState" and isinstance(states, dict):
        threads = [as_array(as_object(s).get("message_thread")) for s in states.values()]
        return "team_state", next((t for t in threads if t), []), doc
    return None


class AutoGenFormat:
    name = "autogen"
    label = "AutoGen AgentChat TaskResult, message list or team save_state() JSON"
    unwatchable = "one JSON document per run, rewritten whole"  # (watch refuses it)

    def sniff(self, head: bytes, filename: str) -> bool:
        if not starts_json(head):
            return False
        if has_key(head, "type", "TeamState") or has_key(head, "type", "AssistantAgentState"):
            return True
        return has_key(head, "source") and has_key(head, "models_usage")

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored | Records]:
        doc = load_json(data, filename)
        shape = _shape(doc)
        if shape is None:
            yield BadRecord(filename, "expected an AutoGen AgentChat TaskResult, message list or TeamState")
            return
        what, messages, rest = shape
        states = {n: as_object(s) for n, s in as_object(rest.get("agent_states")).items()} if what == "team_state" else {}
        others = {n: s for n, s in states.items() if not isinstance(s.get("message_thread"), list)}
        yield Records(len(messages) + len(others), "messages and agent states" if others else "messages")
        valid = [m for m in messages if _is_message(m)]
        times = [t for m in valid if (t := parse_time(m.get("created_at")))]
        sources = [m["source"] for m in valid if isinstance(m.get("source"), str) and m["source"] != "user"]
        info: dict[str, Any] = {"file": what, "agents": sorted(set(sources) | set(others)) or None}
        if what == "task_result":
            info["stop_reason"] = rest.get("stop_reason")
        elif states:
            info["team_state"] = {n: s.get("type") for n, s in states.items()}
        run = Run(
            stable_id(filename, data),
            filename,
            agent_id=sources[0] if sources else None,
            metadata={"autogen": {k: v for k, v in info.items() if v is not None}},
            started_at=min(times, default=None),
            ended_at=max(times, default=None),
        )
        thread = _Thread(run)
        path = {"task_result": "messages", "team_state": "message_thread", "agent_state": "llm_context.messages"}.get(what, "")
        for i, msg in enumerate(messages):
            where = f"{filename}:{path}[{i}]"
            ignored = thread.message(msg, i, where) if _is_message(msg) else Ignored(where, kind_of(msg), known=False)
            if ignored:
                yield ignored
        for name, state in others.items():
            yield Ignored(f"{filename}:agent_states.{name}", f"agent state {state.get('type') or ''} (the thread again)".strip())
        said = [s.content for s in run.steps if s.type == "input" and s.content]
        if said:
            run.session["name"] = said[0].strip().split("\n", 1)[0][:200]
        if what == "task_result":
            replies = [s.content for s in run.steps if s.type == "decision"]
            run.finish("succeeded", outcome=replies[-1] if replies else None, ended_at=max(times, default=None))
        yield from run.events()


FORMAT = AutoGenFormat()

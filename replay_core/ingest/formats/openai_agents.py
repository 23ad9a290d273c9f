"""OpenAI Agents SDK runs as apps save them: `RunState.to_json()` (a run to resume, human in the loop, or
`result.to_state()` of a finished one), a `RunResult`'s fields (`input`, `new_items`, `raw_responses`,
`final_output`, `last_agent`) and `result.to_input_list()` (the conversation, as Responses API items).

A state holds the run so far: `original_input`, the model responses (`model_responses`, with usage),
the items the run generated (`generated_items`: tool calls, their outputs, messages, reasoning,
handoffs) and where it stands (`current_step`). Items become steps in order — `message_output_item`
→ decision, `reasoning_item` → think, `tool_call_item` → tool_call, `tool_call_output_item` →
tool_result, handoffs → span; each model response's usage and model go on the first item it produced.
A state paused on `next_step_interruption` holds calls awaiting approval (`tool_approval_item`): each is a
`blocked` step saying so, and the run stays `running` (paused, not failed); a state with no step left
(`current_step` null) whose last item is a message ended with that message, as a RunResult with a
`final_output` did. A RunResult's `input`, `new_items` and `raw_responses` read as a state's
`original_input`, `generated_items` and `model_responses`.

An input list holds no usage and no times: user messages → input, `function_call` → tool_call,
`function_call_output` → tool_result, assistant `message` → decision, `reasoning` → think (model from
`provider_data.model`); it says nothing of how the run ended (`unknown`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from .chat_messages import text_of
from .jsondoc import as_array, as_object, has_key, load_json, parse_arguments, starts_json
from .reader import BadRecord, Event, Ignored, Records
from .runs import Run, stable_id

MODEL_ITEMS = ("message_output_item", "reasoning_item", "tool_call_item", "handoff_call_item")


def _message_text(raw: dict) -> str:
    parts = as_array(raw.get("content"))
    texts = [as_object(p).get("text") or as_object(p).get("refusal") for p in parts]
    return "\n".join(t for t in texts if isinstance(t, str)) if parts else text_of(raw.get("content")) or ""


class _Responses:
    """Model responses handed out in order, one per run of the items it produced."""

    def __init__(self, responses: list):
        self.queue = [(as_object(r), len(as_array(as_object(r).get("output")))) for r in responses]
        self.left = 0

    def next_fields(self) -> dict[str, Any]:
        if self.left > 0:
            self.left -= 1
            return {}
        if not self.queue:
            return {}
        response, count = self.queue.pop(0)
        self.left = max(count - 1, 0)
        usage = as_object(response.get("usage"))
        model = next(
            (as_object(o.get("provider_data")).get("model") for o in as_array(response.get("output")) if isinstance(o, dict)),
            None,
        )
        return {"tokens_in": usage.get("input_tokens"), "tokens_out": usage.get("output_tokens"), "model": model}


def _input_steps(run: Run, original: Any) -> None:
    if isinstance(original, str):
        run.step("input", "input", content=original, metadata={"role": "user"})
        return
    for i, item in enumerate(as_array(original)):
        item = as_object(item)
        run.step(f"input.{i}", "input", content=_message_text(item), metadata={"role": item.get("role") or item.get("type")})


def _item_step(run: Run, item: dict, key: str, where: str, fields: dict) -> Ignored | None:
    kind, raw = item.get("type"), as_object(item.get("raw_item"))
    agent = as_object(item.get("agent")).get("name")
    common = {"where": where, "agent_id": agent, **fields}
    if kind == "message_output_item":
        run.step(key, "decision", content=_message_text(raw), **common)
    elif kind == "reasoning_item":
        summary = "\n".join(str(as_object(s).get("text", "")) for s in as_array(raw.get("summary")))
        run.step(key, "think", content=summary, **common)
    elif kind == "tool_call_item":
        name = raw.get("name") or item.get("tool_name")
        args = parse_arguments(raw.get("arguments")) if "arguments" in raw else raw.get("action")
        run.step(key, "tool_call", tool_name=name, tool_args=args, tool_call_id=raw.get("call_id"), **common)
    elif kind == "tool_call_output_item":
        output = item.get("output", raw.get("output"))
        content = output if isinstance(output, str) else orjson.dumps(output).decode()
        run.step(key, "tool_result", content=content, tool_call_id=raw.get("call_id"), **common)
    elif kind in ("handoff_call_item", "handoff_output_item"):
        target = as_object(item.get("target_agent")).get("name") or raw.get("name")
        run.step(key, "span", content=f"handoff to {target}" if target else kind, metadata={"handoff": kind}, **common)
    elif kind == "tool_approval_item":
        name = raw.get("name") or item.get("tool_name")
        run.step(
            key,
            "observation",
            status="blocked",
            content=f"awaiting approval: {name}({raw.get('arguments', '')})",
            tool_name=name,
            tool_call_id=raw.get("call_id"),
            metadata={"pending_approval": True},
            **common,
        )
    else:
        return Ignored(where, f"item type={kind}"[:60], known=False)
    return None


class OpenAIAgentsFormat:
    name = "openai_agents"
    label = "OpenAI Agents SDK run state (RunState.to_json())"
    ends_runs = False  # a saved state is often a paused run: it says itself whether the run ended
    unwatchable = "one JSON document per run, rewritten whole"  # (watch refuses it)

    def sniff(self, head: bytes, filename: str) -> bool:
        if not starts_json(head):
            return False
        state = has_key(head, "$schemaVersion") and has_key(head, "current_agent")
        return state or (has_key(head, "new_items") and has_key(head, "raw_responses"))

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored | Records]:
        doc = load_json(data, filename)
        result = isinstance(doc, dict) and isinstance(doc.get("new_items"), list)  # a RunResult's fields
        if not isinstance(doc, dict) or not (result or isinstance(doc.get("generated_items"), list)):
            yield BadRecord(filename, "expected an OpenAI Agents RunState or RunResult: an object with generated_items")
            return
        items = doc["new_items"] if result else doc["generated_items"]
        step = as_object(doc.get("current_step"))
        pending = [as_object(i) for i in as_array(as_object(step.get("data")).get("interruptions"))]
        yield Records(1 + len(items) + len([p for p in pending if p not in items]), "input and run items")
        original = doc.get("input" if result else "original_input")
        agent = doc.get("last_agent") if result else doc.get("current_agent")
        run = Run(
            stable_id(filename, data),
            filename,
            name=original[:200] if isinstance(original, str) else None,
            agent_id=agent if isinstance(agent, str) else as_object(agent).get("name"),
            metadata={"openai_agents": {k: doc.get(k) for k in ("$schemaVersion", "current_turn", "max_turns") if k in doc}},
        )
        _input_steps(run, original)
        responses = _Responses(as_array(doc.get("raw_responses" if result else "model_responses")))
        for i, item in enumerate(items):
            item = as_object(item)
            fields = responses.next_fields() if item.get("type") in MODEL_ITEMS else {}
            where = f"{filename}:{'new_items' if result else 'generated_items'}[{i}]"
            ignored = _item_step(run, item, f"item{i}", where, fields)
            if ignored:
                yield ignored
        for i, item in enumerate(p for p in pending if p not in items):
            _item_step(run, item, f"pending{i}", f"{filename}:current_step.interruptions[{i}]", {})
        run.session["model"] = next((s.model for s in run.steps if s.model), None)
        last = as_object(items[-1]) if items else {}
        if result and doc.get("final_output") is not None:
            output = doc["final_output"]
            run.finish("succeeded", outcome=output if isinstance(output, str) else orjson.dumps(output).decode())
        elif step.get("type") == "next_step_interruption" or any(s.status == "blocked" for s in run.steps):
            run.session["status"] = "running"  # paused: waiting for a person's approval
        elif step.get("type") == "next_step_run_again":
            run.session["status"] = "running"  # saved between two turns
        elif not step and not result and last.get("type") == "message_output_item":
            run.finish("succeeded", outcome=_message_text(as_object(last.get("raw_item"))))  # no step left: it ended
        yield from run.events()


def _list_item(run: Run, item: dict, key: str, where: str) -> Ignored | None:
    """One item of an input list (Responses API shape) as its step."""
    kind, role = item.get("type"), item.get("role")
    model = as_object(item.get("provider_data")).get("model")
    common = {"where": where, "model": model if isinstance(model, str) else None}
    if kind in (None, "message") and role in ("user", "system", "developer"):
        run.step(key, "input", content=_message_text(item), metadata={"role": role}, where=where)
    elif kind in (None, "message") and role == "assistant":
        run.step(key, "decision", content=_message_text(item), **common)
    elif kind == "function_call":
        args = parse_arguments(item.get("arguments"))
        run.step(key, "tool_call", tool_name=item.get("name"), tool_args=args, tool_call_id=item.get("call_id"), **common)
    elif kind == "function_call_output":
        output = item.get("output")
        content = output if isinstance(output, str) else orjson.dumps(output).decode()
        run.step(key, "tool_result", content=content, tool_call_id=item.get("call_id"), where=where)
    elif kind == "reasoning":
        summary = "\n".join(str(as_object(s).get("text", "")) for s in as_array(item.get("summary")))
        run.step(key, "think", content=summary, **common)
    else:
        return Ignored(where, f"item type={kind or role}"[:60], known=False)
    return None


class OpenAIInputListFormat:
    name = "openai_input_list"
    label = "OpenAI Agents SDK input list (result.to_input_list(): Responses API items)"
    unwatchable = "one JSON document per conversation, rewritten whole"  # (watch refuses it)

    def sniff(self, head: bytes, filename: str) -> bool:
        first = head[:65536]
        if not first.lstrip().startswith(b"["):
            return False
        calls = has_key(first, "type", "function_call") or has_key(first, "type", "function_call_output")
        return calls and has_key(first, "call_id") or has_key(first, "type", "output_text")

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored | Records]:
        doc = load_json(data, filename)
        if not isinstance(doc, list):
            yield BadRecord(filename, "expected a list of Responses API items (result.to_input_list())")
            return
        first = next((i.get("content") for i in doc if isinstance(i, dict) and i.get("role") == "user"), None)
        run = Run(stable_id(filename, data), filename, name=first[:200] if isinstance(first, str) else None)
        names: dict[Any, Any] = {}
        for i, item in enumerate(doc):
            where = f"{filename}:[{i}]"
            if not isinstance(item, dict):
                yield BadRecord(where, "expected an item object")
                continue
            if item.get("type") == "function_call":
                names[item.get("call_id")] = item.get("name")
            ignored = _list_item(run, item, f"item{i}", where)
            if ignored:
                yield ignored
        for step in run.steps:
            if step.type == "tool_result" and step.tool_name is None and isinstance(names.get(step.tool_call_id), str):
                step.tool_name = names[step.tool_call_id]
        run.session["model"] = next((s.model for s in run.steps if s.model), None)
        yield from run.events()


FORMAT = OpenAIAgentsFormat()
INPUT_LIST = OpenAIInputListFormat()

"""smolagents runs: benchmark answer files, agent memory dumps, decentralized message logs.

- Benchmark JSON Lines (`examples/smolagents_benchmark`): one run a line — `question`,
  `answer`, `model_id`, `token_counts`, `intermediate_steps` (chat messages with roles
  system/user/assistant/tool-call/tool-response, or memory steps), and `agent_error`
  for runs that raised. A tool-response smolagents wrote as `Error:\\n…` (how it
  serialises a step's error) is a failed tool result.
- Memory dumps (`agent.memory.get_full_steps()`): task, planning, action steps with
  `tool_calls`, `observations`, `error`, `token_usage`, `timing`, and the final answer.
- Decentralized runs (`messages.jsonl` of a message bus): the task is the input, agents'
  messages are observations by their sender, polls and votes keep their body in
  metadata, `final_answer` is the decision.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from .chat_messages import Conversation, text_of
from .jsondoc import as_object, has_key, is_json_lines, json_lines, load_json, parse_arguments, starts_json
from .reader import BadRecord, Event
from .runs import Run, compact, parse_time, stable_id

FINAL_TOOL = "final_answer"


def _message_text(content: Any) -> str:
    return text_of(content) or ""


def _calls_of(text: str) -> list[dict]:
    """The tool calls of a 'Calling tools:\\n[...]' message (a Python repr of a list)."""
    body = text.split("\n", 1)[1] if text.startswith("Calling tools:") else text
    try:
        calls = ast.literal_eval(body.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return []
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


class _Mapper:
    """Steps of one smolagents run, from its messages or its memory steps."""

    def __init__(self, run: Run):
        self.run = run
        self.conv = Conversation(run)
        self.final: str | None = None

    def call(self, key: str, call: dict, common: dict, first: dict | None = None) -> None:
        fn = inner if isinstance(inner := call.get("function"), dict) else call
        name, args, call_id = fn.get("name"), parse_arguments(fn.get("arguments")), call.get("id")
        if name == FINAL_TOOL:
            answer = args.get("answer") if isinstance(args, dict) and "answer" in args else args
            self.final = answer if isinstance(answer, str) else text_of(answer) if isinstance(answer, list) else str(answer)
            if call_id:  # as Conversation.call keeps them: only calls a result can name
                self.conv.calls[call_id] = name
            self.conv.add(
                key,
                "decision",
                {**common, "content": self.final, "tool_name": name, "tool_args": args, "tool_call_id": call_id},
                first,
            )
        else:
            self.conv.call(key, name, args, call_id, common, first)

    def answer(self, key: str, text: str, error: bool, common: dict, error_class: str | None = None) -> None:
        """A tool response: the result of the open call, or an error step when no call is open."""
        call_id = next(iter(self.conv.calls), None)
        if error and call_id is None:
            self.run.step(key, "error", content=text, status="error", error_class=error_class or "AgentError", **common)
            return
        self.conv.result(key, call_id, text, error, common, None)
        if error and self.run.steps and error_class:
            self.run.steps[-1] = self.run.steps[-1].model_copy(update={"error_class": error_class})

    def messages(self, messages: list, where: str) -> None:
        for i, msg in enumerate(messages):
            if not isinstance(msg, dict):
                self.run.errors.append(BadRecord(f"{where}[{i}]", "expected a chat message object"))
                continue
            role, text = msg.get("role"), _message_text(msg.get("content"))
            if role == "tool-call":
                for j, call in enumerate(_calls_of(text) or msg.get("tool_calls") or []):
                    self.call(f"m{i}.{j}", call, {})
            elif role == "tool-response":
                error = text.startswith("Error:")
                body = text.split("\n", 1)[1] if text.startswith(("Error:\n", "Observation:\n")) else text
                self.answer(f"m{i}", body, error, {})
            elif role == "assistant":
                usage = msg.get("token_usage") or {}
                self.run.step(
                    f"m{i}",
                    "think",
                    content=text,
                    tokens_in=usage.get("input_tokens"),
                    tokens_out=usage.get("output_tokens"),
                    metadata=compact({"raw": msg.get("raw")}),
                )
                for j, call in enumerate(msg.get("tool_calls") or []):
                    self.call(f"m{i}.call{j}", call, {})
            else:
                self.run.step(f"m{i}", "input", content=text, metadata={"role": role})

    def memory(self, steps: list, where: str) -> None:
        for i, step in enumerate(steps):
            if not isinstance(step, dict):
                self.run.errors.append(BadRecord(f"{where}[{i}]", "expected a memory step object"))
                continue
            key = f"s{step.get('step_number', i)}" if "step_number" in step else f"s{i}"
            timing = own if isinstance(own := step.get("timing"), dict) else step
            when = parse_time(timing.get("start_time"))
            duration = timing.get("duration")
            usage = step.get("token_usage") or {}
            tokens = {
                "tokens_in": usage.get("input_tokens", step.get("input_token_count")),
                "tokens_out": usage.get("output_tokens", step.get("output_token_count")),
            }
            common = {"timestamp": when}
            if "system_prompt" in step:
                self.run.step(key, "input", content=step.get("system_prompt") or "", metadata={"role": "system"})
            elif "task" in step:
                self.run.step(
                    key,
                    "input",
                    content=step.get("task") or "",
                    metadata={"role": "user", "task_images": step.get("task_images")},
                )
            elif "plan" in step:
                self.run.step(
                    key,
                    "think",
                    content=step.get("plan") or "",
                    timestamp=when,
                    context=step.get("model_input_messages"),
                    duration_ms=duration * 1000 if isinstance(duration, int | float) else None,
                    metadata={"planning": True},
                    **tokens,
                )
            elif "step_number" in step:
                self._action(key, step, common, tokens, duration)
            elif "output" in step and self.final is None:
                self.final = text_of(step["output"]) if isinstance(step["output"], list) else str(step["output"])
                self.run.step(key, "decision", content=self.final)

    def _action(self, key: str, step: dict, common: dict, tokens: dict, duration: Any) -> None:
        output = step.get("model_output") or step.get("llm_output")
        rest = {k: v for k, v in step.items() if k in ("code_action", "observations_images", "model_output_message")}
        self.run.step(
            f"{key}.think",
            "think",
            content=text_of(output) if output is not None else "",
            context=step.get("model_input_messages"),
            duration_ms=duration * 1000 if isinstance(duration, int | float) else None,
            metadata=rest,
            **common,
            **tokens,
        )
        for j, call in enumerate(step.get("tool_calls") or []):
            if isinstance(call, dict):
                self.call(f"{key}.call{j}", call, common)
        error = step.get("error")
        if step.get("observations") is not None or error:
            text = step.get("observations") or ""
            error_class = None
            if error:
                error_class = error.get("type") if isinstance(error, dict) else "AgentError"
                message = error.get("message") if isinstance(error, dict) else str(error)
                text = f"{text}\n{message}".strip()
            self.answer(f"{key}.observation", text, bool(error), common, error_class)
        if step.get("is_final_answer") and self.final is None:
            self.final = str(step.get("action_output"))
            self.run.step(f"{key}.final", "decision", content=self.final, **common)


def _benchmark_run(rec: dict, where: str, session_id: str) -> Run:
    meta = {
        k: v
        for k, v in rec.items()
        if k not in ("intermediate_steps", "question", "model_id", "start_time", "answer", "agent_error", "token_counts")
    }
    counts = as_object(rec.get("token_counts"))
    meta.update(
        {"tokens_in": counts.get("input_tokens"), "tokens_out": counts.get("output_tokens"), "token_counts": counts or None}
    )
    question = str(rec.get("question") or "")
    started = parse_time(rec.get("start_time"))
    tags = [str(t) for t in (rec.get("source"), rec.get("agent_action_type")) if t]
    run = Run(
        session_id,
        where,
        name=question[:200] or None,
        model=rec.get("model_id"),
        started_at=started,
        agent_id=f"smolagents-{rec['agent_action_type']}" if rec.get("agent_action_type") else "smolagents",
        workflow=rec.get("source"),
        tags=tags or None,
        metadata=compact(meta),
    )
    mapper = _Mapper(run)
    steps = rec.get("intermediate_steps")
    if isinstance(steps, list) and steps and isinstance(steps[0], dict) and "role" in steps[0]:
        mapper.messages(steps, f"{where}:intermediate_steps")
    elif isinstance(steps, list):
        if question:
            run.step("question", "input", content=question, metadata={"role": "user"})
        mapper.memory(steps, f"{where}:intermediate_steps")
    elif isinstance(steps, str) and steps:
        run.step("question", "input", content=question, metadata={"role": "user"})
        run.step("steps", "observation", content=steps, metadata={"unparsed_memory": True})
    error = rec.get("agent_error")
    answer = rec.get("answer")
    ended = started  # end_time is written in the machine's local time without a zone: kept in metadata only
    if error:
        error_class = error.get("error_type", "AgentError") if isinstance(error, dict) else "AgentError"
        message = error.get("message") if isinstance(error, dict) else str(error)
        run.step("agent_error", "error", content=message, status="error", error_class=error_class)
        run.finish("failed", outcome=message, error_class=error_class, ended_at=ended)
    elif answer is not None:
        run.finish("succeeded", outcome=str(answer), ended_at=ended)
    return run


def _bus_run(records: list[tuple[int, dict]], data: bytes, filename: str) -> Run:
    """A decentralized run's message bus: one session, each agent speaking as itself."""
    run = Run(stable_id(filename, data), filename, agent_id="smolagents-decentralized", workflow="decentralized")
    final = None
    polls: dict[str, str] = {}  # poll_id -> event id of the poll that opened it
    for line, rec in records:
        kind, content, sender = rec.get("type"), rec.get("content"), rec.get("sender")
        where = f"{filename}:{line}"
        meta = {k: v for k, v in rec.items() if k not in ("id", "timestamp", "sender", "content")}
        common: dict[str, Any] = {"where": where, "timestamp": parse_time(rec.get("timestamp")), "agent_id": sender}
        event_id = rec.get("id") or f"l{line}"
        poll_id = content.get("poll_id") if isinstance(content, dict) else None
        if poll_id and poll_id in polls:
            common["parent_id"] = polls[poll_id]
        elif poll_id and kind == "poll":
            polls[poll_id] = event_id
        if kind == "task":
            run.session.setdefault("name", str(content)[:200])
            run.step(event_id, "input", content=str(content), metadata={"role": "user", **meta}, **common)
        elif kind == "final_answer" and isinstance(content, dict):
            final = str(content.get("answer"))
            run.step(event_id, "decision", content=final, metadata={**meta, "final_answer": content}, **common)
        elif kind == "poll" and isinstance(content, dict):
            text = f"poll {content.get('status', '')}: {content.get('question', '')}\n{content.get('proposal', '')}".strip()
            run.step(event_id, "observation", content=text, metadata={**meta, "poll": content}, **common)
        elif kind == "vote" and isinstance(content, dict):
            text = f"vote {content.get('vote')} (confidence {content.get('confidence')}): {content.get('rationale', '')}"
            run.step(event_id, "observation", content=text, metadata={**meta, "vote": content}, **common)
        else:
            run.step(
                event_id,
                "observation",
                content=content if isinstance(content, str) else text_of(content),
                metadata=meta,
                **common,
            )
    if final is not None:
        last = max((s.timestamp for s in run.steps if s.timestamp), default=None)
        run.finish("succeeded", outcome=final, ended_at=last)
    return run


class SmolagentsFormat:
    name = "smolagents"
    label = "smolagents benchmark answers, memory dumps or message-bus logs"
    unwatchable = "names its runs by a hash of the whole file, which changes as the file grows"  # (watch refuses it)

    def sniff(self, head: bytes, filename: str) -> bool:
        if not starts_json(head):
            return False
        if has_key(head, "intermediate_steps"):
            return True
        if has_key(head, "sender") and has_key(head, "recipients") and has_key(head, "thread_id"):
            return True
        return has_key(head, "step_number") and (
            has_key(head, "model_output") or has_key(head, "observations") or has_key(head, "model_input_messages")
        )

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord]:
        if is_json_lines(data):
            lines: list[tuple[int, Any]] = []
            bad: list[BadRecord] = []
            for item in json_lines(data, filename):
                if isinstance(item, BadRecord):
                    bad.append(item)
                else:
                    lines.append(item)
            yield from bad
            if lines and all("sender" in rec for _, rec in lines if isinstance(rec, dict)):
                yield from _bus_run([(n, r) for n, r in lines if isinstance(r, dict)], data, filename).events()
                return
            base = stable_id(filename, data)  # hashed once: a per-line hash of the whole file would be quadratic
            for number, rec in lines:
                if not isinstance(rec, dict):
                    yield BadRecord(f"{filename}:{number}", "expected a JSON object")
                else:
                    yield from _benchmark_run(rec, f"{filename}:{number}", f"{base}-{number}").events()
            return
        doc = load_json(data, filename)
        if isinstance(doc, dict) and "intermediate_steps" in doc:
            yield from _benchmark_run(doc, filename, stable_id(filename, data, 1)).events()
            return
        steps = doc.get("steps") if isinstance(doc, dict) else doc
        if not isinstance(steps, list):
            yield BadRecord(filename, "expected a list of memory steps (or an object with 'steps')")
            return
        extra = {k: v for k, v in doc.items() if k not in ("steps", "system_prompt", "model_id")} if isinstance(doc, dict) else {}
        run = Run(
            stable_id(filename, data),
            filename,
            agent_id="smolagents",
            metadata=compact(extra),
            model=doc.get("model_id") if isinstance(doc, dict) else None,
        )
        mapper = _Mapper(run)
        if isinstance(doc, dict) and doc.get("system_prompt"):
            run.step("system", "input", content=str(doc["system_prompt"]), metadata={"role": "system"})
        mapper.memory(steps, filename)
        task = next((s.content for s in run.steps if s.type == "input" and (s.metadata or {}).get("role") == "user"), None)
        if task:
            run.session["name"] = task[:200]
        failed = next((s for s in reversed(run.steps) if s.status == "error"), None)
        if mapper.final is not None:
            run.finish("succeeded", outcome=mapper.final)
        elif failed is not None and failed is run.steps[-1]:
            run.finish("failed", outcome=failed.content, error_class=failed.error_class)
        yield from run.events()


FORMAT = SmolagentsFormat()

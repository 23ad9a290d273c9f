"""CrewAI files: a crew's result (`crew_output.model_dump_json()`) and its output log (`Crew(output_log_file=…)`,
JSON or text).

CrewOutput: `tasks_output[]`, each a TaskOutput with the agent's chat `messages` (OpenAI-shaped: system and
user → input, assistant → think/decision and tool_call, tool → tool_result) and `tool_failures` (a tool that
raised: its result is an error step, the failure's `code` its error class, matched by tool name and
arguments). A task without messages (older releases) is its description as input and its `raw` output as
decision. The crew's `token_usage` counts the whole crew, no call of it: the run's token totals (metadata
`tokens_in`, `tokens_out`, `totals`), on no step. The file exists once `kickoff()` returned: the run
succeeded, its `raw` the outcome. It has no times and no model name.

Output log: a record per task `started` (its description → input) and `completed` (its output → decision),
with the agent's role and a time. CrewAI writes that time in the machine's local time without a zone; it is
read as every zoneless time is, as UTC. The log tells nothing of how the crew ended (a crew that raised
logs nothing more): the run ends unknown. The text log is `YYYY-MM-DD HH:MM:SS: key="value", …` with values
unescaped, so an output runs on over the following lines up to the next record. One file is one run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from .chat_messages import Conversation
from .jsondoc import as_array, as_object, has_key, load_json, parse_arguments, starts_json
from .reader import BadRecord, DocumentError, Event, Ignored, Records, kind_of
from .runs import Run, parse_time, stable_id

SNIFF = 4096  # enough to tell a JSON document from the text log
LOG_STATUSES = {"started": "input", "completed": "decision"}
_TEXT_RECORD = re.compile(rb'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d): task_name="', re.M)
_TEXT_FIELDS = re.compile(
    r'task_name="(?P<task_name>.*?)", task="(?P<task>.*?)", agent="(?P<agent>.*?)", status="(?P<status>\w+)"'
    r'(?:, output="(?P<output>.*)")?\s*$',
    re.S,
)


def _failures(task: dict) -> list[dict]:
    return [f for f in map(as_object, as_array(task.get("tool_failures"))) if isinstance(f.get("tool_name"), str)]


class _Task:
    """One TaskOutput's messages → steps, a tool result that `tool_failures` names an error."""

    def __init__(self, run: Run, task: dict, key: str):
        self.conv = Conversation(run)
        self.task, self.key = task, key
        self.failures = _failures(task)
        self.args: dict[str, tuple[Any, Any]] = {}  # tool_call_id -> (tool name, arguments)

    def message(self, msg: Any, j: int, where: str) -> Ignored | None:
        if not isinstance(msg, dict) or msg.get("role") not in ("system", "user", "assistant", "tool"):
            return Ignored(where, kind_of(msg), known=False)
        common: dict[str, Any] = {"where": where, "agent_id": self.task.get("agent")}
        for call in map(as_object, as_array(msg.get("tool_calls"))):
            fn = as_object(call.get("function"))
            if isinstance(call.get("id"), str):
                self.args[call["id"]] = (fn.get("name"), parse_arguments(fn.get("arguments")))
        if msg["role"] == "tool":
            failure = self._failure(msg)
            if failure is not None:
                reason = as_object(failure.get("failure"))
                msg = {**msg, "is_error": True}
                common["error_class"] = str(reason.get("code") or reason.get("reason") or "tool_error")[:200]
        self.conv.openai(msg, f"{self.key}.m{j}", common)
        return None

    def _failure(self, msg: dict) -> dict | None:
        name, args = self.args.get(str(msg.get("tool_call_id")), (msg.get("name"), None))
        for i, failure in enumerate(self.failures):
            if failure["tool_name"] == name and (args is None or failure.get("tool_args") in (None, args)):
                return self.failures.pop(i)
        return None


def _totals(usage: dict) -> dict[str, Any]:
    """The crew's token totals as the run's (the store's rule for a source that counts no call)."""
    counts = {k: usage.get(f) for k, f in (("tokens_in", "prompt_tokens"), ("tokens_out", "completion_tokens"))}
    counts = {k: v for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool) and v >= 0}
    return {**counts, "totals": "run totals from the crew's token_usage (the steps carry none)"} if counts else {}


def _read_output(doc: dict, run: Run, filename: str) -> Iterator[Ignored]:
    tasks = [as_object(t) for t in as_array(doc.get("tasks_output"))]
    for i, task in enumerate(tasks):
        where = f"{filename}:tasks_output[{i}]"
        messages = as_array(task.get("messages"))
        if not messages:
            agent = task.get("agent") if isinstance(task.get("agent"), str) else None
            run.step(f"t{i}.task", "input", content=str(task.get("description") or ""), agent_id=agent, where=where)
            run.step(f"t{i}.raw", "decision", content=str(task.get("raw") or ""), agent_id=agent, where=where)
            continue
        reader = _Task(run, task, f"t{i}")
        for j, msg in enumerate(messages):
            ignored = reader.message(msg, j, f"{where}.messages[{j}]")
            if ignored:
                yield ignored
        if reader.failures:  # a failure no tool message answers: kept, not lost
            run.session["metadata"]["crewai"].setdefault("unmatched_tool_failures", []).extend(reader.failures)
    raw = doc.get("raw")
    run.finish("succeeded", outcome=raw if isinstance(raw, str) and raw else None)


def _text_log(data: bytes, filename: str) -> list[dict]:
    """The text log's records, each with `where` (its first line)."""
    starts = [m.start() for m in _TEXT_RECORD.finditer(data)]
    if not starts:
        raise DocumentError(BadRecord(f"{filename}:1", "expected CrewAI output log lines `YYYY-MM-DD HH:MM:SS: task_name=…`"))
    records: list[dict] = []
    if data[: starts[0]].strip():
        records.append({"where": f"{filename}:1", "unread": True})
    for n, start in enumerate(starts):
        chunk = data[start : starts[n + 1] if n + 1 < len(starts) else len(data)]
        line = data.count(b"\n", 0, start) + 1
        where = f"{filename}:{line}"
        text = chunk.decode("utf-8", errors="replace")
        stamp, _, rest = text.partition(": ")
        fields = _TEXT_FIELDS.match(rest)
        records.append({"where": where, "timestamp": stamp, **fields.groupdict()} if fields else {"where": where, "unread": True})
    return records


def _read_log(entries: list, run: Run, filename: str, text: bool) -> Iterator[Ignored]:
    for i, entry in enumerate(entries):
        where = entry.get("where") if text else f"{filename}:[{i}]"
        status = entry.get("status") if isinstance(entry, dict) else None
        step_type = LOG_STATUSES.get(status) if isinstance(status, str) else None
        if step_type is None:
            yield Ignored(str(where), "unreadable line" if text else kind_of(entry), known=False)
            continue
        content = entry.get("task") if step_type == "input" else entry.get("output")
        meta = {k: v for k, v in entry.items() if k not in ("where", "timestamp", "task", "agent", "output")}
        run.step(
            f"log{i}",
            step_type,
            where=str(where),
            content=content if isinstance(content, str) else None,
            agent_id=entry.get("agent") if isinstance(entry.get("agent"), str) else None,
            timestamp=parse_time(entry.get("timestamp")),
            metadata=meta,
        )


def _is_log(doc: Any) -> bool:
    return isinstance(doc, list) and bool(doc) and all(isinstance(e, dict) and "status" in e and "task_name" in e for e in doc)


class CrewAIFormat:
    name = "crewai"
    label = "CrewAI crew output (CrewOutput JSON) or output log (output_log_file, JSON or text)"
    unwatchable = "one JSON document per run, rewritten whole"  # (watch refuses it)

    def sniff(self, head: bytes, filename: str) -> bool:
        if not starts_json(head):
            return _TEXT_RECORD.match(head.lstrip()) is not None
        if has_key(head, "tasks_output"):
            return True
        return has_key(head, "task_name") and (has_key(head, "status", "started") or has_key(head, "status", "completed"))

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored | Records]:
        text = not starts_json(data[:SNIFF])
        doc: Any = _text_log(data, filename) if text else load_json(data, filename)
        output = isinstance(doc, dict) and isinstance(doc.get("tasks_output"), list)
        if not output and not (text or _is_log(doc)):
            yield BadRecord(filename, "expected a CrewAI CrewOutput (tasks_output) or output log (task_name, status)")
            return
        if output:
            tasks = [as_object(t) for t in doc["tasks_output"]]
            yield Records(sum(max(len(as_array(t.get("messages"))), 1) for t in tasks), "task messages")
            first = tasks[0] if tasks else {}
            usage = as_object(doc.get("token_usage"))
            info = {"file": "crew_output", "token_usage": usage or None, "tasks": [t.get("name") for t in tasks]}
        else:
            yield Records(len(doc), "log records")
            first = next((e for e in doc if isinstance(e, dict) and "status" in e), {})
            usage, info = {}, {"file": "output_log", "times": "local time, no zone"}
        name = first.get("name") or first.get("task_name") or first.get("description") or first.get("task")
        run = Run(
            stable_id(filename, data),
            filename,
            name=name.strip().split("\n", 1)[0][:200] if isinstance(name, str) and name.strip() else None,
            agent_id=first.get("agent") if isinstance(first.get("agent"), str) else None,
            metadata={"crewai": {k: v for k, v in info.items() if v is not None}, **_totals(usage)},
        )
        yield from _read_output(doc, run, filename) if output else _read_log(doc, run, filename, text)
        times = [s.timestamp for s in run.steps if s.timestamp]
        run.session.update(started_at=min(times, default=None), ended_at=max(times, default=None))
        yield from run.events()


FORMAT = CrewAIFormat()

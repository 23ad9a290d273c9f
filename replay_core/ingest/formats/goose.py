"""Goose sessions: `goose session export --format json` and the older session JSONL.

Goose (block/goose) keeps sessions in SQLite (`sessions.db`) since 2025; `goose session export --format
json` writes one as a JSON document: `id`, `name`, `working_dir`, `created_at`/`updated_at`,
`provider_name`, `model_config.model_name`, `usage`/`accumulated_usage` and the `conversation`. Before
the database, `~/.local/share/goose/sessions/<id>.jsonl` held the same messages, a line each, after a
metadata line (`working_dir`, `description`, `message_count`, token counts). A message is `{role,
created (epoch seconds), content: [parts]}`; parts: `text` (user → input; assistant → decision, or
think beside a call), `thinking`/`redactedThinking` → think, `toolRequest` → tool_call (its `toolCall`
a success with `{name, arguments}` or an error), `toolResponse` → tool_result (an error status or
`isError` → error; `value` the MCP result, a content list in older releases), other parts (a
confirmation request, a compaction notice) an observation with the part kept. Goose counts tokens per
session, not per call: the session's usage is the run's totals, on no step. The file does not say how
the session ended: status unknown, ended at its last message (`updated_at`, when the row last changed, kept
in metadata).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from .chat_messages import text_of
from .jsondoc import as_array, as_object, first_record, has_key, is_json_lines, json_lines, load_json, starts_json
from .reader import BadRecord, DocumentError, Event, Ignored, Records, kind_of
from .runs import Run, parse_time, stable_id

_META_KEYS = ("working_dir", "description", "message_count")
_EXPORT_KEYS = ("working_dir", "conversation")
_SETTINGS = ("id", "description", "working_dir", "provider_name", "goose_mode", "schedule_id", "message_count", "updated_at")
_TOTALS = "run totals from the session's usage (Goose counts no single call)"


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _totals(doc: dict) -> dict[str, Any]:
    """The session's token counts: `accumulated_usage` (all turns) over `usage` (the last context) in an
    export; `accumulated_*_tokens` over `*_tokens` on a metadata line."""
    usage = as_object(doc.get("accumulated_usage")) or as_object(doc.get("usage"))
    pairs = [(usage.get("input_tokens"), usage.get("output_tokens"))]
    pairs += [(doc.get(f"{p}input_tokens"), doc.get(f"{p}output_tokens")) for p in ("accumulated_", "")]
    tokens_in, tokens_out = next(((_count(i), _count(o)) for i, o in pairs if _count(i) is not None), (None, None))
    counts = {k: v for k, v in (("tokens_in", tokens_in), ("tokens_out", tokens_out)) if v is not None}
    return {**counts, "totals": _TOTALS} if counts else {}


def _tool_output(result: dict) -> tuple[Any, bool]:
    """(content, is error) of a toolResponse's `toolResult`."""
    if result.get("status") == "error":
        return str(result.get("error") or "tool error"), True
    value = result.get("value")
    if isinstance(value, dict):  # an MCP CallToolResult
        return value.get("content"), value.get("isError") is True
    return value, False


def _text(content: Any) -> str:
    text = text_of(content)
    return text if text is not None else orjson.dumps(content).decode()


class _Session:
    def __init__(self, run: Run, model: str | None):
        self.run, self.model = run, model
        self.calls: dict[str, str | None] = {}  # toolRequest id -> tool name

    def message(self, msg: Any, key: str, where: str) -> Ignored | None:
        if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant") or not isinstance(msg.get("content"), list):
            return Ignored(where, kind_of(msg), known=False)
        assistant = msg["role"] == "assistant"
        common: dict[str, Any] = {"where": where, "timestamp": parse_time(msg.get("created"))}
        if assistant:
            common["model"] = self.model
        meta = {k: v for k, v in msg.items() if k not in ("role", "created", "content") and v is not None}
        parts = [p if isinstance(p, dict) else {"type": None, "value": p} for p in msg["content"]]
        acts = any(p.get("type") == "toolRequest" for p in parts)
        for j, part in enumerate(parts):
            self.part(part, f"{key}.{j}", assistant, acts, {**common, "metadata": meta if j == 0 else None})
        return None

    def part(self, part: dict, key: str, assistant: bool, acts: bool, common: dict) -> None:
        kind, run = part.get("type"), self.run
        rest = {k: v for k, v in part.items() if k not in ("type", "id", "text", "toolCall", "toolResult")}
        meta = {**(common.pop("metadata") or {}), **rest} or None
        if kind == "text":
            step_type = ("think" if acts else "decision") if assistant else "input"
            role = None if assistant else "user"
            run.step(key, step_type, content=str(part.get("text") or ""), metadata={"role": role, **(meta or {})}, **common)
        elif kind in ("thinking", "redactedThinking"):
            run.step(key, "think", content=str(part.get("thinking") or ""), metadata=meta, **common)
        elif kind == "toolRequest":
            call = as_object(part.get("toolCall"))
            value = as_object(call.get("value"))
            name = value.get("name") if isinstance(value.get("name"), str) else None
            call_id = part.get("id") if isinstance(part.get("id"), str) else None
            if call_id:
                self.calls[call_id] = name
            if call.get("status") == "error":  # the model asked for a call Goose could not parse
                meta = {**(meta or {}), "call_error": call.get("error")}
            args = value.get("arguments")
            run.step(key, "tool_call", tool_name=name, tool_args=args, tool_call_id=call_id, metadata=meta, **common)
        elif kind == "toolResponse":
            call_id = part.get("id") if isinstance(part.get("id"), str) else None
            content, error = _tool_output(as_object(part.get("toolResult")))
            fields = {"tool_name": self.calls.pop(call_id, None) if call_id else None, "tool_call_id": call_id}
            if error:
                fields.update(status="error", error_class="tool_error")
            run.step(key, "tool_result", content=_text(content), metadata=meta, **fields, **common)
        else:
            text = str(part.get("text") or part.get("msg") or "")
            run.step(key, "observation", content=text, metadata={"part": part}, **common)


def _model(doc: dict) -> str | None:
    name = as_object(doc.get("model_config")).get("model_name")
    return name if isinstance(name, str) and name else None


def _is_metadata(record: Any) -> bool:
    return isinstance(record, dict) and "working_dir" in record and "role" not in record


class GooseFormat:
    name = "goose"
    label = "Goose session (goose session export --format json, or the older sessions/<id>.jsonl)"
    unwatchable = "names its runs by a hash of the whole file, which changes as the file grows"  # (watch refuses it)

    def sniff(self, head: bytes, filename: str) -> bool:
        if not starts_json(head):
            return False
        first = first_record(head)
        if _is_metadata(first):  # the JSONL's metadata line
            return all(k in first for k in _META_KEYS[:2]) or ("message_count" in first and "total_tokens" in first)
        if isinstance(first, dict) and first.get("role") in ("user", "assistant") and "created" in first:
            return has_key(head, "type", "toolRequest") or _goose_parts(first)
        return all(has_key(head, k) for k in _EXPORT_KEYS) and has_key(head, "created")

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored | Records]:
        if is_json_lines(data):
            lines: list[tuple[str, Any]] = []
            for item in json_lines(data, filename):
                if isinstance(item, BadRecord):
                    yield item
                else:
                    lines.append((f"{filename}:{item[0]}", item[1]))
            header = lines[0][1] if lines and _is_metadata(lines[0][1]) else {}
            messages = lines[1:] if header else lines
        else:
            doc = load_json(data, filename)
            if not isinstance(doc, dict) or not isinstance(doc.get("conversation"), list):
                raise DocumentError(BadRecord(filename, "expected a Goose session export (an object with a `conversation`)"))
            header = doc
            messages = [(f"{filename}:conversation[{i}]", m) for i, m in enumerate(doc["conversation"])]
            yield Records(len(messages) + 1, "the session and each message")
        model = _model(header)
        name = header.get("name") or header.get("description")
        run = Run(
            stable_id(filename, data),
            filename,
            name=name[:200] if isinstance(name, str) and name else None,
            agent_id="goose",
            model=model,
            started_at=parse_time(header.get("created_at")),
            metadata={"goose": {k: header[k] for k in _SETTINGS if header.get(k) is not None}, **_totals(header)},
        )
        session = _Session(run, model)
        for n, (where, msg) in enumerate(messages):
            ignored = session.message(msg, f"m{n}", where)
            if ignored:
                yield ignored
        times = [s.timestamp for s in run.steps if s.timestamp]
        if times:
            run.session.setdefault("started_at", min(times))
            run.session.setdefault("ended_at", max(times))
        first_input = next((s.content for s in run.steps if s.type == "input" and s.content), None)
        if "name" not in run.session and first_input:
            run.session["name"] = first_input.split("\n", 1)[0][:200]
        yield from run.events()


def _goose_parts(msg: dict) -> bool:
    """A message whose content is a list of Goose-typed parts (`text`, `toolRequest`, …) and whose time
    is `created` in epoch seconds: Goose's own message shape."""
    parts = as_array(msg.get("content"))
    return isinstance(msg.get("created"), int) and bool(parts) and all(isinstance(p, dict) and "type" in p for p in parts)


FORMAT = GooseFormat()

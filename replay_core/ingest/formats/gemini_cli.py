"""Gemini CLI session recordings (`~/.gemini/tmp/<project>/chats/session-*.json[l]`).

Two layouts: one JSON document `{sessionId, projectHash, startTime, lastUpdated, messages}`,
and the newer JSON Lines where the first line is that header without `messages`, each further
line a message, `{"$set": {...}}` updates header fields and `{"$rewindTo": id}` drops that
message and what follows. A message id written again replaces the earlier copy in its place
(the last copy wins; the earlier ones are Ignored as `superseded`).

user → input; gemini → one think per `thoughts[]` entry, its text (decision when it calls no
tool), and per `toolCalls[]` a tool_call (`args`) and a tool_result (the functionResponse's
`response.output`, or `response.error` with status error; `status: error` also marks it).
Tokens go on the message's first step: `tokens_in` = input (cached included) + tool-use
prompt, `tokens_out` = output + thoughts, the raw counts kept; an all-zero count means not
recorded. info/warning messages are Ignored by type (a message of a type not listed here is
Ignored as unknown); error messages become error steps. The JSON document is accounted for by
message (a `Records` count), the JSON Lines layout by line.
A recording says nothing of the outcome: sessions end `unknown` (`failed` after an error).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .chat_messages import text_of
from .jsondoc import first_record, has_key, is_json_lines, json_objects, load_json, starts_json
from .reader import BadRecord, DocumentError, Event, Ignored, Records
from .runs import Run, compact, parse_time, stable_id

HEADER_KEYS = ("sessionId", "projectHash", "startTime", "lastUpdated", "kind", "summary", "directories")
MODEL_TYPES = frozenset({"gemini", "model"})


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _tokens(tokens: Any) -> dict[str, Any]:
    if not isinstance(tokens, dict) or not any(_int(tokens.get(k)) for k in ("input", "output", "thoughts", "tool", "total")):
        return {"metadata": {"tokens": tokens}} if tokens is not None else {}
    return {
        "tokens_in": _int(tokens.get("input")) + _int(tokens.get("tool")),
        "tokens_out": _int(tokens.get("output")) + _int(tokens.get("thoughts")),
        "metadata": {"tokens": tokens},
    }


def _response(call: dict) -> tuple[str, bool]:
    """A tool call's result text, and whether the response is an error."""
    parts = call.get("result")
    texts, error = [], False
    for part in parts if isinstance(parts, list) else [parts] if parts is not None else []:
        resp = (part.get("functionResponse") or {}).get("response") if isinstance(part, dict) else None
        if isinstance(resp, dict):
            if resp.get("error") is not None:
                error = True
                texts.append(text_of(resp["error"]) or "")
            elif "output" in resp:
                texts.append(text_of(resp["output"]) or "")
            else:
                texts.append(text_of(resp) or "")
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part, str):
            texts.append(part)
    if not texts and isinstance(call.get("resultDisplay"), str):
        texts.append(call["resultDisplay"])
    return "\n".join(texts), error


def _message(run: Run, msg: dict, where: str) -> str | None:
    """Steps of one message; returns 'error' when it is an error message."""
    kind = msg.get("type")
    key = str(msg.get("id") or where.rsplit(":", 1)[-1])
    when = parse_time(msg.get("timestamp"))
    common: dict[str, Any] = {"where": where, "timestamp": when}
    text = text_of(msg.get("content")) or ""
    if kind == "user":
        run.step(key, "input", content=text, metadata={"role": "user"}, **common)
        return None
    if kind == "error":
        run.step(key, "error", content=text, status="error", error_class="error", **common)
        return "error"
    model = msg.get("model") if isinstance(msg.get("model"), str) else None
    first: dict[str, Any] = _tokens(msg.get("tokens"))
    calls = msg.get("toolCalls")
    calls = calls if isinstance(calls, list) else [calls] if isinstance(calls, dict) else []

    def take() -> dict[str, Any]:
        out = dict(first)
        first.clear()
        return out

    for i, thought in enumerate(msg.get("thoughts") or []):
        if isinstance(thought, dict):
            body = f"{thought.get('subject') or ''}: {thought.get('description') or ''}".strip(": ")
            run.step(
                f"{key}.thought{i}",
                "think",
                content=body,
                model=model,
                where=where,
                timestamp=parse_time(thought.get("timestamp")) or when,
                **take(),
            )
    if text or not calls:
        run.step(key, "think" if calls else "decision", content=text, model=model, **common, **take())
    for j, call in enumerate(calls):
        if not isinstance(call, dict):
            run.errors.append(BadRecord(f"{where}:toolCalls[{j}]", "expected a tool call object"))
            continue
        call_id = call.get("id") if isinstance(call.get("id"), str) else None
        name = call.get("name") if isinstance(call.get("name"), str) else None
        at = parse_time(call.get("timestamp")) or when
        fields = take()
        meta = {**fields.pop("metadata", {}), "display_name": call.get("displayName"), "description": call.get("description")}
        run.step(
            f"{key}.call{j}",
            "tool_call",
            tool_name=name,
            tool_args=call.get("args"),
            tool_call_id=call_id,
            model=model,
            where=where,
            timestamp=when,
            metadata=meta,
            **fields,
        )
        if call.get("result") is None and call.get("status") not in ("error", "cancelled", "success"):
            continue  # not answered yet
        content, error = _response(call)
        status = "error" if error or call.get("status") in ("error", "cancelled") else "ok"
        run.step(
            f"{key}.result{j}",
            "tool_result",
            tool_name=name,
            tool_call_id=call_id,
            content=content,
            status=status,
            error_class=f"tool {call.get('status')}" if status == "error" else None,
            where=where,
            timestamp=at,
            metadata={"status": call.get("status"), "result_display": call.get("resultDisplay") if error else None},
        )
    return None


class GeminiCliFormat:
    name = "gemini_cli"
    label = "Gemini CLI session recordings ({sessionId, projectHash, messages} JSON or JSONL)"

    def sniff(self, head: bytes, filename: str) -> bool:
        if not starts_json(head) or not has_key(head, "sessionId"):
            return False
        first = first_record(head)
        if isinstance(first, dict) and "sessionId" in first:
            return "projectHash" in first or "messages" in first and has_key(head, "type", "gemini")
        return has_key(head, "projectHash") or has_key(head, "messages") and has_key(head, "type", "gemini")

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored | Records]:
        header: dict[str, Any] = {}
        messages: dict[str, tuple[str, dict]] = {}  # id -> (where, message), in first-seen order
        if is_json_lines(data):
            for item in json_objects(data, filename):
                if isinstance(item, BadRecord):
                    yield item
                    continue
                n, rec = item
                where = f"{filename}:{n}"
                if "$set" in rec:
                    if isinstance(rec["$set"], dict):
                        header.update({k: v for k, v in rec["$set"].items() if k != "messages"})
                    else:
                        yield BadRecord(where, "$set: expected an object")
                elif "$rewindTo" in rec:
                    ids = list(messages)
                    if rec["$rewindTo"] in messages:
                        for dropped in ids[ids.index(rec["$rewindTo"]) :]:
                            yield Ignored(messages.pop(dropped)[0], "rewound")
                    else:
                        yield Ignored(where, "$rewindTo/unknown-id")
                elif "type" in rec:
                    yield from self._keep(messages, rec, where)
                elif "sessionId" in rec:
                    header.update(rec)
                else:
                    yield BadRecord(where, "neither a header, a message nor an update ($set/$rewindTo)")
        else:
            doc = load_json(data, filename)
            if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
                where = f"{filename}:messages" if isinstance(doc, dict) else f"{filename}:1"  # the field, else the document
                raise DocumentError(BadRecord(where, "expected an object with a 'messages' list"))
            header = {k: doc.get(k) for k in HEADER_KEYS if k in doc}
            yield Records(len(doc["messages"]), "messages")  # the account is by message, not by the one document
            for i, msg in enumerate(doc["messages"]):
                where = f"{filename}:messages[{i}]"
                if isinstance(msg, dict):
                    yield from self._keep(messages, msg, where, i)
                else:
                    yield BadRecord(where, "expected a message object")
        sid = header.get("sessionId")
        meta = {k: header.get(k) for k in ("projectHash", "kind", "summary", "directories") if header.get(k) is not None}
        run = Run(
            sid if isinstance(sid, str) and sid else stable_id(filename, data),
            filename,
            agent_id="gemini-cli",
            started_at=parse_time(header.get("startTime")),
            metadata=compact(meta),
            name=header.get("summary") if isinstance(header.get("summary"), str) else None,
        )
        last = None
        models: list[str] = []
        for where, msg in messages.values():
            kind = msg.get("type")
            if kind in ("info", "warning"):
                yield Ignored(where, f"message/{kind}")
                continue
            if kind not in MODEL_TYPES and kind not in ("user", "error"):
                yield Ignored(where, f"message/{kind}", known=False)  # a type this reader does not know
                continue
            last = _message(run, msg, where)
            if isinstance(msg.get("model"), str):
                models.append(msg["model"])
        run.session["model"] = max(set(models), key=models.count) if models else None
        if "name" not in run.session:
            prompt = next(
                (
                    s.content
                    for s in run.steps
                    if s.type == "input" and s.content and not s.content.startswith("<session_context>")
                ),
                None,
            )
            run.session["name"] = prompt[:200] if prompt else None
        times = [t for t in [parse_time(header.get("lastUpdated"))] + [s.timestamp for s in run.steps] if t]
        ended = max(times) if times else None
        if last == "error":
            run.finish("failed", outcome=run.steps[-1].content if run.steps else None, error_class="error", ended_at=ended)
        else:
            run.finish("unknown", ended_at=ended)
        yield from run.events()

    @staticmethod
    def _keep(messages: dict[str, tuple[str, dict]], msg: dict, where: str, index: int | None = None) -> Iterator[Ignored]:
        mid = msg.get("id")
        key = mid if isinstance(mid, str) and mid else f"#{index if index is not None else where}"
        if key in messages:
            yield Ignored(messages[key][0], "superseded")
        messages[key] = (where, msg)


FORMAT = GeminiCliFormat()

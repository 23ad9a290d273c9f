"""Chat messages → steps, for OpenAI-shaped and Anthropic-shaped message lists.

Both provider shapes say the same things differently: what the user or system said
(`input`), what the model thought or answered (`think`, or `decision` for an answer
that calls no tool), which tools it called (`tool_call`) and what they returned
(`tool_result`, `error` status only when the source flags it). `Conversation` holds the
two mappings and remembers open tool calls so a result gets its tool's name.

Request/response logs (JSON Lines, VCR cassettes) are turned into runs here too: a
request that repeats the conversation so far plus new messages continues the same run
(the usual agent loop), any other request starts a new run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import orjson

from .cassette import Interaction, is_cassette, read_cassette
from .jsondoc import is_json_lines, json_lines, load_json, parse_arguments
from .reader import BadRecord, Event, Ignored, Records, kind_of
from .runs import Run, compact, parse_time, stable_id

TEXT_PARTS = ("text", "input_text", "output_text")


def text_of(content: Any) -> str | None:
    """The text of a message content: a string, or the text parts of a part list joined."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p if isinstance(p, str) else p.get("text") for p in content if isinstance(p, str) or isinstance(p, dict)]
        return "\n".join(t for t in texts if isinstance(t, str))
    return orjson.dumps(content).decode()


def other_parts(content: Any) -> list | None:
    """Non-text parts of a part list (audio, documents…), kept in metadata; an image part leaves only a
    stub here, its bytes go to the step's `attachments` (see `image_attachments`)."""
    if not isinstance(content, list):
        return None
    parts = [
        _stub(p) for p in content if not (isinstance(p, str) or (isinstance(p, dict) and p.get("type", "text") in TEXT_PARTS))
    ]
    return parts or None


def _image(part: Any) -> dict | None:
    """A native attachment for an Anthropic `image` block (base64 source) or an OpenAI `image_url`/`input_image`
    part holding a data: URL; None for anything else (a plain URL is kept as a reference, never fetched)."""
    if not isinstance(part, dict):
        return None
    source = part.get("source")
    if part.get("type") == "image" and isinstance(source, dict) and source.get("type") == "base64":
        return {"media_type": source.get("media_type"), "data": source.get("data")}
    url = part.get("image_url")
    url = url.get("url") if isinstance(url, dict) else url
    if part.get("type") in ("image_url", "input_image") and isinstance(url, str):
        head, _, data = url.partition(",")
        if head.startswith("data:") and head.endswith(";base64"):
            return {"media_type": head[5:-7], "data": data}
        return {"url": url}
    return None


def _stub(part: Any) -> Any:
    return {"type": part.get("type"), "moved_to": "attachments"} if _image(part) is not None else part


def image_attachments(content: Any) -> list[dict] | None:
    """The image parts of a part list (or of a tool result's content list) as native attachments."""
    if not isinstance(content, list):
        return None
    found = [a for a in map(_image, content) if a is not None]
    return found or None


class Conversation:
    """Maps one run's chat messages to steps, in order."""

    def __init__(self, run: Run):
        self.run = run
        self.calls: dict[str, str | None] = {}  # open tool_call_id -> tool name

    def add(self, key: str, type: str, fields: dict[str, Any], first: dict[str, Any] | None) -> None:
        """One step; `first` (tokens, model, message metadata) goes to the message's first step only."""
        if first:
            meta = {**(first.get("metadata") or {}), **(fields.get("metadata") or {})}
            fields = {**first, **fields, "metadata": meta}
            first.clear()
        self.run.step(key, type, **fields)

    def call(
        self, key: str, name: str | None, args: Any, call_id: str | None, common: dict, first: dict | None, meta=None
    ) -> None:
        if call_id:
            self.calls[call_id] = name
        self.add(
            key, "tool_call", {**common, "tool_name": name, "tool_args": args, "tool_call_id": call_id, "metadata": meta}, first
        )

    def result(
        self, key: str, call_id: str | None, content: Any, error: bool, common: dict, first: dict | None, meta=None, name=None
    ) -> None:
        opened = self.calls.pop(call_id, None) if call_id else None
        name = name or opened
        fields = {**common, "tool_name": name, "tool_call_id": call_id, "content": text_of(content), "metadata": meta}
        if error:
            fields["status"] = "error"
        self.add(key, "tool_result", fields, first)

    # ------------------------------------------------------------------ OpenAI shape

    def openai(self, msg: dict, key: str, common: dict | None = None, first: dict | None = None) -> None:
        """role system/user/developer → input; assistant → think/decision + tool_call; tool → tool_result."""
        common = common or {}
        first = dict(first or {})
        role = msg.get("role")
        extra = {k: v for k, v in msg.items() if k not in _OPENAI_KEYS and v is not None}
        extra["content_parts"] = other_parts(msg.get("content"))
        extra["attachments"] = image_attachments(msg.get("content"))
        text = text_of(msg.get("content"))
        if role == "assistant":
            calls = list(msg.get("tool_calls") or [])
            if msg.get("function_call"):
                calls.append({"function": msg["function_call"]})
            if msg.get("reasoning_content"):
                self.add(
                    f"{key}.reasoning",
                    "think",
                    {**common, "content": msg["reasoning_content"], "metadata": {"reasoning": True}},
                    first,
                )
            if text or not calls:
                self.add(key, "think" if calls else "decision", {**common, "content": text or "", "metadata": extra}, first)
                extra = {}  # said once, on the message's first step
            for j, call in enumerate(calls):
                fn = call.get("function") or {}
                rest = {k: v for k, v in call.items() if k not in ("id", "type", "function")}
                self.call(
                    f"{key}.call{j}",
                    fn.get("name"),
                    parse_arguments(fn.get("arguments")),
                    call.get("id"),
                    common,
                    first,
                    meta={**extra, **rest} if j == 0 else rest,
                )
        elif role in ("tool", "function"):
            error = msg.get("is_error") is True or msg.get("status") == "error"
            extra.pop("is_error", None)
            self.result(key, msg.get("tool_call_id"), msg.get("content"), error, common, first, meta=extra, name=msg.get("name"))
        else:
            self.add(
                key,
                "input",
                {**common, "content": text or "", "metadata": {"role": role, "name": msg.get("name"), **extra}},
                first,
            )

    # ------------------------------------------------------------------ Anthropic shape

    def anthropic(self, msg: dict, key: str, common: dict | None = None, first: dict | None = None) -> None:
        """text/thinking/tool_use blocks of the assistant, text/tool_result blocks of the user."""
        common = common or {}
        first = dict(first or {})
        role = msg.get("role")
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        extra = {k: v for k, v in msg.items() if k not in ("role", "content") and v is not None}
        if extra:
            first["metadata"] = {**(first.get("metadata") or {}), **extra}
        if role == "assistant":
            acts = any(isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use") for b in blocks)
            for j, block in enumerate(blocks):
                self._assistant_block(block, f"{key}.{j}", acts, common, first)
            return
        texts, parts = [], []
        for j, block in enumerate(blocks):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "tool_result":
                rest = {k: v for k, v in block.items() if k not in ("type", "tool_use_id", "content", "is_error")}
                rest["content_parts"] = other_parts(block.get("content"))
                rest["attachments"] = image_attachments(block.get("content"))
                self.result(
                    f"{key}.{j}",
                    block.get("tool_use_id"),
                    block.get("content"),
                    block.get("is_error") is True,
                    common,
                    first,
                    meta=rest,
                )
            elif kind == "text":
                texts.append(block.get("text") or "")
                rest = {k: v for k, v in block.items() if k not in ("type", "text")}
                if rest:
                    parts.append(rest)
            else:
                parts.append(block)
        if texts or parts:
            meta = {"role": role, "content_parts": other_parts(parts), "attachments": image_attachments(parts)}
            self.add(key, "input", {**common, "content": "\n".join(texts), "metadata": meta}, first)

    def _assistant_block(self, block: Any, key: str, acts: bool, common: dict, first: dict) -> None:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "thinking":
            meta = {k: v for k, v in block.items() if k not in ("type", "thinking")}
            self.add(key, "think", {**common, "content": block.get("thinking") or "", "metadata": meta}, first)
        elif kind == "redacted_thinking":
            self.add(key, "think", {**common, "content": "", "metadata": {"redacted_thinking": block.get("data")}}, first)
        elif kind == "text":
            meta = {k: v for k, v in block.items() if k not in ("type", "text")}
            self.add(
                key, "think" if acts else "decision", {**common, "content": block.get("text") or "", "metadata": meta}, first
            )
        elif kind in ("tool_use", "server_tool_use"):
            meta = {k: v for k, v in block.items() if k not in ("type", "id", "name", "input")}
            meta["server_tool"] = kind == "server_tool_use" or None
            self.call(key, block.get("name"), block.get("input"), block.get("id"), common, first, meta=meta)
        elif isinstance(kind, str) and kind.endswith("_tool_result"):
            meta = {"block_type": kind, **{k: v for k, v in block.items() if k not in ("type", "tool_use_id", "content")}}
            content = block.get("content")
            self.result(
                key,
                block.get("tool_use_id"),
                content if isinstance(content, str | list) else orjson.dumps(content).decode(),
                False,
                common,
                first,
                meta=meta,
            )
        else:
            self.add(key, "observation", {**common, "content": "", "metadata": {"block": block}}, first)


_OPENAI_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name", "function_call", "reasoning_content"})
TIME_KEYS = ("created_at", "timestamp", "ts")  # `ts`: Cline / Roo Code's epoch milliseconds


def _model_of(msg: dict) -> str | None:
    """`model`, or Cline's `modelInfo.modelId`."""
    for value in (
        msg.get("model"),
        (msg.get("modelInfo") or {}).get("modelId") if isinstance(msg.get("modelInfo"), dict) else None,
    ):
        if isinstance(value, str) and value:
            return value
    return None


def _tokens_of(msg: dict) -> dict[str, Any]:
    """Cline's `metrics.tokens` {prompt, completion}, as the message's first step's tokens."""
    tokens = (msg.get("metrics") or {}).get("tokens") if isinstance(msg.get("metrics"), dict) else None
    if not isinstance(tokens, dict):
        return {}
    counts = {"tokens_in": tokens.get("prompt"), "tokens_out": tokens.get("completion")}
    return {k: v for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool) and v >= 0}


def promoted(msg: dict) -> tuple[dict, dict[str, Any], dict[str, Any]]:
    """A message's own model, time (and, as Cline writes them, tokens), lifted out of it to be its steps'
    fields rather than metadata: (the message without them, fields of every step it makes — time and
    model —, fields of its first step — tokens)."""
    model, tokens = _model_of(msg), _tokens_of(msg)
    when = next((t for key in TIME_KEYS if (t := parse_time(msg.get(key))) is not None), None)
    if model is None and when is None and not tokens:
        return msg, {}, {}
    taken = (
        ({"model", "modelInfo"} if model else set()) | (set(TIME_KEYS) if when else set()) | ({"metrics"} if tokens else set())
    )
    rest = {k: v for k, v in msg.items() if k not in taken}
    return rest, ({"timestamp": when} if when else {}) | ({"model": model} if model else {}), tokens


def map_promoted(dialect: Dialect, conv: Conversation, msg: Any, key: str) -> None:
    """One message of a list, its model and time promoted; the run takes the first model and the span of times."""
    rest, common, first = promoted(msg) if isinstance(msg, dict) else (msg, {}, {})
    dialect.map(conv, rest, key, common, first)
    session = conv.run.session
    if "model" in common:
        session.setdefault("model", common["model"])
    if "timestamp" in common:
        when = common["timestamp"]
        session["started_at"] = min(session.get("started_at") or when, when)
        session["ended_at"] = max(session.get("ended_at") or when, when)


# ---------------------------------------------------------------------- request/response logs


@dataclass
class Reply:
    """What a provider answered to one request."""

    message: dict | None = None
    model: str | None = None
    response_id: str | None = None
    created: datetime | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    error_class: str | None = None
    error: str | None = None


class Dialect(Protocol):
    """What differs between providers: message shape, where the history is, how replies look."""

    name: str

    def map(self, conv: Conversation, msg: dict, key: str, common: dict | None = None, first: dict | None = None) -> None: ...

    def history(self, request: dict) -> list[dict]: ...

    def reply(self, response: Any, status: int | None) -> Reply: ...

    def is_messages(self, obj: Any) -> bool: ...


@dataclass
class Exchange:
    request: dict
    reply: Reply | None
    where: str
    when: datetime | None = None


def _signature(msg: dict) -> tuple:
    """What identifies a message when a later request repeats it (fields may be re-serialised)."""
    content = msg.get("content")
    ids = [c.get("id") for c in msg.get("tool_calls") or [] if isinstance(c, dict)]
    if isinstance(content, list):
        ids += [
            b.get("id") or b.get("tool_use_id")
            for b in content
            if isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result")
        ]
    ids.append(msg.get("tool_call_id"))
    return msg.get("role"), (text_of(content) or "").strip(), tuple(i for i in ids if i)


_REQUEST_SKIP = ("messages", "model", "tools", "system")


def exchange_runs(dialect: Dialect, exchanges: list[Exchange], new_id: Callable[[int], str], where: str) -> list[Run]:
    """Runs from request/response pairs, a request continuing the run whose transcript it repeats."""
    runs: list[Run] = []
    conv: Conversation | None = None  # the run being extended, through its conversation
    transcript: list[tuple] = []
    for ex in exchanges:
        history = dialect.history(ex.request)
        sigs = [_signature(m) for m in history]
        reply = ex.reply or Reply()
        when = reply.created or ex.when
        if conv is None or sigs[: len(transcript)] != transcript or len(sigs) < len(transcript):
            model = reply.model or ex.request.get("model")
            conv = Conversation(
                Run(
                    reply.response_id or new_id(len(runs)),
                    ex.where,
                    model=model,
                    started_at=when,
                    metadata=compact({"tools": ex.request.get("tools")}),
                )
            )
            transcript = []
            runs.append(conv.run)
        run = conv.run
        for i in range(len(transcript), len(history)):
            map_promoted(dialect, conv, history[i], f"m{i}")
        transcript = sigs
        params = {k: v for k, v in ex.request.items() if k not in _REQUEST_SKIP}
        first = {
            "model": reply.model or ex.request.get("model"),
            "tokens_in": reply.tokens_in,
            "tokens_out": reply.tokens_out,
            "metadata": compact({**reply.meta, "request": params or None, "response_id": reply.response_id}),
        }
        n = len(history)
        if reply.message is not None:
            dialect.map(conv, reply.message, f"m{n}", {"timestamp": when}, first)
            transcript = sigs + [_signature(reply.message)]
        if reply.error_class:
            run.step(
                f"m{n}.error",
                "error",
                content=reply.error,
                status="error",
                error_class=reply.error_class,
                timestamp=when,
                model=first["model"],
                metadata=first["metadata"],
            )
            run.finish("failed", outcome=reply.error, error_class=reply.error_class, ended_at=when)
        elif run.end is not None:
            run.end = None  # a later request carried on after a failed one: the run is not over
    return runs


def _records(data: bytes, filename: str, path_fragment: bytes) -> Iterator[_Unread | list | BadRecord | Ignored | Records]:
    """Exchanges of a cassette or log file, or the one message list of a transcript file."""
    if is_cassette(data[:4096], b"interactions") and path_fragment in data:
        interactions = read_cassette(data, filename)
        yield Records(len(interactions), "interactions")
        for item in interactions:
            yield _exchange_of_interaction(item)
        return
    if is_json_lines(data):
        for line in json_lines(data, filename):
            if isinstance(line, BadRecord):
                yield line
            else:
                yield _exchange_of_record(line[1], f"{filename}:{line[0]}")
        return
    doc = load_json(data, filename)
    if isinstance(doc, list) and doc and all(isinstance(m, dict) and "role" in m for m in doc):
        yield doc
    elif isinstance(doc, list):
        for i, rec in enumerate(doc):
            yield _exchange_of_record(rec, f"{filename}:[{i}]")
    else:
        yield _exchange_of_record(doc, filename)


@dataclass
class _Unread:
    """An exchange whose response body no dialect has read yet (the reply's shape depends on the provider)."""

    request: dict
    body: Any
    status: int | None
    where: str
    when: datetime | None = None


def _exchange_of_interaction(item: Interaction) -> _Unread | BadRecord:
    if not isinstance(item.request, dict):
        return BadRecord(item.where, "request body: expected a JSON object")
    return _Unread(item.request, item.response, item.status, item.where, item.date)


def _exchange_of_record(rec: Any, where: str) -> _Unread | BadRecord | Ignored:
    if not isinstance(rec, dict):
        return BadRecord(where, f"expected a JSON object, got {type(rec).__name__}")
    if isinstance(rec.get("request"), dict):
        return _Unread(rec["request"], rec.get("response"), rec.get("status"), where)
    if "messages" in rec:
        request = {k: v for k, v in rec.items() if k != "response"}
        return _Unread(request, rec.get("response"), None, where)
    if _is_response(rec):
        return _Unread({}, rec, None, where)
    return Ignored(where, kind_of(rec), known=False)  # neither a request nor a reply: not ours to guess at


def _is_response(rec: dict) -> bool:
    """A provider's reply by itself: OpenAI `choices`, an Anthropic `message`, or an error body."""
    if isinstance(rec.get("choices"), list) or isinstance(rec.get("error"), dict) or rec.get("type") == "error":
        return True
    return rec.get("type") == "message" and rec.get("role") == "assistant" and "content" in rec


def read_chat(
    dialect: Dialect, data: bytes, filename: str, path_fragment: bytes
) -> Iterator[Event | BadRecord | Ignored | Records]:
    """Events of a transcript (one message list), a request/response log, or a cassette."""
    records = list(_records(data, filename, path_fragment))
    base = stable_id(filename, data)
    new_id = lambda n: f"{base}-{n}" if n else base  # noqa: E731
    exchanges: list[Exchange] = []
    for rec in records:
        if isinstance(rec, BadRecord | Ignored | Records):
            yield rec
        elif isinstance(rec, list):
            if not dialect.is_messages(rec):
                yield BadRecord(filename, f"not a {dialect.name} message list")
                return
            run = Run(new_id(0), filename)
            conv = Conversation(run)
            for i, msg in enumerate(rec):
                map_promoted(dialect, conv, msg, f"m{i}")
            yield from run.events()
        else:
            reply = dialect.reply(rec.body, rec.status) if rec.body is not None else None
            if reply is None and not dialect.history(rec.request):
                yield BadRecord(rec.where, f"neither a request with messages nor a {dialect.name} response")
                continue
            exchanges.append(Exchange(rec.request, reply, rec.where, rec.when))
    for run in exchange_runs(dialect, exchanges, new_id, filename):
        yield from run.events()

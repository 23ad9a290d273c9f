"""Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`).

Each line is one record; records with a `uuid` form a tree through `parentUuid`. A session
is one `sessionId`. Lines are put in order parent-before-child, earliest timestamp first
(parallel tool results hang off different assistant lines, so neither a plain chain walk nor
file order alone is right). One API message is written as several lines sharing
`message.id` (one content block a line, `apiBlockIndex`), each repeating the usage: tokens
are counted once, on the message's first step, with cache reads and writes in `tokens_in`.
While a message streams, its earlier lines carry the output count so far (2.0.x writes 1 on
the text line and 339 on the tool_use line of the same message): the count kept is the
message's final one, the largest `output_tokens` of its lines.

Sub-agents: lines with `isSidechain: true` inside the parent's file become one `span` step
per `agentId`, placed before the tool result that returned the sub-agent's answer, with the
sub-agent's steps as its children (`parent_id`). A separate sub-agent file
(`agent-<id>.jsonl`, `<session>/subagents/agent-*.jsonl`) holds only sidechain lines: it
becomes its own session `<sessionId>/agent-<agentId>`, linked to the parent by
`metadata.parent_session`. A transcript never records an outcome: sessions end `unknown`,
or `failed` when the last turn is an API error.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .chat_messages import image_attachments, other_parts, text_of
from .jsondoc import as_object, has_key, json_objects, starts_json
from .reader import BadRecord, Event, Ignored
from .runs import Run, compact, parse_time

ENTRY_TYPES = frozenset({"user", "assistant"})
IGNORED_TYPES = frozenset(
    {"queue-operation", "last-prompt", "atis-latch", "progress", "file-history-snapshot", "agent-name", "pr-link", "tag", "mode"}
)
SESSION_KEYS = ("cwd", "gitBranch", "entrypoint", "userType")


class _Line:
    __slots__ = ("n", "rec", "when", "key")

    def __init__(self, n: int, rec: dict):
        self.n, self.rec = n, rec
        self.when = parse_time(rec.get("timestamp"))
        self.key = (self.when.timestamp() if self.when else float("inf"), n)


def _ordered(lines: list[_Line]) -> list[_Line]:
    """Parents before children, earliest (timestamp, line) first among the ready ones."""
    by_uuid = {str(ln.rec["uuid"]): ln for ln in lines}
    children: dict[str, list[_Line]] = {}
    ready: list[tuple[tuple, _Line]] = []
    for ln in lines:
        parent = ln.rec.get("parentUuid")
        if isinstance(parent, str) and parent in by_uuid and parent != ln.rec["uuid"]:
            children.setdefault(parent, []).append(ln)
        else:
            ready.append((ln.key, ln))
    heapq.heapify(ready)
    out: list[_Line] = []
    while ready:
        _, ln = heapq.heappop(ready)
        out.append(ln)
        for child in children.pop(str(ln.rec["uuid"]), ()):
            heapq.heappush(ready, (child.key, child))
    if len(out) < len(lines):  # a parentUuid cycle: what it holds follows in (time, line) order
        seen = {id(ln) for ln in out}
        out += sorted((ln for ln in lines if id(ln) not in seen), key=lambda ln: ln.key)
    return out


def _usage(usage: Any) -> dict[str, Any]:
    if not isinstance(usage, dict):
        return {}
    counts = [usage.get(k) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    ints = [c for c in counts if isinstance(c, int) and not isinstance(c, bool) and c >= 0]
    out = usage.get("output_tokens")
    raw = {k: usage.get(k) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")}
    return {
        "tokens_in": sum(ints) if ints else None,
        "tokens_out": out if isinstance(out, int) and not isinstance(out, bool) and out >= 0 else None,
        "metadata": {"usage": compact(raw)},
    }


class _Session:
    """The steps of one sessionId (its main chain and its inline sub-agents)."""

    def __init__(self, run: Run, filename: str, usage: dict[str, dict]):
        self.run, self.filename = run, filename
        self.usage = usage  # message id -> its final usage (see _final_usage)
        self.counted: set[str] = set()  # message ids whose usage is already on a step
        self.calls: dict[str, str | None] = {}  # tool_use id -> event id of its tool_call step
        self.tool_names: dict[str, str] = {}
        self.models: list[str] = []
        self.last_error = False

    def entry(self, ln: _Line, msg_blocks: dict[str, set], parent: str | None, agent: str | None) -> None:
        rec = ln.rec
        where = f"{self.filename}:{ln.n}"
        msg = rec.get("message")
        if not isinstance(msg, dict):
            self.run.errors.append(BadRecord(where, f"{rec['type']} line without a message object"))
            return
        uuid = str(rec["uuid"])
        common = {"where": where, "timestamp": ln.when, "parent_id": parent, "agent_id": agent}
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            self.run.errors.append(BadRecord(where, "message.content: expected text or a list of blocks"))
            return
        if rec["type"] == "assistant":
            self._assistant(rec, msg, blocks, uuid, common, msg_blocks)
        else:
            self._user(rec, blocks, uuid, common)

    def _assistant(self, rec: dict, msg: dict, blocks: list, uuid: str, common: dict, msg_blocks: dict[str, set]) -> None:
        mid = msg.get("id")
        model = msg.get("model") if isinstance(msg.get("model"), str) else None
        first: dict[str, Any] = {}
        if not (isinstance(mid, str) and mid in self.counted):
            first = _usage(self.usage.get(mid, msg.get("usage")) if isinstance(mid, str) else msg.get("usage"))
            if isinstance(mid, str):
                self.counted.add(mid)
        meta = {
            "message_id": mid,
            "request_id": rec.get("requestId"),
            "stop_reason": msg.get("stop_reason"),
            "api_block_index": rec.get("apiBlockIndex"),
        }
        if rec.get("isApiErrorMessage") or model == "<synthetic>" and rec.get("error"):
            self.run.step(
                uuid,
                "error",
                content=text_of([b for b in blocks if isinstance(b, dict)]) or "API error",
                status="error",
                error_class=str(rec.get("error") or "api_error"),
                metadata=meta,
                **common,
            )
            self.last_error = True
            return
        if model and model != "<synthetic>":
            self.models.append(model)
        stop = msg.get("stop_reason")
        if isinstance(stop, str):  # on every line of the message: known from this line alone (a file still being written)
            calls_tools = stop == "tool_use"
        elif isinstance(mid, str):  # older transcripts: from the message's other lines
            calls_tools = "tool_use" in msg_blocks.get(mid, ())
        else:
            calls_tools = any(isinstance(b, dict) and b.get("type") == "tool_use" for b in blocks)
        for i, block in enumerate(blocks):
            if not isinstance(block, dict):
                self.run.errors.append(BadRecord(common["where"], f"message.content[{i}]: expected a block object"))
                continue
            kind = block.get("type")
            fields: dict[str, Any] = {**common, "model": model, "metadata": {**meta, **first.pop("metadata", {})}}
            fields.update(first)
            first = {}
            key = f"{uuid}.{i}"
            if kind == "thinking":
                self.run.step(key, "think", content=str(block.get("thinking") or ""), **fields)
            elif kind == "redacted_thinking":
                fields["metadata"]["redacted_thinking"] = True
                self.run.step(key, "think", content="", **fields)
            elif kind == "text":
                self.run.step(key, "think" if calls_tools else "decision", content=str(block.get("text") or ""), **fields)
            elif kind in ("tool_use", "server_tool_use"):
                call_id = block.get("id") if isinstance(block.get("id"), str) else None
                name = block.get("name") if isinstance(block.get("name"), str) else None
                step = self.run.step(
                    key, "tool_call", tool_name=name, tool_args=block.get("input"), tool_call_id=call_id, **fields
                )
                if step is not None and call_id:
                    self.calls[call_id] = step.event_id
                    self.tool_names[call_id] = name or ""
            else:
                fields["metadata"]["block"] = block
                self.run.step(key, "observation", content=text_of(block.get("content")) if "content" in block else "", **fields)
        self.last_error = False

    def _user(self, rec: dict, blocks: list, uuid: str, common: dict) -> None:
        texts: list[str] = []
        for i, block in enumerate(blocks):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                self._result(rec, block, f"{uuid}.{i}", common)
            elif isinstance(block, dict) and block.get("type") == "text" or isinstance(block, str):
                texts.append(block if isinstance(block, str) else str(block.get("text") or ""))
            elif not isinstance(block, dict):
                self.run.errors.append(BadRecord(common["where"], f"message.content[{i}]: expected a block object"))
        parts = other_parts(blocks)
        parts = [p for p in parts or () if isinstance(p, dict) and p.get("type") != "tool_result"]
        if texts or parts:
            meta = {
                "role": "user",
                "is_meta": rec.get("isMeta") or None,
                "prompt_id": rec.get("promptId"),
                "content_parts": parts or None,
                "attachments": image_attachments(blocks),
            }  # pasted images
            self.run.step(uuid, "input", content="\n".join(texts), metadata=meta, **common)
        self.last_error = False

    def _result(self, rec: dict, block: dict, key: str, common: dict) -> None:
        call_id = block.get("tool_use_id") if isinstance(block.get("tool_use_id"), str) else None
        content = block.get("content")
        result = rec.get("toolUseResult")
        images = image_attachments(content)
        result, mirrored = _image_moved(result)
        meta = {
            "tool_use_result": result,
            "source_tool_assistant_uuid": rec.get("sourceToolAssistantUUID"),
            "content_parts": other_parts(content) if isinstance(content, list) else None,
            "attachments": images or ([mirrored] if mirrored else None),
        }  # a screenshot, an image Read
        fields: dict[str, Any] = {
            **common,
            "tool_call_id": call_id,
            "tool_name": self.tool_names.get(call_id or "") or None,
            "content": text_of(content) if content is not None else "",
            "metadata": meta,
        }
        if block.get("is_error") is True:
            fields["status"] = "error"
        self.run.step(key, "tool_result", **fields)


def _image_moved(result: Any) -> tuple[Any, dict | None]:
    """`toolUseResult` of an image (Read of a picture) repeats the result's base64 under `file.base64`:
    the copy kept in metadata says where the bytes went; the image itself, as a native attachment."""
    file = result.get("file") if isinstance(result, dict) and result.get("type") == "image" else None
    if not isinstance(file, dict) or not isinstance(file.get("base64"), str):
        return result, None
    image = {"media_type": file.get("type") if isinstance(file.get("type"), str) else None, "data": file["base64"]}
    return {**result, "file": {**file, "base64": {"moved_to": "attachments"}}}, image


def _session_fields(lines: list[_Line]) -> dict[str, Any]:
    first = next((ln.rec for ln in lines if ln.rec.get("type") in ENTRY_TYPES), lines[0].rec)
    version = next((ln.rec["version"] for ln in reversed(lines) if isinstance(ln.rec.get("version"), str)), None)
    return {"agent_version": version, "meta": {k: first.get(k) for k in SESSION_KEYS if isinstance(first.get(k), str)}}


def _build(session_id: str, lines: list[_Line], extra: dict, filename: str, child_of: str | None) -> Run:
    fields = _session_fields(lines)
    meta = {**fields["meta"], **extra.get("meta", {})}
    if child_of:
        meta["parent_session"] = child_of
    entries = [ln for ln in lines if isinstance(ln.rec.get("uuid"), str) and ln.rec.get("type") in ENTRY_TYPES]
    times = [ln.when for ln in lines if ln.when]
    run = Run(
        session_id,
        filename,
        agent_id="claude-code" if not child_of else f"claude-code/{session_id.rsplit('/', 1)[-1]}",
        agent_version=fields["agent_version"],
        started_at=min(times) if times else None,
        tags=["subagent"] if child_of else None,
        metadata=compact(meta),
    )
    state = _Session(run, filename, _final_usage(entries))
    msg_blocks: dict[str, set] = {}
    for ln in entries:
        msg = ln.rec.get("message")
        if (
            isinstance(msg, dict)
            and not isinstance(msg.get("stop_reason"), str)
            and isinstance(msg.get("id"), str)
            and isinstance(msg.get("content"), list)
        ):  # only lines that do not say why the message stopped ask it
            msg_blocks.setdefault(msg["id"], set()).update(b.get("type") for b in msg["content"] if isinstance(b, dict))
    main = [ln for ln in entries if child_of or not ln.rec.get("isSidechain")]
    agents: dict[str, list[_Line]] = {}
    for ln, sub_agent in _owners([ln for ln in entries if not child_of and ln.rec.get("isSidechain")]):
        agents.setdefault(sub_agent, []).append(ln)
    placed: set[str] = set()
    for ln in _ordered(main):
        owner = ln.rec.get("agentId")
        if not child_of and isinstance(owner, str) and owner in agents and owner not in placed and ln.rec.get("type") == "user":
            placed.add(owner)
            _subagent(state, owner, agents[owner], msg_blocks, _result_ids(ln.rec))
        state.entry(ln, msg_blocks, None, None)
    for owner, group in agents.items():
        if owner not in placed:
            _subagent(state, owner, group, msg_blocks, [])
    models = state.models
    run.session["model"] = max(set(models), key=models.count) if models else None
    title = extra.get("title") or extra.get("summary")
    if not title:
        prompt = next(
            (s.content for s in run.steps if s.type == "input" and s.content and not (s.metadata or {}).get("is_meta")), None
        )
        title = prompt[:200] if prompt else None
    run.session["name"] = title
    last = max(times) if times else None
    if state.last_error:
        err = run.steps[-1]
        run.finish("failed", outcome=err.content, error_class=err.error_class, ended_at=last)
    else:
        run.finish("unknown", ended_at=last)
    return run


def _final_usage(entries: list[_Line]) -> dict[str, dict]:
    """Each message id's usage with the largest output count (the latest line on a tie): the
    message's final count, where its first lines hold a streaming partial one."""
    best: dict[str, tuple[int, dict]] = {}
    for ln in entries:
        msg = as_object(ln.rec.get("message"))
        usage = msg.get("usage")
        if isinstance(usage, dict) and isinstance(msg.get("id"), str):
            out = usage.get("output_tokens")
            out = out if isinstance(out, int) and not isinstance(out, bool) else -1
            if msg["id"] not in best or out >= best[msg["id"]][0]:
                best[msg["id"]] = (out, usage)
    return {mid: usage for mid, (_, usage) in best.items()}


def _owners(side: list[_Line]) -> Iterator[tuple[_Line, str]]:
    """The sub-agent of each sidechain line: its `agentId`, else its nearest ancestor's, else the
    session's only sub-agent (older transcripts write `agentId` on some lines only), else "sidechain"."""
    by_uuid = {ln.rec["uuid"]: ln for ln in side}
    named = {ln.rec["agentId"] for ln in side if isinstance(ln.rec.get("agentId"), str)}
    only = next(iter(named)) if len(named) == 1 else "sidechain"
    for ln in side:
        cur: _Line | None = ln
        hops = 0
        while cur is not None and not isinstance(cur.rec.get("agentId"), str) and hops < len(side):
            cur, hops = by_uuid.get(cur.rec.get("parentUuid")), hops + 1
        yield ln, cur.rec["agentId"] if cur is not None and isinstance(cur.rec.get("agentId"), str) else only


def _result_ids(rec: dict) -> list[str]:
    content = (rec.get("message") or {}).get("content") if isinstance(rec.get("message"), dict) else None
    return (
        [b["tool_use_id"] for b in content or () if isinstance(b, dict) and isinstance(b.get("tool_use_id"), str)]
        if isinstance(content, list)
        else []
    )


def _subagent(state: _Session, owner: str, lines: list[_Line], msg_blocks: dict[str, set], returned_by: list[str]) -> None:
    """One span for an inline sub-agent, child of the tool call it answered; its steps are the span's children."""
    ordered = _ordered(lines)
    first = ordered[0]
    result_of = first.rec
    call_parent = next((state.calls[c] for c in returned_by if c in state.calls), None)
    span = state.run.step(
        f"agent-{owner}",
        "span",
        where=f"{state.filename}:{first.n}",
        timestamp=first.when,
        parent_id=call_parent,
        agent_id=f"subagent-{owner}",
        content=f"sub-agent {owner}",
        metadata={"agent_id": owner, "sidechain": True, "cwd": result_of.get("cwd")},
    )
    parent = span.event_id if span is not None else None
    for ln in ordered:
        state.entry(ln, msg_blocks, parent, f"subagent-{owner}")


def _agent_of(filename: str) -> str | None:
    stem = Path(filename).name.split(".")[0]
    return stem[len("agent-") :] if stem.startswith("agent-") else None


class ClaudeCodeFormat:
    name = "claude_code"
    label = "Claude Code session transcripts (~/.claude/projects/*/*.jsonl)"

    def sniff(self, head: bytes, filename: str) -> bool:
        if not starts_json(head) or not has_key(head, "sessionId"):
            return False
        return has_key(head, "parentUuid") or has_key(head, "leafUuid") or has_key(head, "isSidechain")

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored]:
        sessions: dict[str, list[_Line]] = {}
        extras: dict[str, dict] = {}
        summaries: list[tuple[int, dict]] = []
        for item in json_objects(data, filename, "type"):
            if isinstance(item, BadRecord):
                yield item
                continue
            n, rec = item
            where, kind = f"{filename}:{n}", rec["type"]
            if kind == "summary":
                summaries.append((n, rec))
                continue
            if kind in IGNORED_TYPES:  # bookkeeping, skipped on purpose; a file-history-snapshot has no sessionId
                yield Ignored(where, kind)
                continue
            sid = rec.get("sessionId")
            if not isinstance(sid, str) or not sid:
                yield BadRecord(where, f"{kind} line without a sessionId")
                continue
            if kind in ENTRY_TYPES:
                if not isinstance(rec.get("uuid"), str):
                    yield BadRecord(where, f"{kind} line without a uuid")
                    continue
                sessions.setdefault(sid, []).append(_Line(n, rec))
            elif kind == "custom-title" and isinstance(rec.get("customTitle"), str):
                extras.setdefault(sid, {})["title"] = rec["customTitle"]
                sessions.setdefault(sid, [])
            elif kind in ("system", "attachment"):
                sub = (
                    rec.get("subtype")
                    if kind == "system"
                    else (rec.get("attachment") or {}).get("type")
                    if isinstance(rec.get("attachment"), dict)
                    else None
                )
                if isinstance(rec.get("uuid"), str):  # part of the parentUuid chain: kept for ordering, not a step
                    sessions.setdefault(sid, []).append(_Line(n, rec))
                yield Ignored(where, f"{kind}/{sub}" if sub else kind)
            else:
                yield Ignored(where, kind, known=False)  # a line type this reader does not know
        uuids = {ln.rec.get("uuid"): sid for sid, lines in sessions.items() for ln in lines} if summaries else {}
        for n, rec in summaries:
            sid = uuids.get(rec.get("leafUuid"))
            if sid and isinstance(rec.get("summary"), str):
                extras.setdefault(sid, {}).setdefault("summary", rec["summary"])
            else:
                yield Ignored(f"{filename}:{n}", "summary")
        agent = _agent_of(filename)
        for sid, lines in sessions.items():
            if not any(ln.rec.get("type") in ENTRY_TYPES for ln in lines):
                continue
            extra = extras.get(sid, {})
            all_side = all(ln.rec.get("isSidechain") for ln in lines if ln.rec.get("type") in ENTRY_TYPES)
            if all_side and (agent or any(ln.rec.get("agentId") for ln in lines)):
                owner = agent or next(str(ln.rec["agentId"]) for ln in lines if ln.rec.get("agentId"))
                yield from _build(f"{sid}/agent-{owner}", lines, extra, filename, sid).events()
            else:
                yield from _build(sid, lines, extra, filename, None).events()


FORMAT = ClaudeCodeFormat()

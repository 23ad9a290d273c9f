"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`), one session a file.

Every line is `{timestamp, type, payload}` (0.154 adds `ordinal`). `response_item`s are what
the model saw and said: messages (user/developer → input, assistant → think, or decision
for a final answer), reasoning (summary text → think), `function_call`/`custom_tool_call`
→ tool_call and their `*_output` → tool_result, paired by `call_id` (a call with no output
yet stays a call, marked pending). Exit codes come from `exec_command_end`, from the
JSON-encoded output `{"output", "metadata": {"exit_code"}}`, or (0.154) from the
`item_completed` CommandExecution item completed while the call was open.

`token_count` totals are cumulative and written more than once: the last total of each turn,
less the previous turn's, is that turn's usage, put on the turn's first model step
(`metadata.usage.scope = "turn"`; never summed); the last total is kept in the session's
metadata. (Per response is not safe: 0.47 writes a response's count before its items, 0.154 after.)
`event_msg`s that repeat a response item (agent_reasoning, agent_message, user_message,
item_completed UserMessage/AgentMessage/Reasoning, token_usage_record) are Ignored as
duplicates. `task_started`/`task_complete` (or, in older rollouts, a user message) open
and close turns; `turn_context` gives the model and reasoning effort of what follows.
A rollout records no outcome: the session ends `unknown` (`failed` when it ends on an error).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from .chat_messages import text_of
from .jsondoc import as_array, as_object, first_record, has_key, json_objects, parse_arguments, starts_json
from .reader import BadRecord, Event, Ignored
from .runs import Run, compact, parse_time, stable_id

DUPLICATE_EVENTS = frozenset(
    {"agent_reasoning", "agent_message", "user_message", "agent_reasoning_raw_content", "agent_reasoning_section_break"}
)
DUPLICATE_ITEMS = frozenset({"UserMessage", "AgentMessage", "Reasoning"})
CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
CONTEXT_PREFIXES = ("<", "# AGENTS.md")  # context Codex injects as user messages, not prompts
USAGE_KEYS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "total_tokens",
)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _output(raw: Any) -> tuple[str, int | None, dict | None]:
    """A call output's text, its exit code when the output carries one, and its metadata."""
    if isinstance(raw, list):
        return text_of(raw) or "", None, None
    if isinstance(raw, dict):
        meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else None
        return text_of(raw.get("output") or raw.get("content")) or "", _int((meta or {}).get("exit_code")), meta
    if isinstance(raw, str) and raw.startswith("{"):
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw, None, None
        if isinstance(doc, dict) and "output" in doc:
            return _output(doc)
    return raw if isinstance(raw, str) else text_of(raw) or "", None, None


class _Rollout:
    def __init__(self, run: Run, filename: str):
        self.run, self.filename = run, filename
        self.specs: list[dict[str, Any]] = []  # steps, kept open until the file is read (exit codes arrive late)
        self.calls: dict[str, dict] = {}  # call_id -> its tool_call spec
        self.results: dict[str, dict] = {}  # call_id -> its tool_result spec
        self.exits: dict[str, int] = {}  # call_id -> exit code from exec_command_end / CommandExecution
        self.open_calls: list[str] = []
        self.model: str | None = None
        self.effort: str | None = None
        self.turn = 0
        self.turn_id: str | None = None
        self.tasks = False  # whether the rollout marks turns with task_started
        self.total: dict[str, int] = {}
        self.turn_totals: dict[int, dict[str, int]] = {}  # turn -> its last cumulative total
        self.last_kind: str | None = None

    def add(self, key: str, type: str, where: str, when, model_step: bool = False, **fields: Any) -> dict:
        meta = fields.pop("metadata", None) or {}
        meta.update({"turn": self.turn, "turn_id": self.turn_id})
        spec = {"key": key, "type": type, "where": where, "timestamp": when, "metadata": meta, **fields}
        if model_step:
            spec["model"] = self.model
            meta["reasoning_effort"] = self.effort
        self.specs.append(spec)
        self.last_kind = type
        return spec

    def response_item(self, p: dict, key: str, where: str, when) -> None:
        kind = p.get("type")
        if kind == "message":
            role = p.get("role")
            text = text_of(p.get("content")) or ""
            meta = {"message_id": p.get("id"), "phase": p.get("phase")}
            if role == "assistant":
                final = p.get("phase") == "final_answer" or p.get("phase") is None
                self.add(key, "decision" if final else "think", where, when, True, content=text, metadata=meta)
            else:
                if role == "user" and not self.tasks and not text.lstrip().startswith(CONTEXT_PREFIXES):
                    self.turn += 1  # older rollouts have no task_started: a user prompt opens the turn
                self.add(key, "input", where, when, content=text, metadata={"role": role, **meta})
        elif kind == "reasoning":
            summary = as_array(p.get("summary"))
            parts = [t for s in summary if isinstance(t := as_object(s).get("text"), str)]
            parts += [t for c in as_array(p.get("content")) if isinstance(t := as_object(c).get("text"), str)]
            self.add(
                key,
                "think",
                where,
                when,
                True,
                content="\n\n".join(parts),
                metadata={"reasoning": True, "encrypted": bool(p.get("encrypted_content")) or None, "item_id": p.get("id")},
            )
        elif kind in CALLS:
            call_id = p.get("call_id") if isinstance(p.get("call_id"), str) else None
            if kind == "function_call":
                args = parse_arguments(p.get("arguments"))
            elif kind == "custom_tool_call":
                args = {"input": p.get("input")}
            else:
                args = p.get("action")
            name = p.get("name") if isinstance(p.get("name"), str) else kind.removesuffix("_call")
            spec = self.add(
                key,
                "tool_call",
                where,
                when,
                True,
                tool_name=name,
                tool_args=args,
                tool_call_id=call_id,
                metadata={"call_kind": kind, "call_status": p.get("status"), "item_id": p.get("id")},
            )
            if call_id:
                self.calls[call_id] = spec
                self.open_calls.append(call_id)
        elif kind in OUTPUTS:
            call_id = p.get("call_id") if isinstance(p.get("call_id"), str) else None
            text, code, output_meta = _output(p.get("output"))
            call = self.calls.get(call_id or "")
            spec = self.add(
                key,
                "tool_result",
                where,
                when,
                tool_call_id=call_id,
                tool_name=call["tool_name"] if call else None,
                content=text,
                metadata={"exit_code": code, "output_metadata": output_meta, "item_id": p.get("id")},
            )
            if code is not None:
                spec["_exit"] = code
            if call_id:
                self.results[call_id] = spec
                if call_id in self.open_calls:
                    self.open_calls.remove(call_id)
        else:
            self.add(key, "observation", where, when, content=text_of(p.get("content")) or "", metadata={"item": p})

    def token_count(self, p: dict) -> bool:
        """Keep the turn's latest cumulative total; False when the record holds no total or goes backwards."""
        info = p.get("info")
        total = info.get("total_token_usage") if isinstance(info, dict) else None
        if not isinstance(total, dict):
            return False
        now = {k: _int(total.get(k)) or 0 for k in USAGE_KEYS}
        if any(now[k] < self.total.get(k, 0) for k in USAGE_KEYS):
            return False
        self.total = now
        self.turn_totals[self.turn] = now
        return True

    def price(self) -> None:
        """Each turn's usage (its last total less the previous turn's) on the turn's first model step."""
        before: dict[str, int] = {}
        firsts: dict[int, dict] = {}
        for spec in self.specs:
            if "model" in spec:
                firsts.setdefault(spec["metadata"]["turn"], spec)
        for turn, total in sorted(self.turn_totals.items()):
            delta = {k: total[k] - before.get(k, 0) for k in USAGE_KEYS}
            target = firsts.get(turn)
            if target is not None and any(delta.values()):
                target["tokens_in"], target["tokens_out"] = delta["input_tokens"], delta["output_tokens"]
                target["metadata"]["usage"] = {**delta, "scope": "turn"}
                before = total

    def command_done(self, item: dict) -> None:
        """A CommandExecution/FileChange completed while a call was open: its exit code is that call's."""
        code = _int(item.get("exit_code"))
        failed = item.get("status") == "failed"
        if self.open_calls and (code is not None or failed):
            call_id = self.open_calls[-1]
            self.exits[call_id] = code if code is not None else max(self.exits.get(call_id, 0), 1)

    def steps(self) -> None:
        self.price()
        for spec in self.specs:
            fields = {k: v for k, v in spec.items() if not k.startswith("_") and k not in ("key", "type")}
            call_id = spec.get("tool_call_id")
            if spec["type"] == "tool_result":
                code = self.exits.get(call_id, spec.get("_exit")) if call_id else spec.get("_exit")
                if code is not None:
                    fields["metadata"]["exit_code"] = code
                    if code != 0:
                        fields.update(status="error", error_class=f"exit_code {code}")
            elif spec["type"] == "tool_call" and call_id and call_id not in self.results:
                fields["metadata"]["pending"] = True
            self.run.step(spec["key"], spec["type"], **fields)


class CodexCliFormat:
    name = "codex_cli"
    label = "Codex CLI rollouts (~/.codex/sessions/**/rollout-*.jsonl)"

    def sniff(self, head: bytes, filename: str) -> bool:
        if not starts_json(head):
            return False
        first = first_record(head)
        if isinstance(first, dict):
            return first.get("type") == "session_meta" and isinstance(first.get("payload"), dict)
        return has_key(head, "type", "session_meta") and has_key(head, "payload") and has_key(head, "cli_version")

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored]:
        records: list[tuple[int, dict, Any]] = []  # line, record, its time
        for item in json_objects(data, filename, "type"):
            if isinstance(item, BadRecord):
                yield item
                continue
            n, rec = item
            if not isinstance(rec.get("payload"), dict):
                yield BadRecord(f"{filename}:{n}", f"{rec['type']}: 'payload' must be an object")
            else:
                records.append((n, rec, parse_time(rec.get("timestamp"))))
        meta_rec: dict = next((r["payload"] for _, r, _ in records if r["type"] == "session_meta"), {})
        sid = meta_rec.get("id") or meta_rec.get("session_id")
        times = [t for _, _, t in records if t]
        meta = {
            k: meta_rec.get(k)
            for k in ("cwd", "originator", "source", "model_provider", "history_mode")
            if isinstance(meta_rec.get(k), str)
        }
        if isinstance(meta_rec.get("git"), dict):
            meta["git"] = meta_rec["git"]
        started = parse_time(meta_rec.get("timestamp")) or (min(times) if times else None)
        run = Run(
            str(sid) if isinstance(sid, str) and sid else stable_id(filename, data),
            filename,
            agent_id="codex-cli",
            agent_version=meta_rec.get("cli_version") if isinstance(meta_rec.get("cli_version"), str) else None,
            started_at=started,
            metadata=compact(meta),
        )
        state = _Rollout(run, filename)
        error_last = None
        for n, rec, when in records:
            kind, p, where = rec["type"], rec["payload"], f"{filename}:{n}"
            key = (
                f"l{rec['ordinal']}"
                if isinstance(rec.get("ordinal"), int) and not isinstance(rec.get("ordinal"), bool)
                else f"n{n}"
            )
            sub = p.get("type")
            if kind == "session_meta":
                continue
            if kind == "response_item":
                state.response_item(p, key, where, when)
                error_last = None if state.last_kind != "error" else error_last
            elif kind == "turn_context":
                state.model = p.get("model") if isinstance(p.get("model"), str) else state.model
                settings = (
                    (p.get("collaboration_mode") or {}).get("settings") if isinstance(p.get("collaboration_mode"), dict) else None
                )
                effort = p.get("effort") or p.get("reasoning_effort") or (settings or {}).get("reasoning_effort")
                state.effort = effort if isinstance(effort, str) else state.effort
            elif kind == "event_msg" and sub == "token_count":
                if not state.token_count(p):
                    yield Ignored(where, "token_count/no-info")
            elif kind == "event_msg" and sub in ("task_started", "task_complete", "turn_aborted"):
                if sub == "task_started":
                    state.tasks = True
                    state.turn += 1
                    state.turn_id = p.get("turn_id") if isinstance(p.get("turn_id"), str) else None
                elif sub == "turn_aborted":
                    state.add(
                        key,
                        "error",
                        where,
                        when,
                        content=f"turn aborted: {p.get('reason')}",
                        status="error",
                        error_class="turn_aborted",
                    )
                    error_last = state.specs[-1]
            elif kind == "event_msg" and sub == "exec_command_end":
                code = _int(p.get("exit_code"))
                if isinstance(p.get("call_id"), str) and code is not None:
                    state.exits[p["call_id"]] = code
                else:
                    yield Ignored(where, "exec_command_end/no-call")
            elif kind == "event_msg" and sub == "item_completed" and isinstance(p.get("item"), dict):
                item_kind = p["item"].get("type")
                if item_kind in ("CommandExecution", "FileChange"):
                    state.command_done(p["item"])
                else:
                    yield Ignored(
                        where,
                        f"duplicate:item_completed/{item_kind}"
                        if item_kind in DUPLICATE_ITEMS
                        else f"item_completed/{item_kind}",
                    )
            elif kind == "event_msg" and sub == "error":
                state.add(key, "error", where, when, content=str(p.get("message") or ""), status="error", error_class="error")
                error_last = state.specs[-1]
            elif kind == "event_msg" and sub in DUPLICATE_EVENTS:
                yield Ignored(where, f"duplicate:{sub}")
            elif kind == "token_usage_record":
                yield Ignored(where, "duplicate:token_usage_record")
            else:
                yield Ignored(where, f"{kind}/{sub}" if isinstance(sub, str) else kind)
        state.steps()
        run.session["model"] = state.model
        if state.total:
            run.session.setdefault("metadata", {})["token_totals"] = state.total
        prompt = next(
            (
                s.content
                for s in run.steps
                if s.type == "input"
                and (s.metadata or {}).get("role") == "user"
                and s.content
                and not s.content.lstrip().startswith(("<", "#"))
            ),
            None,
        )
        run.session["name"] = prompt[:200] if prompt else None
        last = max(times) if times else None
        if error_last is not None and state.specs and state.specs[-1] is error_last:
            run.finish("failed", outcome=error_last.get("content"), error_class=error_last.get("error_class"), ended_at=last)
        else:
            run.finish("unknown", ended_at=last)
        yield from run.events()


FORMAT = CodexCliFormat()

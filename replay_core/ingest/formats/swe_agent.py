"""SWE-agent trajectories (`.traj`, old and new layouts) and mini-swe-agent runs.

SWE-agent: each `trajectory` entry is one cycle — `thought` → think, `action` →
tool_call (the tool is the command's first word and its arguments `{"command": action}`,
or the real function call when `history` recorded one), `observation` → tool_result
(with `execution_time` and the editor `state`). `info.exit_status` ends the run:
`submitted` succeeded, anything else (`exit_cost`, `exit_context`, `exit_error`…)
failed with that status as error class. `info.model_stats` holds the only token and
cost figures: they become session metadata `tokens_in`, `tokens_out`, `cost_usd`.

mini-swe-agent: `{"info", "messages", "trajectory_format"}` or a bare message list.
The assistant's ```bash block is the tool call, `<returncode>N</returncode>` replies
are tool results (non-zero → error), `info.exit_status` ends the run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from .chat_messages import Conversation, text_of
from .jsondoc import as_array, as_object, has_key, load_json, starts_json
from .reader import BadRecord, Event, Ignored, Records, kind_of
from .runs import Run, compact, parse_time, stable_id

SUBMIT_MARKERS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")
_COMMAND = re.compile(r"```(?:bash|mswea_bash_command|sh)?[ \t]*\n(.*?)\n?```", re.S)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")


def _model_stats(info: dict) -> dict[str, Any]:
    """Session-level totals (steps carry none): tokens_in, tokens_out, cost_usd, plus the raw stats."""
    stats = as_object(info.get("model_stats"))
    return (
        compact(
            {
                "tokens_in": _either(stats, "tokens_sent", "input_tokens"),
                "tokens_out": _either(stats, "tokens_received", "output_tokens"),
                "cost_usd": _either(stats, "instance_cost", "total_cost"),
                "api_calls": stats.get("api_calls"),
                "model_stats": stats or None,
            }
        )
        or {}
    )


def _either(mapping: dict, *keys: str) -> Any:
    return next((mapping[k] for k in keys if mapping.get(k) is not None), None)


def _end(run: Run, info: dict, success: str) -> None:
    status = info.get("exit_status")
    if not status:
        return
    outcome = info.get("submission")
    outcome = outcome if isinstance(outcome, str) else None
    if str(status).lower() == success:
        run.finish("succeeded", outcome=outcome)
    else:
        run.finish("failed", outcome=outcome, error_class=str(status))


def _is_message(msg: Any) -> bool:
    """A chat message of the history (SWE-agent's have a role; other agents' event lists do not)."""
    return isinstance(msg, dict) and isinstance(msg.get("role"), str)


def _first_word(command: str) -> str | None:
    words = command.split()
    return words[0] if words else None


class SweAgentFormat:
    name = "swe_agent"
    label = "SWE-agent .traj trajectory"

    def sniff(self, head: bytes, filename: str) -> bool:
        return (
            starts_json(head)
            and (has_key(head, "trajectory") or has_key(head, "history"))
            and (has_key(head, "environment") or has_key(head, "info") or has_key(head, "thought"))
        )

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored | Records]:
        doc = load_json(data, filename)
        if not isinstance(doc, dict) or not isinstance(doc.get("trajectory", doc.get("history")), list):
            yield BadRecord(filename, "expected an object with a 'trajectory' or 'history' list")
            return
        trajectory = doc.get("trajectory")
        if isinstance(trajectory, list) and trajectory:
            yield Records(len(trajectory), "trajectory entries")
        else:
            history = as_array(doc.get("history"))
            yield Records(len(history), "history messages")
            yield from (
                Ignored(f"{filename}:history[{i}]", kind_of(m), known=False) for i, m in enumerate(history) if not _is_message(m)
            )
        yield from self._run(doc, data, filename).events()

    def _run(self, doc: dict, data: bytes, filename: str) -> Run:
        info = as_object(doc.get("info"))
        config = doc.get("replay_config")
        if isinstance(config, str):
            try:
                config = orjson.loads(config)
            except orjson.JSONDecodeError:
                pass
        agent_cfg = (config or {}).get("agent", {}) if isinstance(config, dict) else {}
        model = (agent_cfg.get("model") or {}).get("name") if isinstance(agent_cfg, dict) else None
        problem = (config or {}).get("problem_statement", {}) if isinstance(config, dict) else {}
        rest = {k: v for k, v in info.items() if k not in ("model_stats", "exit_status", "submission")}
        meta = {
            **_model_stats(info),
            "info": rest or None,
            "replay_config": config,
            **{k: v for k, v in doc.items() if k not in ("trajectory", "history", "info", "replay_config", "environment")},
        }
        run = Run(
            problem.get("id") or stable_id(filename, data),
            filename,
            name=problem.get("id") or Path(filename).name.split(".")[0],
            model=model,
            environment=doc.get("environment"),
            agent_id=agent_cfg.get("name") if isinstance(agent_cfg, dict) else None,
            agent_version=info.get("swe_agent_version"),
            metadata=compact(meta),
        )
        history = [m for m in doc.get("history") or [] if _is_message(m)]
        trajectory = doc.get("trajectory")
        if isinstance(trajectory, list) and trajectory:
            self._inputs(run, history)
            calls = [m for m in history if m.get("role") == "assistant" and not m.get("is_demo") and "action" in m]
            for i, entry in enumerate(trajectory):
                where = f"{filename}:trajectory[{i}]"
                if not isinstance(entry, dict):
                    run.errors.append(BadRecord(where, "expected an object with thought/action/observation"))
                    continue
                self._entry(run, entry, i, calls[i] if len(calls) == len(trajectory) else None, where)
        else:
            self._history(run, history)
        _end(run, info, "submitted")
        return run

    def _inputs(self, run: Run, history: list[dict]) -> None:
        """The system prompt, demonstrations and task: history before the first action."""
        for i, msg in enumerate(history):
            if msg.get("role") == "assistant" and not msg.get("is_demo"):
                return
            meta = {k: v for k, v in msg.items() if k not in ("content", "role")}
            run.step(f"h{i}", "input", content=text_of(msg.get("content")) or "", metadata={"role": msg.get("role"), **meta})

    def _entry(self, run: Run, entry: dict, i: int, message: dict | None, where: str) -> None:
        action = str(entry.get("action") or "").strip()
        state = entry.get("state")
        if isinstance(state, str):
            try:
                state = orjson.loads(state)
            except orjson.JSONDecodeError:
                state = {"raw": state}
        rest = {
            k: v for k, v in entry.items() if k not in ("thought", "action", "observation", "state", "execution_time", "query")
        }
        if rest.get("response") == entry.get("thought"):
            rest.pop("response")
        run.step(
            f"t{i}.think", "think", where=where, content=entry.get("thought") or "", context=entry.get("query"), metadata=rest
        )
        call = as_object(((message or {}).get("tool_calls") or [None])[0])
        fn = as_object(call.get("function"))
        if fn.get("name"):
            args = fn.get("arguments")
            try:
                args = orjson.loads(args) if isinstance(args, str) else args
            except orjson.JSONDecodeError:
                pass
            name, call_id, meta = fn["name"], call.get("id"), {"command": action}
        else:
            name, args, call_id, meta = _first_word(action), {"command": action}, f"t{i}", None
        run.step(f"t{i}.action", "tool_call", where=where, tool_name=name, tool_args=args, tool_call_id=call_id, metadata=meta)
        seconds = entry.get("execution_time")
        run.step(
            f"t{i}.observation",
            "tool_result",
            where=where,
            tool_name=name,
            tool_call_id=call_id,
            content=text_of(entry.get("observation")) or "",
            duration_ms=seconds * 1000 if isinstance(seconds, int | float) and seconds >= 0 else None,
            metadata={"state": state} if isinstance(state, dict) else None,
        )

    def _history(self, run: Run, history: list[dict]) -> None:
        """No trajectory: the chat history, assistant thought/action and the replies to them."""
        acted = False
        for i, msg in enumerate(history):
            role = msg.get("role")
            meta = {k: v for k, v in msg.items() if k not in ("content", "role", "thought", "action")}
            if role == "assistant" and not msg.get("is_demo"):
                acted = True
                run.step(f"h{i}.think", "think", content=msg.get("thought") or text_of(msg.get("content")) or "", metadata=meta)
                action = str(msg.get("action") or "").strip()
                if action:
                    run.step(
                        f"h{i}.action",
                        "tool_call",
                        tool_name=_first_word(action),
                        tool_args={"command": action},
                        tool_call_id=f"h{i}",
                    )
            elif acted and role in ("user", "tool"):
                run.step(f"h{i}", "tool_result", content=text_of(msg.get("content")) or "", metadata=meta)
            else:
                run.step(f"h{i}", "input", content=text_of(msg.get("content")) or "", metadata={"role": role, **meta})


class MiniSweAgentFormat:
    name = "mini_swe_agent"
    label = "mini-swe-agent trajectory (.traj.json)"

    def sniff(self, head: bytes, filename: str) -> bool:
        if not starts_json(head):
            return False
        if has_key(head, "trajectory_format") or has_key(head, "mini_version"):
            return True
        return (
            head.lstrip().startswith(b"[")
            and has_key(head, "role")
            and (b"<returncode>" in head or b"mswea_bash_command" in head or any(s.encode() in head for s in SUBMIT_MARKERS))
        )

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored | Records]:
        doc = load_json(data, filename)
        info: dict = {}
        if isinstance(doc, dict):
            info = as_object(doc.get("info"))
            messages = doc.get("messages")
        else:
            messages = doc
        if not isinstance(messages, list):
            yield BadRecord(filename, "messages: expected a list of chat messages")
            return
        model_cfg = as_object(as_object(info.get("config")).get("model"))
        meta = {
            **_model_stats(info),
            "info": {k: v for k, v in info.items() if k not in ("model_stats", "exit_status", "submission")} or None,
        }
        if isinstance(doc, dict):
            meta.update({k: v for k, v in doc.items() if k not in ("info", "messages")})
        yield Records(len(messages), "messages")
        run = Run(
            str(doc["instance_id"]) if isinstance(doc, dict) and doc.get("instance_id") else stable_id(filename, data),
            filename,
            model=model_cfg.get("model_name"),
            agent_version=info.get("mini_version"),
            agent_id="mini-swe-agent",
            metadata=compact(meta),
        )
        yield from (
            Ignored(f"{filename}:messages[{i}]", kind_of(m), known=False)
            for i, m in enumerate(messages)
            if isinstance(m, dict) and not isinstance(m.get("role"), str)
        )
        self._messages(run, [m if _is_message(m) or not isinstance(m, dict) else None for m in messages], filename)
        if info:
            _end(run, info, "submitted")
        yield from run.events()

    def _messages(self, run: Run, messages: list, filename: str) -> None:
        conv = Conversation(run)
        open_call: str | None = None
        submitted = False
        for i, msg in enumerate(messages):
            where = f"{filename}:messages[{i}]"
            if msg is None:  # accounted as ignored by the caller
                continue
            if not isinstance(msg, dict):
                run.errors.append(BadRecord(where, "expected a chat message object"))
                continue
            extra = as_object(msg.get("extra"))
            when = parse_time(extra.get("timestamp"))
            role, text = msg.get("role"), text_of(msg.get("content")) or ""
            if msg.get("tool_calls") or role == "tool":
                conv.openai(msg, f"m{i}", {"timestamp": when}, {"cost_usd": extra.get("cost")})
                continue
            if role == "assistant":
                commands = [c for a in as_array(extra.get("actions")) if isinstance(c := as_object(a).get("command"), str) and c]
                commands = commands or [m.strip() for m in _COMMAND.findall(text)]
                run.step(
                    f"m{i}",
                    "think",
                    where=where,
                    content=text,
                    timestamp=when,
                    cost_usd=extra.get("cost"),
                    metadata={k: v for k, v in extra.items() if k not in ("actions", "cost", "timestamp")},
                )
                for j, command in enumerate(commands):
                    open_call = f"m{i}.{j}"
                    submitted = submitted or any(s in command for s in SUBMIT_MARKERS)
                    run.step(
                        open_call,
                        "tool_call",
                        where=where,
                        tool_name=_first_word(command),
                        tool_args={"command": command},
                        tool_call_id=open_call,
                        timestamp=when,
                    )
            elif role == "user" and open_call:
                code = extra.get("returncode")
                match = _RETURNCODE.search(text)
                if code is None and match:
                    code = int(match.group(1))
                failed = isinstance(code, int) and code != 0
                run.step(
                    f"m{i}",
                    "tool_result",
                    where=where,
                    content=text,
                    tool_call_id=open_call,
                    timestamp=when,
                    tool_name=run.steps[-1].tool_name if run.steps and run.steps[-1].tool_call_id == open_call else None,
                    status="error" if failed else "ok",
                    error_class=f"returncode {code}" if failed else None,
                    metadata={k: v for k, v in extra.items() if k not in ("timestamp",)},
                )
                open_call = None
            else:
                run.step(f"m{i}", "input", where=where, content=text, timestamp=when, metadata={"role": role, **extra})
        if submitted and run.end is None:
            last = next((s for s in reversed(run.steps) if s.type == "tool_result"), None)
            run.finish("succeeded", outcome=last.content if last else None)


SWE_AGENT = SweAgentFormat()
MINI_SWE_AGENT = MiniSweAgentFormat()

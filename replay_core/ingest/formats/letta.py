"""Letta agent files (`.af`): an agent's settings, memory and message history in one JSON document.

Two schemas: the first (2025) is one agent object with `messages`, `llm_config` and `name` at the top;
the later one wraps agents in `agents: […]` beside `groups`, `blocks`, `tools`, `mcp_servers`. Either way
each agent is a run named after it, its model the agent's `llm_config.model`; messages are OpenAI-shaped
(content as text parts, `tool_calls`, `tool_call_id`) and map as chat messages do, each step taking
its message's own `model` and `created_at`. The agent's memory blocks, tools and settings stay in the
run's metadata by name only (they are configuration, not steps).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .chat_messages import Conversation, map_promoted
from .jsondoc import as_array, as_object, has_key, load_json, starts_json
from .openai_chat import DIALECT
from .reader import BadRecord, Event, Ignored, Records, kind_of
from .runs import Run, parse_time, stable_id

_SETTINGS = ("agent_type", "description", "tags", "version", "created_at", "updated_at", "message_buffer_autoclear")


def _agents(doc: Any) -> list[dict] | None:
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("agents"), list):
        return [a for a in doc["agents"] if isinstance(a, dict)]
    return [doc] if isinstance(doc.get("messages"), list) and "llm_config" in doc else None


def _run(agent: dict, filename: str, data: bytes, where: str, n: int) -> Iterator[Event | BadRecord | Ignored]:
    name = agent.get("name") if isinstance(agent.get("name"), str) else None
    llm = as_object(agent.get("llm_config"))
    settings = {k: agent.get(k) for k in _SETTINGS if agent.get(k) not in (None, [], {})}
    blocks = [as_object(b).get("label") for b in as_array(agent.get("core_memory") or agent.get("memory_blocks"))]
    tools = [as_object(t).get("name") for t in as_array(agent.get("tools")) if isinstance(t, dict)]
    run = Run(
        stable_id(filename, data, n),  # exported agents are renumbered (`agent-0` in every file): the id is kept, not used
        where,
        name=name,
        agent_id=name,
        model=llm.get("model") or (agent.get("model") if isinstance(agent.get("model"), str) else None),
        metadata={
            "letta": {
                **settings,
                "id": agent.get("id"),
                "memory_blocks": [b for b in blocks if b] or None,
                "tools": [t for t in tools if t] or None,
            }
        },
    )
    model = run.session.get("model")
    conv = Conversation(run)
    for i, msg in enumerate(as_array(agent.get("messages"))):
        at = f"{where}:messages[{i}]"
        if not isinstance(msg, dict) or msg.get("role") not in ("system", "user", "assistant", "tool"):
            yield Ignored(at, f"message {kind_of(msg)}", known=False)
            continue
        if msg.get("role") == "assistant" and not msg.get("model") and model:
            msg = {**msg, "model": model}  # an answer without a model of its own came from the agent's
        map_promoted(DIALECT, conv, msg, f"m{i}")
    created = parse_time(agent.get("created_at"))
    if created and not run.session.get("started_at"):
        run.session["started_at"] = created
    if model:
        run.session["model"] = model
    yield from run.events()


class LettaFormat:
    name = "letta"
    label = "Letta agent files (.af)"
    unwatchable = "one JSON document per agent file, rewritten whole"  # (watch refuses it)

    def sniff(self, head: bytes, filename: str) -> bool:
        return starts_json(head) and has_key(head, "agent_type") and has_key(head, "llm_config")

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored | Records]:
        agents = _agents(load_json(data, filename))
        if agents is None:
            yield BadRecord(filename, "expected a Letta agent file: an agent with messages and llm_config, or agents: […]")
            return
        yield Records(sum(max(len(as_array(a.get("messages"))), 1) for a in agents), "messages")
        for i, agent in enumerate(agents):
            if not as_array(agent.get("messages")):
                yield Ignored(f"{filename}:agents[{i}]", "agent without messages")
                continue
            yield from _run(agent, filename, data, filename if len(agents) == 1 else f"{filename}:agents[{i}]", i)


FORMAT = LettaFormat()

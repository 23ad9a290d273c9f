"""What particular frameworks put in their spans, read as the common conventions would have it.

Each rule names the framework whose spans need it and touches only values of that shape:

- smolagents keeps its own message roles (`tool-call`, `tool-response`) in `llm.input_messages`;
  before a call it turns them into `assistant` / `user` and merges consecutive messages of one
  role (text joined by a newline): `wire_messages` does the same, so a context is what the model got.
- smolagents records a tool's input as `{"args": [], "sanitize_inputs_outputs": …, "kwargs": {…}}`:
  `unwrap_arguments` returns the keyword arguments.
- LangChain / LangGraph record a tool's output as the serialised `ToolMessage`
  (`{"type": "tool", "data": {"content": …}}`, or the `lc` constructor form): `message_text`
  returns its content.
- Logfire names a span by its message template (`execute_tool {tool_name}`) and puts the filled
  text in `logfire.msg`: `filled_name` returns the filled one.
- GenAI-convention span names say the operation (`execute_tool get_time`, `invoke_agent planner`):
  `kind_from_name` and `agent_from_name` read them when no attribute says the kind.
"""

from __future__ import annotations

from typing import Any

from .. import otel_attributes as oa

SMOLAGENTS_ROLES = {"tool-call": "assistant", "tool-response": "user"}
_MESSAGE_TYPES = {"tool", "ai", "human", "system", "function", "chat"}  # LangChain message types
_SMOLAGENTS_WRAPPER = {"args", "kwargs", "sanitize_inputs_outputs"}
_NAME_KINDS = {"execute_tool": oa.TOOL, "invoke_agent": oa.AGENT, "create_agent": oa.AGENT, "invoke_workflow": oa.AGENT}


def wire_messages(messages: list[dict] | None) -> list[dict] | None:
    """smolagents' messages as its model client sends them: its roles mapped, consecutive same-role text merged.

    Messages without a smolagents role pass through untouched (the other conventions record the wire roles)."""
    if not messages or not any(m.get("role") in SMOLAGENTS_ROLES for m in messages):
        return messages
    out: list[dict] = []
    for message in messages:
        role = message.get("role")
        role = SMOLAGENTS_ROLES.get(role, role) if isinstance(role, str) else role
        mapped = {**message, "role": role}
        last = out[-1] if out else None
        plain = set(mapped) <= {"role", "content"} and isinstance(mapped.get("content"), str)
        if plain and last is not None and last["role"] == role and set(last) <= {"role", "content"}:
            before = last.get("content")
            last["content"] = f"{before}\n{mapped['content']}" if isinstance(before, str) else mapped["content"]
        else:
            out.append(mapped)
    return out


def unwrap_arguments(value: Any) -> Any:
    """smolagents' `{"args": [], "kwargs": {...}}` wrapper → the keyword arguments; other values as they are."""
    if (
        isinstance(value, dict)
        and "kwargs" in value
        and set(value) <= _SMOLAGENTS_WRAPPER
        and isinstance(value["kwargs"], dict)
        and not value.get("args")
    ):
        return value["kwargs"]
    return value


def positional(value: Any) -> bool:
    """Arguments that do not name their parameters (LangChain records a one-argument tool's input as the bare value)."""
    return value is not None and not isinstance(value, dict)


def message_text(value: Any) -> Any:
    """A serialised LangChain message (ToolMessage…) → its content; any other value as it is."""
    decoded = oa.json_value(value) if isinstance(value, str) and value[:1] == "{" else value
    if not isinstance(decoded, dict):
        return value
    data, kwargs, path = decoded.get("data"), decoded.get("kwargs"), decoded.get("id")
    if isinstance(data, dict) and decoded.get("type") in _MESSAGE_TYPES and data.get("type") == decoded["type"]:
        content = data.get("content")  # message_to_dict: {"type": "tool", "data": {"type": "tool", "content": …}}
    elif (
        decoded.get("lc") == 1
        and isinstance(kwargs, dict)
        and isinstance(path, list)
        and str(path[-1] if path else "").endswith("Message")
    ):
        content = kwargs.get("content")  # dumpd: {"lc": 1, "type": "constructor", "id": [..., "ToolMessage"], "kwargs": …}
    else:
        return value
    return content if isinstance(content, str) else oa.text(content)


def filled_name(name: str, attributes: dict[str, Any]) -> str:
    """A Logfire span's filled-in message when its name is the message template, else its name."""
    filled = attributes.get("logfire.msg")
    if isinstance(filled, str) and filled and attributes.get("logfire.msg_template") == name:
        return filled
    return name


def kind_from_name(name: str) -> str | None:
    """The kind a GenAI-convention span name (`{operation} {target}`) says, else None."""
    operation, _, target = name.partition(" ")
    return _NAME_KINDS.get(operation) if target.strip() else None


def agent_from_name(name: str) -> str | None:
    """The agent an `invoke_agent {name}` / `create_agent {name}` span names."""
    operation, _, target = name.partition(" ")
    if operation not in ("invoke_agent", "create_agent"):
        return None
    return target.strip() or None

"""Anthropic Messages runs: message lists, request/response logs, VCR cassettes.

Content blocks map one to one: `thinking` → think, `text` → think (decision when the
turn calls no tool), `tool_use` → tool_call, `tool_result` → tool_result (`is_error`
marks it failed); the request's `system` prompt becomes an input step. Prompt tokens
are `input_tokens` plus the cache reads and writes; the raw `usage` is kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .cassette import is_cassette
from .chat_messages import Conversation, Reply, read_chat
from .jsondoc import as_object, has_key, starts_json
from .reader import BadRecord, Event, Ignored, Records

_BLOCKS = ("tool_use", "tool_result", "thinking", "redacted_thinking")


class AnthropicDialect:
    name = "Anthropic Messages"

    def map(self, conv: Conversation, msg: dict, key: str, common: dict | None = None, first: dict | None = None) -> None:
        conv.anthropic(msg, key, common, first)

    def history(self, request: dict) -> list[dict]:
        messages = request.get("messages")
        messages = messages if isinstance(messages, list) else []
        system = request.get("system")
        return ([{"role": "system", "content": system}] if system else []) + messages

    def is_messages(self, obj: Any) -> bool:
        return all(isinstance(m, dict) and m.get("role") in ("user", "assistant", "system") for m in obj)

    def reply(self, response: Any, status: int | None) -> Reply:
        if not isinstance(response, dict):
            return Reply(
                error_class=f"http_{status}" if status and status >= 400 else "unreadable_response", error=str(response)[:2000]
            )
        if response.get("type") == "error" or (status or 0) >= 400:
            err = as_object(response.get("error"))
            return Reply(error_class=err.get("type") or f"http_{status}", error=err.get("message") or str(response)[:2000])
        usage = response.get("usage") or {}
        prompt = sum(usage.get(k) or 0 for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
        message = {"role": response.get("role", "assistant"), "content": response.get("content")}
        meta = {k: response.get(k) for k in ("stop_reason", "stop_sequence", "container") if response.get(k) is not None}
        if usage:
            meta["usage"] = usage
        return Reply(
            message=message,
            model=response.get("model"),
            response_id=response.get("id"),
            tokens_in=prompt if usage else None,
            tokens_out=usage.get("output_tokens"),
            meta=meta,
        )


DIALECT = AnthropicDialect()


class AnthropicFormat:
    name = "anthropic"
    label = "Anthropic Messages lists, logs or VCR cassettes"
    unwatchable = "names its runs by a hash of the whole file, which changes as the file grows"  # (watch refuses it)

    def sniff(self, head: bytes, filename: str) -> bool:
        if is_cassette(head, b"/v1/messages"):
            return True
        if not starts_json(head):
            return False
        blocks = any(has_key(head, "type", kind) for kind in _BLOCKS)
        return (has_key(head, "role") and blocks) or (has_key(head, "type", "message") and has_key(head, "stop_reason"))

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored | Records]:
        return read_chat(DIALECT, data, filename, b"/v1/messages")


FORMAT = AnthropicFormat()

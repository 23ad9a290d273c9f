"""OpenAI chat-completions runs: message lists, request/response logs, VCR cassettes.

A file may hold one transcript (`[{"role": ...}, ...]`), JSON Lines of
`{"request": {...}, "response": {...}}` (or request bodies with a `response`), or a
cassette of calls to `/chat/completions`. Assistant `tool_calls` become tool_call steps
with their arguments decoded, `tool` replies become tool_result steps, the reply's
`usage` becomes the tokens of its first step. This is also the generic "JSON list of
chat messages" reader, so it is tried last.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .cassette import is_cassette
from .chat_messages import Conversation, Reply, read_chat
from .jsondoc import as_object, first_record, has_key, starts_json
from .reader import BadRecord, Event, Ignored, Records
from .runs import parse_time


class OpenAIDialect:
    name = "OpenAI chat"

    def map(self, conv: Conversation, msg: dict, key: str, common: dict | None = None, first: dict | None = None) -> None:
        conv.openai(msg, key, common, first)

    def history(self, request: dict) -> list[dict]:
        messages = request.get("messages")
        return messages if isinstance(messages, list) else []

    def is_messages(self, obj: Any) -> bool:
        return all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in obj)

    def reply(self, response: Any, status: int | None) -> Reply:
        if not isinstance(response, dict):
            return Reply(
                error_class=f"http_{status}" if status and status >= 400 else "unreadable_response", error=str(response)[:2000]
            )
        usage = response.get("usage") or {}
        if isinstance(response.get("error"), dict) or (status or 0) >= 400:
            err = as_object(response.get("error"))
            return Reply(
                model=response.get("model"),
                error_class=err.get("type") or err.get("code") or f"http_{status}",
                error=err.get("message") or str(response)[:2000],
            )
        choices = response.get("choices") or []
        choice = choices[0] if choices and isinstance(choices[0], dict) else {}
        meta = {
            "finish_reason": choice.get("finish_reason"),
            "usage": usage or None,
            "system_fingerprint": response.get("system_fingerprint"),
            "other_choices": [c.get("message") for c in choices[1:] if isinstance(c, dict)] or None,
        }
        return Reply(
            message=choice.get("message"),
            model=response.get("model"),
            response_id=response.get("id"),
            created=parse_time(response.get("created")),
            tokens_in=usage.get("prompt_tokens"),
            tokens_out=usage.get("completion_tokens"),
            meta={k: v for k, v in meta.items() if v is not None},
        )


DIALECT = OpenAIDialect()


class OpenAIChatFormat:
    name = "openai_chat"
    label = "OpenAI chat-completions messages, logs or VCR cassettes"
    unwatchable = "names its runs by a hash of the whole file, which changes as the file grows"  # (watch refuses it)

    def sniff(self, head: bytes, filename: str) -> bool:
        if is_cassette(head, b"/chat/completions"):
            return True
        if not starts_json(head):
            return False
        first = first_record(head)
        if first is not None:
            first = first[0] if isinstance(first, list) and first else first
            keys = set(first) if isinstance(first, dict) else set()
            return bool(keys & {"messages", "request", "choices", "role"})
        return has_key(head, "role") and (has_key(head, "content") or has_key(head, "tool_calls")) or has_key(head, "choices")

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored | Records]:
        return read_chat(DIALECT, data, filename, b"/chat/completions")


FORMAT = OpenAIChatFormat()

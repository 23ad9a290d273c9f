"""What a span's attributes say about an agent step.

Three vocabularies are in the wild and often mixed in one trace: the OpenTelemetry GenAI
semantic conventions (current names and the deprecated ones older instrumentations
still write: `gen_ai.system`, `gen_ai.prompt.N.*`, `gen_ai.usage.prompt_tokens`…),
OpenInference (`openinference.span.kind`, flattened `llm.input_messages.N.message.*`,
`llm.token_count.*`, `tool.name`…) and the quirks of real exporters (any-agent's
`genai.output`, double-encoded or Python-repr tool arguments). This module reads them
into step fields; `Attrs` remembers which attributes a field used so that every other
attribute is kept in the step's metadata, never dropped.
"""

from __future__ import annotations

import ast
import re
from typing import Any

import orjson

from ...storage.tables import sessions
from ...storage.widths import cut_apart, width
from .jsondoc import as_object

AGENT, MODEL, TOOL, OTHER = "agent", "model", "tool", "other"

MODEL_OPERATIONS = {"chat", "text_completion", "generate_content", "completion", "call_llm", "responses"}
TOOL_OPERATIONS = {"execute_tool", "retrieval"}
AGENT_OPERATIONS = {"invoke_agent", "create_agent", "invoke_workflow"}
TOOL_CALL_PART = "tool_call"
TOOL_RESPONSE_PART = "tool_call_response"


class Shape:
    """What depends on a span's attribute names alone (in order), worked out once for every span that has them."""

    __slots__ = ("keys", "names", "prefixes", "plans", "lacking")

    def __init__(self, keys: tuple) -> None:
        self.keys = keys
        try:  # every key, one a line: a prefix no key has is then ruled out in C
            self.names = "\n" + "\n".join(keys)
        except TypeError:  # a key that is not text (never from JSON or protobuf): every key may
            self.names = ""
        self.prefixes: dict[str, bool] = {}  # start → whether a key may start with it
        self.plans: dict[str, Any] = {}  # message list prefix → its plan (openinference_messages)
        self.lacking: dict[tuple, bool] = {}  # (names, starts) → whether surely no key is one of them or starts so

    def lacks(self, names: tuple[str, ...], starts: tuple[str, ...]) -> bool:
        """Whether surely no key is one of `names` or starts with one of `starts` (False: some key may)."""
        found = self.lacking.get((names, starts))
        if found is None:
            keys = frozenset(self.keys) if self.names else None
            found = keys is not None and keys.isdisjoint(names) and not any(f"\n{s}" in self.names for s in starts)
            self.lacking[(names, starts)] = found
        return found


_SHAPES_KEPT = 512  # shapes remembered (a file has a handful; a hostile one cannot grow it past this)
_shapes: dict[tuple, Shape] = {}


class Attrs:
    """A span's attributes plus the set of keys that a step field has used."""

    __slots__ = ("values", "used", "_shape")

    def __init__(self, values: dict[str, Any]):
        self.values = values
        self.used: set[str] = set()
        self._shape: Shape | None = None

    def shape(self) -> Shape:
        """The span's `Shape`, shared with every span of the same attribute names."""
        if self._shape is None:
            keys = tuple(self.values)
            found = _shapes.get(keys)
            if found is None:
                found = Shape(keys)
                if len(_shapes) < _SHAPES_KEPT:
                    _shapes[keys] = found
            self._shape = found
        return self._shape

    def peek(self, key: str) -> Any:
        return self.values.get(key)

    def get(self, *keys: str) -> Any:
        """The first of `keys` that holds a value (marked used), else None."""
        for key in keys:
            value = self.values.get(key)
            if value is not None and value != "":
                self.used.add(key)
                return value
        return None

    def use(self, *keys: str) -> None:
        self.used.update(self.values.keys() & keys)

    def indexed(self, prefix: str) -> list[dict[str, Any]]:
        """Flattened `prefix.N.rest` keys as a list of {rest: value} (marked used); a list value works too."""
        direct = self.values.get(prefix)
        if isinstance(direct, list):
            self.used.add(prefix)
            return [flatten(item) if isinstance(item, dict) else {"": item} for item in direct]
        if not self.has_prefix(prefix + "."):  # most spans have none of the prefixes asked for
            return []
        items, keys = _indexed(self.values, prefix)
        self.used.update(keys)
        return items

    def has_prefix(self, start: str) -> bool:
        """Whether a key may start with `start` (False: surely none does), looked for in C once per shape."""
        shape = self.shape()
        found = shape.prefixes.get(start)
        if found is None:
            found = shape.prefixes[start] = not shape.names or f"\n{start}" in shape.names
        return found


_INDEXED_REST = re.compile(r"(\d+)\.(.+)$")
_INDEX_TEXT = tuple(str(n) for n in range(64))  # the indexes most lists are written with, in order


def _indexed(flat: dict[str, Any], prefix: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The `prefix.N.rest` keys of a flat map as [{rest: value}] in index order, and the keys they came from.
    Keys are picked by prefix first (a plain scan, cheap where most keys do not match), then grouped by the
    text of their index; groups met as 0, 1, 2… (how writers list them) are the answer as they are, other
    decimal indexes are sorted by number; only when that text is unusual (not decimal, two spellings of one
    number, a key with no rest or with a line break) is each key judged on its own."""
    start = prefix + "."
    keys = [k for k in flat if k.startswith(start)] if isinstance(prefix, str) else []
    if not keys:
        return [], []
    size = len(start)
    groups: dict[str, dict[str, Any]] = {}
    for key in keys:
        dot = key.find(".", size)
        if dot < 0 or dot + 1 == len(key) or "\n" in key:
            return _indexed_keys(flat, keys, size)
        index = key[size:dot]
        group = groups.get(index)
        if group is None:
            group = groups[index] = {}
        group[key[dot + 1 :]] = flat[key]
    if tuple(groups) == _INDEX_TEXT[: len(groups)]:
        return list(groups.values()), keys
    if all(i.isdecimal() for i in groups):
        numbers = {int(i): g for i, g in groups.items()}
        if len(numbers) == len(groups):
            return [numbers[n] for n in sorted(numbers)], keys
    return _indexed_keys(flat, keys, size)


def _indexed_keys(flat: dict[str, Any], keys: list[str], size: int) -> tuple[list[dict[str, Any]], list[str]]:
    """`_indexed` key by key, for the unusual keys."""
    items: dict[int, dict[str, Any]] = {}
    used: list[str] = []
    for key in keys:
        index, dot, rest = key[size:].partition(".")
        if not (dot and rest and index.isdecimal()) or "\n" in rest:
            match = _INDEXED_REST.match(key, size)  # the rare key plain splitting cannot judge
            if match is None:
                continue
            index, rest = match.group(1), match.group(2)
        items.setdefault(int(index), {})[rest] = flat[key]
        used.append(key)
    return [items[i] for i in sorted(items)], used


def flatten(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested attribute maps (as some span dumps write them) as dotted keys."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict):
            out.update(flatten(item, name + "."))
        else:
            out[name] = item
    return out


def split_indexed(flat: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """`{prefix.N.rest: v}` inside one flattened item → list of {rest: v}, in index order."""
    if isinstance(flat.get(prefix), list):
        return [flatten(v) if isinstance(v, dict) else {"": v} for v in flat[prefix]]
    return _indexed(flat, prefix)[0]


# ---------------------------------------------------------------------------- span kinds


_KIND_KEYS = ("gen_ai.operation.name", "openinference.span.kind", "traceloop.span.kind")


def span_class(attrs: Attrs) -> str:
    """agent (a grouping operation), model (an LLM call), tool (a tool execution) or other."""
    if not attrs.values:  # a bare span (no GenAI attributes at all): the common case of big structural traces
        return OTHER
    values = attrs.values
    op = values.get("gen_ai.operation.name")
    oi = str(values.get("openinference.span.kind") or "").upper()
    tl = values.get("traceloop.span.kind")
    attrs.used.update(values.keys() & _KIND_KEYS)
    if op in MODEL_OPERATIONS or oi == "LLM" or values.get("llm.request.type") in ("chat", "completion"):
        attrs.use("llm.request.type")
        return MODEL
    if op in TOOL_OPERATIONS or oi in ("TOOL", "RETRIEVER") or tl == "tool":
        return TOOL
    if op in AGENT_OPERATIONS or oi in ("AGENT", "CHAIN") or tl in ("agent", "workflow", "task"):
        return AGENT
    if op is None and not oi and (values.get("gen_ai.request.model") or values.get("gen_ai.response.model")):
        return MODEL
    return OTHER


# ---------------------------------------------------------------------------- values


# what JSON text can start with (after whitespace): text starting otherwise is refused before the parser
# is asked, as its refusal (an exception) costs ten parses of a small document
_JSON_STARTS = frozenset('{["-0123456789tfn')


def _not_json(text: str) -> bool:
    """Whether `text` surely is not JSON (its first character after any whitespace cannot start it)."""
    return text[:1] not in _JSON_STARTS and text.lstrip()[:1] not in _JSON_STARTS


_UNREAD = object()  # not read as JSON (JSON's null reads as None)


def json_value(value: Any) -> Any:
    """JSON text decoded (None when it is not JSON); other values as they are."""
    if not isinstance(value, str):
        return value
    if _not_json(value):
        return None
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return None


def tool_arguments(value: Any) -> Any:
    """Tool arguments as data: JSON text, JSON text encoded twice, or a Python literal (repr) are decoded."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    decoded: Any = _UNREAD
    if not _not_json(text):
        try:
            decoded = orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    if decoded is _UNREAD:
        decoded = _python_literal(text)
        if decoded is None:
            return value
    if isinstance(decoded, str) and decoded.strip()[:1] in ("{", "["):
        again = tool_arguments(decoded)
        return again if not isinstance(again, str) else decoded
    return decoded


def _python_literal(text: str) -> Any:
    if text[:1] not in ("{", "[", "(") or len(text) > 1_000_000:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None
    try:
        orjson.dumps(value)
    except TypeError:
        return None
    return value


def text(value: Any) -> str | None:
    """A value as step text: strings as they are, anything else as JSON."""
    if value is None or isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


_EXACT_INT = 2**53  # every integer up to it is a float exactly: int(float(n)) is n


def count(value: Any) -> int | None:
    if value.__class__ is int and 0 <= value <= _EXACT_INT:  # the usual count, as number() would give it back
        return value
    n = number(value)
    return int(n) if n is not None and n >= 0 else None


# ---------------------------------------------------------------------------- usage


def tokens(attrs: Attrs) -> tuple[int | None, int | None]:
    tokens_in = count(
        attrs.get("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt", "llm.usage.prompt_tokens")
    )
    tokens_out = count(
        attrs.get(
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
            "llm.token_count.completion",
            "llm.usage.completion_tokens",
        )
    )
    values = attrs.values
    for key in ("llm.token_count.total", "llm.usage.total_tokens", "gen_ai.usage.total_tokens"):
        raw = values.get(key)
        total = None if raw is None else count(raw)
        if total is not None and total == (tokens_in or 0) + (tokens_out or 0):
            attrs.used.add(key)  # derivable from the two counts kept
    return tokens_in, tokens_out


_COST_PARTS = (("gen_ai.usage.input_cost", "gen_ai.usage.output_cost"), ("llm.cost.prompt", "llm.cost.completion"))


def cost(attrs: Attrs) -> float | None:
    total = number(attrs.get("gen_ai.usage.cost", "llm.cost.total"))
    if total is not None:
        return total
    values = attrs.values
    for first, second in _COST_PARTS:
        if first not in values and second not in values:
            continue
        a, b = number(values.get(first)), number(values.get(second))
        if a is not None or b is not None:
            attrs.use(first, second)
            return (a or 0.0) + (b or 0.0)
    return None


_USAGE_KEYS = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "llm.token_count.prompt",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
    "gen_ai.usage.cost",
    "llm.cost.total",
)


def has_usage(attrs: Attrs) -> bool:
    if attrs.shape().lacks(_USAGE_KEYS, ()):  # most tool and agent spans: no key to look up
        return False
    values = attrs.values
    return any(values.get(k) is not None for k in _USAGE_KEYS)


# ---------------------------------------------------------------------------- messages


_GENAI_INPUT = ("gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.prompt"), ("gen_ai.prompt.",)
_GENAI_OUTPUT = ("gen_ai.output.messages", "gen_ai.completion"), ("gen_ai.completion.",)


def input_messages(attrs: Attrs) -> list[dict] | None:
    """The model's input as OpenAI-shaped chat messages, from whichever convention holds it."""
    if attrs.shape().lacks(*_GENAI_INPUT):  # an OpenInference span (no system instructions): its list alone
        return openinference_messages(attrs, "llm.input_messages") or None
    system = attrs.get("gen_ai.system_instructions")
    for key in ("gen_ai.input.messages", "gen_ai.prompt"):
        raw = attrs.peek(key)
        decoded = json_value(raw) if isinstance(raw, str) else raw
        if isinstance(decoded, list):
            attrs.use(key)
            messages = [m for item in decoded if isinstance(item, dict) for m in openai_messages(item)]
            return _with_system(system, messages)
    items = attrs.indexed("gen_ai.prompt")
    if items:
        return _with_system(system, [m for item in items for m in _flat_genai_message(item)])
    messages = openinference_messages(attrs, "llm.input_messages")
    if messages:
        return _with_system(system, messages)
    return _with_system(system, []) or None


def _with_system(system: Any, messages: list[dict]) -> list[dict]:
    if system is None:
        return messages
    decoded = json_value(system) if isinstance(system, str) else system
    content: str | None
    if isinstance(decoded, list):
        content = "".join(p.get("content", "") for p in decoded if isinstance(p, dict) and p.get("type") == "text")
    else:
        content = system if isinstance(system, str) else text(system)
    return [{"role": "system", "content": content}, *messages]


def openai_messages(message: dict) -> list[dict]:
    """A GenAI-convention message ({role, parts}) as OpenAI chat messages; OpenAI ones pass through."""
    parts = message.get("parts")
    if not isinstance(parts, list):
        return [message]
    extra = {k: v for k, v in message.items() if k not in ("role", "parts")}
    texts, calls, responses, others = [], [], [], []
    for part in parts:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            texts.append(part.get("content") or "")
        elif kind == TOOL_CALL_PART:
            calls.append(openai_call(part.get("id"), part.get("name"), part.get("arguments")))
        elif kind == TOOL_RESPONSE_PART:
            answer = part.get("response", part.get("result"))  # Pydantic AI writes `result`
            responses.append({"role": "tool", "tool_call_id": part.get("id"), "content": text(answer)})
        else:
            others.append(part)
    out: list[dict] = []
    if texts or calls or others or not responses:
        msg = chat_message(message.get("role"), "".join(texts) if texts else None, calls)
        if others:
            msg["parts"] = others
        out.append(msg | extra)
    return out + responses


def genai_message(message: dict) -> dict:
    """An OpenAI chat message in the GenAI convention's {role, parts} shape (inverse of openai_messages)."""
    extra = {k: v for k, v in message.items() if k not in ("role", "content", "tool_calls", "tool_call_id", "parts")}
    role = message.get("role")
    if role == "tool" and "tool_call_id" in message:
        part = {"type": TOOL_RESPONSE_PART, "id": message["tool_call_id"], "response": message.get("content")}
        return {"role": role, "parts": [part]} | extra
    parts: list[Any] = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append({"type": "text", "content": content})
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        parts.append({"type": TOOL_CALL_PART, "id": call.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments")})
    parts += message.get("parts") or []
    return {"role": role, "parts": parts} | extra


def chat_message(role: Any, content: Any, calls: list[dict] | None = None) -> dict[str, Any]:
    """An OpenAI chat message; an assistant's tool calls with no text carry no `content` key, as the request
    litellm sends for it has none (so the context stored is the one a replay sends)."""
    msg: dict[str, Any] = {"role": role}
    if content is not None or not calls:
        msg["content"] = content
    if calls:
        msg["tool_calls"] = calls
    return msg


def openai_call(call_id: Any, name: Any, arguments: Any) -> dict:
    """An OpenAI chat tool call; arguments written as text are kept as written."""
    args = arguments if isinstance(arguments, str) or arguments is None else text(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def _flat_genai_message(item: dict) -> list[dict]:
    """Deprecated `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` keys of one message."""
    calls = split_indexed(item, "tool_calls")
    msg = chat_message(
        item.get("role"), item.get("content"), [openai_call(c.get("id"), c.get("name"), c.get("arguments")) for c in calls]
    )
    if item.get("tool_call_id") is not None:
        msg["tool_call_id"] = item["tool_call_id"]
    return [msg]


_MESSAGE_EXTRAS = (("tool_call_id", "message.tool_call_id"), ("name", "message.name"))
_PLAIN_MESSAGE = frozenset({"content", "message.content", "role", "message.role"} | {k for pair in _MESSAGE_EXTRAS for k in pair})
_CONTENT_HEADS = ("message.contents", "contents")  # what a key of content items starts with
_CALL_HEADS = ("message.tool_calls", "tool_calls")


def openinference_messages(attrs: Attrs, prefix: str) -> list[dict]:
    """The OpenAI chat messages of an OpenInference list (`prefix.N.message.*`, `prefix` one of
    `llm.input_messages`, `llm.output_messages`), their keys marked used: by a plan worked out once per layout
    of the list (its keys in order; kept with the span's `Shape`, the list's keys picked out only for a shape
    not seen yet) where the list's keys are the usual ones (role, content, tool_call_id, name and tool calls,
    indexes 0, 1, 2…), else message by message (`_flat_openinference_message`), which reads every shape."""
    values = attrs.values
    start = prefix + "."
    if not isinstance(values.get(prefix), list) and attrs.has_prefix(start):
        plans = attrs.shape().plans
        plan = plans.get(prefix, _UNPLANNED)
        if plan is _UNPLANNED:
            keys = tuple([k for k in values if k.startswith(start)])
            plan = _layout_plans.get(keys, _UNPLANNED)
            if plan is _UNPLANNED:
                plan = _usual_plan(keys, len(start))
                if len(_layout_plans) < _SHAPES_KEPT:
                    _layout_plans[keys] = plan
            plans[prefix] = plan
        if plan is not None:
            keys, planned = plan
            attrs.used.update(keys)
            get = values.get
            messages = []
            for role, content, call_id, name, calls in planned:  # as _flat_openinference_message reads each
                if calls is None:
                    msg: dict[str, Any] = {"role": get(role), "content": get(content)}
                else:
                    msg = chat_message(get(role), get(content), [openai_call(get(i), get(n), get(a)) for i, n, a in calls])
                if (value := get(call_id)) is not None:
                    msg["tool_call_id"] = value
                if (value := get(name)) is not None:
                    msg["name"] = value
                messages.append(msg)
            return messages
    return [m for item in attrs.indexed(prefix) for m in _flat_openinference_message(item)]


_MESSAGE_SLOTS = {"role": 0, "content": 1, "tool_call_id": 2, "name": 3}
_CALLS = "tool_calls."
_CALL_SLOTS = {"tool_call.id": 0, "tool_call.function.name": 1, "tool_call.function.arguments": 2}
_NO_KEY = object()  # a field the span's list does not hold: never a key, so looking it up gives None
_Plan = tuple[tuple[str, ...], list[tuple[Any, Any, Any, Any, list[tuple[Any, ...]] | None]]]
_UNPLANNED: Any = object()
_layout_plans: dict[tuple, Any] = {}  # a list's keys → _Plan, or None (read the general way)


def _usual_plan(keys: tuple[str, ...], size: int) -> _Plan | None:
    """Where each field of each message of a list is among its keys (`<prefix>.N.message.<field>` and
    `<prefix>.N.message.tool_calls.M.tool_call.<field>`, the prefix with its dot `size` long): (the keys,
    [(role key, content key, tool_call_id key, name key, [(id key, name key, arguments key)] or None)]), absent
    fields `_NO_KEY`; None where a key is of another shape or the indexes are not 0, 1, 2… in order (the
    general way reads those)."""
    groups: dict[str, list] = {}  # index → [role, content, tool_call_id, name, {call index → [id, name, arguments]}]
    plan: _Plan | None = None
    for key in keys:
        index, found, field = key[size:].partition(".message.")
        if not found or "." in index or "\n" in key:
            break
        group = groups.get(index)
        if group is None:
            group = groups[index] = [_NO_KEY, _NO_KEY, _NO_KEY, _NO_KEY, None]
        slot = _MESSAGE_SLOTS.get(field)
        if slot is not None:
            group[slot] = key
            continue
        call_index, found, rest = field.removeprefix(_CALLS).partition(".")
        if not field.startswith(_CALLS) or not found or not rest:
            break
        calls = group[4]
        if calls is None:
            calls = group[4] = {}
        call = calls.get(call_index)
        if call is None:
            call = calls[call_index] = [_NO_KEY, _NO_KEY, _NO_KEY]
        slot = _CALL_SLOTS.get(rest)
        if slot is not None:
            call[slot] = key
    else:
        ordered = tuple(groups) == _INDEX_TEXT[: len(groups)]
        if ordered and all(g[4] is None or tuple(g[4]) == _INDEX_TEXT[: len(g[4])] for g in groups.values()):
            messages = [(*g[:4], None if g[4] is None else [tuple(c) for c in g[4].values()]) for g in groups.values()]
            plan = (keys, messages)
    return plan


def _flat_openinference_message(item: dict) -> list[dict]:
    """One `llm.input_messages.N.message.*` message (text, content items, tool calls); its keys flattened
    (`message.role`) or nested (`role`)."""
    content = item["message.content"] if "message.content" in item else item.get("content")
    role = item["message.role"] if "message.role" in item else item.get("role")
    if item.keys() <= _PLAIN_MESSAGE:  # most messages: text, no content items or tool calls
        msg: dict[str, Any] = {"role": role, "content": content}
    else:
        calls: list[dict] = []
        odd = [k for k in item if k not in _PLAIN_MESSAGE]  # each looked for where one of these keys may hold it
        if any(k.startswith(_CONTENT_HEADS) for k in odd):
            contents = split_indexed(item, "message.contents") or split_indexed(item, "contents")
            if content is None and contents:
                texts = [c.get("message_content.text") for c in contents if c.get("message_content.type", "text") == "text"]
                content = "".join(t for t in texts if isinstance(t, str))
        if any(k.startswith(_CALL_HEADS) for k in odd):
            calls = [
                openai_call(c.get("tool_call.id"), c.get("tool_call.function.name"), c.get("tool_call.function.arguments"))
                for c in split_indexed(item, "message.tool_calls") or split_indexed(item, "tool_calls")
            ]
        msg = chat_message(role, content, calls)
    for key, long in _MESSAGE_EXTRAS:
        if long in item:
            value = item[long]
        elif key in item:
            value = item[key]
        else:
            continue
        if value is not None:
            msg[key] = value
    return [msg]


# ---------------------------------------------------------------------------- model output


def model_output(attrs: Attrs) -> tuple[str | None, list[dict]]:
    """(answer text, tool calls [{id, name, arguments}]) of a model span, from whichever convention holds them."""
    if not attrs.shape().lacks(*_GENAI_OUTPUT):  # else an OpenInference span (or none): its list first
        raw = attrs.peek("gen_ai.output.messages")
        decoded = json_value(raw) if isinstance(raw, str) else raw
        if isinstance(decoded, list):
            attrs.use("gen_ai.output.messages")
            return answer_and_calls([m for item in decoded if isinstance(item, dict) for m in openai_messages(item)])
        items = attrs.indexed("gen_ai.completion")
        if items:
            return answer_and_calls([m for item in items for m in _flat_genai_message(item)])
    messages = openinference_messages(attrs, "llm.output_messages")
    if messages:
        return answer_and_calls(messages)
    key, value, was_json = exporter_output(attrs)
    if value is None:
        value = attrs.get("gen_ai.completion", "output.value")
        was_json = True
    answer, calls = output_value(value, was_json)
    if key and isinstance(json_value(value) if was_json else None, dict):
        attrs.used.discard(key)  # a whole generation object: more than its text and calls, so kept
    return answer, calls


def exporter_output(attrs: Attrs) -> tuple[str | None, Any, bool]:
    """(key, value, is JSON) of any-agent's `genai.output` / `gen_ai.output` and its `…output.type`."""
    for key in ("genai.output", "gen_ai.output"):
        if attrs.peek(key) is not None:
            kind = attrs.get(f"{key}.type", "gen_ai.output.type")
            return key, attrs.get(key), kind != "text"
    return None, None, False


def output_value(value: Any, maybe_json: bool) -> tuple[str | None, list[dict]]:
    """Text and tool calls out of an output value that may be JSON of a known shape."""
    if value is None:
        return None, []
    decoded = json_value(value) if maybe_json and isinstance(value, str) else value
    if isinstance(decoded, list) and decoded and all(isinstance(c, dict) and _call_name(c) for c in decoded):
        return None, [emitted_call(c) for c in decoded]
    if isinstance(decoded, dict):
        found = _from_generation(decoded)
        if found is not None:
            return found
    return text(value), []


def _from_generation(value: dict) -> tuple[str | None, list[dict]] | None:
    """An OpenAI message / LangChain ChatGeneration / {text} object, or None when it is none of them."""
    message = inner if isinstance(inner := value.get("message"), dict) else value
    calls = message.get("tool_calls") or (message.get("additional_kwargs") or {}).get("tool_calls")
    content = message.get("content", value.get("text"))
    if not calls and not isinstance(content, str):
        return None
    return (content or None) if isinstance(content, str) else None, [emitted_call(c) for c in calls or [] if isinstance(c, dict)]


def answer_and_calls(messages: list[dict]) -> tuple[str | None, list[dict]]:
    """The text and tool calls of a model's output messages (OpenAI chat shape)."""
    texts = [m["content"] for m in messages if isinstance(m.get("content"), str)]
    calls = [emitted_call(c) for m in messages for c in m.get("tool_calls") or []]
    return ("\n".join(texts) if texts else None), calls


def _call_name(call: dict) -> Any:
    fn = as_object(call.get("function"))
    return call.get("name") or call.get("tool.name") or fn.get("name")


_ARGUMENT_KEYS = ("arguments", "tool.args", "args", "input")


def emitted_call(call: dict) -> dict:
    """A tool call in any of the shapes written ({name, arguments}, OpenAI's {function: …}, OpenInference's) as
    {id, name, arguments decoded}."""
    fn = as_object(call.get("function"))
    for key in _ARGUMENT_KEYS:
        if key in call:
            args = call[key]
            break
    else:
        args = fn.get("arguments")
    name = call.get("name") or call.get("tool.name") or fn.get("name")  # as _call_name reads it
    return {"id": call.get("id") or call.get("tool_call_id"), "name": name, "arguments": tool_arguments(args)}


# ---------------------------------------------------------------------------- tools


def tool_name(attrs: Attrs, span_name: str) -> str:
    name = attrs.get("gen_ai.tool.name", "tool.name", "traceloop.entity.name")
    if name:
        return str(name)
    return span_name.removeprefix("execute_tool ").strip() or span_name


def tool_call_id(attrs: Attrs) -> str | None:
    value = attrs.get("gen_ai.tool.call.id", "tool_call.id", "tool.call_id")
    return None if value is None else str(value)


TOOL_ARGS = ("gen_ai.tool.call.arguments", "gen_ai.tool.args", "tool_arguments", "input.value", "traceloop.entity.input")


def tool_args(attrs: Attrs) -> Any:
    return tool_arguments(attrs.get(*TOOL_ARGS))


def tool_result(attrs: Attrs) -> str | None:
    """The tool's answer as text; an exporter's JSON-encoded string is decoded once."""
    value = attrs.get("gen_ai.tool.call.result", "tool_response")  # `tool_response`: Pydantic AI's oldest format
    if value is not None:
        return text(value)
    _, value, was_json = exporter_output(attrs)
    if value is not None:
        decoded = json_value(value) if was_json else None
        return decoded if isinstance(decoded, str) else text(value)
    return text(attrs.get("output.value", "traceloop.entity.output"))


# ---------------------------------------------------------------------------- agents and sessions


def agent_name(attrs: Attrs) -> str | None:
    value = attrs.get("gen_ai.agent.name", "agent.name", "gen_ai.agent.id")
    return None if value is None else str(value)


def model_name(attrs: Attrs) -> str | None:
    value = attrs.get("gen_ai.response.model", "gen_ai.request.model", "llm.model_name")
    return None if value is None else str(value)


def requested_model(attrs: Attrs) -> str | None:
    value = attrs.get("gen_ai.request.model", "llm.model_name")
    return None if value is None else str(value)


# who a run served and the conversation it is part of: the OTel semantic conventions' names, then Langfuse's
USER_KEYS = ("user.id", "enduser.id", "langfuse.user.id")
THREAD_KEYS = ("session.id", "gen_ai.conversation.id", "langfuse.session.id")


_RUN_ID_WIDTH = width(sessions.c.id)


def conversation_id(attrs: dict[str, Any]) -> str | None:
    """The run a span names (its conversation): an id too wide for a run's is cut apart (storage/widths.cut_apart),
    so a conversation is one run in every batch and two conversations alike in their start stay two."""
    value = attrs.get("gen_ai.conversation.id") or attrs.get("session.id")
    if value in (None, ""):
        return None
    named = str(value)
    return named if len(named) <= _RUN_ID_WIDTH else cut_apart(named, sessions.c.id)  # read per span: the short way first


def root_output(attrs: Attrs) -> str | None:
    """The run's final answer when its root span records one."""
    raw = attrs.peek("gen_ai.output.messages")
    if raw is not None or attrs.peek("output.value") is not None:
        answer, _ = model_output(attrs)
        return answer
    return None

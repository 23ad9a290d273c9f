"""LangChain / LangSmith run trees: nested `child_runs`, flat runs with `parent_run_id`, or the LangSmith SDK's
payloads (`{"post": [...], "patch": [...]}`: a run's start and its end sent apart, merged here by run id;
a `patch` whose `post` is missing is refused by name, never dropped).

One trace (a root run and its descendants) is one session; its root's `extra.metadata` names its user
(`user_id`) and thread (`thread_id`, `session_id` or `conversation_id`, as LangSmith groups threads). Runs are walked in
execution order (`dotted_order`, else start time): `llm`/`chat_model` runs → think
(decision when the text calls no tool; model, tokens, the prompt messages as the step's context) plus a
tool_call per tool call the model made; `tool` runs → tool_result (tool_call first
when no model call announced it), `error` set → status error; every other run type
(chain, agent, retriever, prompt, parser…) → a span. Parent links follow the tree.
A tool run's output may be the ToolMessage itself (its content is the result), and
an error is LangChain's `repr(exc)` plus traceback: the class and message are kept,
the traceback stays in metadata. The root's `error` fails the session; its text
output is the outcome.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import orjson

from .chat_messages import text_of
from .jsondoc import as_object, has_key, is_json_lines, json_lines, load_json, parse_arguments, starts_json
from .reader import BadRecord, Event
from .runs import Run, compact, parse_time

LLM_TYPES = ("llm", "chat_model")
_CONSUMED = (
    "id",
    "name",
    "run_type",
    "start_time",
    "end_time",
    "inputs",
    "outputs",
    "error",
    "child_runs",
    "parent_run_id",
    "trace_id",
    "dotted_order",
    "child_run_ids",
    "prompt_tokens",
    "completion_tokens",
    "total_cost",
    "tags",
)


_ERROR_CLASS = re.compile(r"[A-Za-z_][\w.]*")
_TRACEBACK = "Traceback (most recent call last)"


def _plain(value: Any) -> str | None:
    """A run output as text: a string, the usual output keys, a message's content, else compact JSON."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("output", "answer", "result", "text", "content"):
            if isinstance(value.get(key), str):
                return value[key]
        message = _message_dict(value.get("output"))
        if "content" in message:
            return text_of(message["content"])
    return orjson.dumps(value, default=str).decode()


def _error(error: Any) -> tuple[str, str]:
    """Class name and message of a run error: `Cls('msg')Traceback…` (LangChain tracers) or `Cls: msg`."""
    message = str(error).split(_TRACEBACK)[0].strip() or str(error)
    head = _ERROR_CLASS.match(message)
    return (head.group(0) if head else message)[:200], message


def _message_dict(msg: Any) -> dict:
    """A serialised LangChain message (`{"lc":1,"kwargs":{...}}` or plain) as its fields."""
    if isinstance(msg, dict) and isinstance(msg.get("kwargs"), dict):
        return msg["kwargs"]
    return msg if isinstance(msg, dict) else {}


def _generation(outputs: Any) -> tuple[str, list[dict], dict]:
    """Text, tool calls and token usage of an llm run's outputs."""
    outputs = outputs if isinstance(outputs, dict) else {}
    gens = outputs.get("generations") or []
    first = (
        gens[0][0] if gens and isinstance(gens[0], list) and gens[0] else (gens[0] if gens and isinstance(gens[0], dict) else {})
    )
    message = _message_dict(first.get("message")) if isinstance(first, dict) else {}
    text = (first.get("text") if isinstance(first, dict) else None) or text_of(message.get("content")) or ""
    calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict) and "function" not in c]  # LangChain's own
    if not first and isinstance(outputs.get("choices"), list):  # an OpenAI completion (the SDK's wrap_openai)
        choice = outputs["choices"][0] if outputs["choices"] else {}
        message = as_object(choice.get("message")) if isinstance(choice, dict) else {}
        text = text_of(message.get("content")) or ""
    if not calls:
        for call in message.get("tool_calls") or (message.get("additional_kwargs") or {}).get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict):
                calls.append({"name": fn.get("name"), "args": parse_arguments(fn.get("arguments")), "id": call.get("id")})
    usage = (
        (outputs.get("llm_output") or {}).get("token_usage")
        or message.get("usage_metadata")
        or outputs.get("usage_metadata")
        or outputs.get("usage")
        or {}
    )
    return text, calls, usage


class _Trace:
    def __init__(self, run: Run, children: dict[str, list[dict]]):
        self.run = run
        self.children = children
        self.calls: dict[str, str | None] = {}  # open tool_call id (announced by a model) -> tool name

    def walk(self, node: dict, parent: str | None, where: str) -> None:
        rid = str(node.get("id") or f"{where}")
        kind = node.get("run_type") or "chain"
        started, ended = parse_time(node.get("start_time")), parse_time(node.get("end_time"))
        duration = (ended - started).total_seconds() * 1000 if started and ended and ended >= started else None
        error = node.get("error")
        rest = {k: v for k, v in node.items() if k not in _CONSUMED}
        common: dict[str, Any] = {
            "where": where,
            "parent_id": parent,
            "timestamp": started,
            "duration_ms": duration,
            "status": "error" if error else "ok",
            "error_class": _error(error)[0] if error else None,
        }
        extra = as_object(rest.get("extra"))
        if kind in LLM_TYPES:
            self._llm(rid, node, common, extra, rest)
            me = parent
        elif kind == "tool":
            self._tool(rid, node, common, rest)
            me = parent
        else:
            self.run.step(
                rid,
                "span",
                **common,
                content=node.get("name") or kind,
                metadata={
                    **rest,
                    "run_type": kind,
                    "inputs": node.get("inputs"),
                    "outputs": node.get("outputs"),
                    "error": error,
                    "tags": node.get("tags"),
                },
            )
            me = rid
        kids = list(node.get("child_runs") or []) + self.children.get(rid, [])
        kids.sort(key=lambda r: (str(r.get("dotted_order") or ""), str(r.get("start_time") or "")))
        for j, child in enumerate(kids):
            if isinstance(child, dict):
                self.walk(child, me, f"{where}.child_runs[{j}]")

    def _llm(self, rid: str, node: dict, common: dict, extra: dict, rest: dict) -> None:
        text, calls, usage = _generation(node.get("outputs"))
        params = extra.get("invocation_params") or {}
        meta = (extra.get("metadata") or {}) if isinstance(extra.get("metadata"), dict) else {}
        usage = usage or as_object(meta.get("usage_metadata"))
        model = params.get("model") or params.get("model_name") or meta.get("ls_model_name")
        inputs = node.get("inputs") or {}
        context = inputs.get("messages") or inputs.get("prompts")
        kind = "decision" if text and not calls else "think"  # an answer that calls no tool ends the loop
        self.run.step(
            rid,
            kind,
            **common,
            content=text,
            model=model,
            context=context,
            tokens_in=node.get("prompt_tokens") or usage.get("prompt_tokens") or usage.get("input_tokens"),
            tokens_out=node.get("completion_tokens") or usage.get("completion_tokens") or usage.get("output_tokens"),
            cost_usd=node.get("total_cost"),
            metadata={**rest, "name": node.get("name"), "error": node.get("error")},
        )
        for j, call in enumerate(calls):
            key = f"{rid}.call{j}"
            self.calls[call.get("id") or key] = call.get("name")
            self.run.step(
                key,
                "tool_call",
                where=common["where"],
                parent_id=common["parent_id"],
                timestamp=common["timestamp"],
                tool_name=call.get("name"),
                tool_args=call.get("args"),
                tool_call_id=call.get("id") or key,
            )

    def _tool(self, rid: str, node: dict, common: dict, rest: dict) -> None:
        name = node.get("name")
        inputs = node.get("inputs") or {}
        args = parse_arguments(inputs.get("input")) if set(inputs) == {"input"} else inputs
        extra = as_object(rest.get("extra"))
        announced = extra.get("tool_call_id")
        call_id = announced if announced in self.calls else next((cid for cid, n in self.calls.items() if n == name), None)
        if call_id is not None:
            del self.calls[call_id]
        else:
            call_id = f"{rid}.call"
            self.run.step(
                call_id,
                "tool_call",
                where=common["where"],
                parent_id=common["parent_id"],
                timestamp=common["timestamp"],
                tool_name=name,
                tool_args=args,
                tool_call_id=call_id,
            )
        error = node.get("error")
        content = _error(error)[1] if error else _plain(node.get("outputs"))
        self.run.step(
            rid,
            "tool_result",
            **common,
            tool_name=name,
            tool_call_id=call_id,
            content=content,
            metadata={
                **rest,
                "outputs": node.get("outputs") if not isinstance(node.get("outputs"), str) else None,
                "error": error if error and error != content else None,
            },
        )


def _roots(runs: list[dict]) -> tuple[list[dict], dict[str, list[dict]]]:
    """Top-level runs and a parent id → children index for flat exports."""
    ids = {str(r.get("id")) for r in runs if r.get("id")}
    children: dict[str, list[dict]] = defaultdict(list)
    roots = []
    for r in runs:
        parent = r.get("parent_run_id")
        if parent and str(parent) in ids:
            children[str(parent)].append(r)
        else:
            roots.append(r)
    return roots, children


def _is_payload(doc: dict) -> bool:
    """A LangSmith SDK batch (`/runs/batch` body): `post` and/or `patch` lists of runs, nothing else of a run."""
    halves = [doc.get(k) for k in ("post", "patch") if k in doc]
    return bool(halves) and all(isinstance(h, list) for h in halves) and "run_type" not in doc


def merge_halves(posts: Any, patches: Any, where: str) -> tuple[list[dict], list[BadRecord]]:
    """Whole runs from a LangSmith payload's halves: each `patch` (end time, outputs, error…) laid over the `post`
    of the same run id, a field the patch leaves null kept from the post. A patch whose post is not here is a
    BadRecord naming it (its run cannot be placed without its start)."""
    runs: dict[str, dict] = {}
    for run in posts if isinstance(posts, list) else []:
        if isinstance(run, dict):
            rid = str(run.get("id"))
            runs[rid] = {**runs.get(rid, {}), **run}
    orphans = []
    for j, patch in enumerate(patches if isinstance(patches, list) else []):
        pid = str(patch.get("id")) if isinstance(patch, dict) else None
        if pid is None or pid not in runs:
            name = f" ({patch.get('name')})" if isinstance(patch, dict) and patch.get("name") else ""
            orphans.append(BadRecord(f"{where} patch[{j}]", f"a patch of run {pid}{name} whose post is not here"))
            continue
        runs[pid].update({k: v for k, v in patch.items() if v is not None})
    return list(runs.values()), orphans


_THREAD_KEYS = ("thread_id", "session_id", "conversation_id")  # what LangSmith groups a thread by, in its order


def _user_and_thread(run: dict) -> dict[str, str]:
    """The user and thread a run's `extra.metadata` names (`user_id`; `thread_id`, `session_id` or `conversation_id`)."""
    meta = as_object(as_object(run.get("extra")).get("metadata"))
    thread = next((meta[k] for k in _THREAD_KEYS if meta.get(k) not in (None, "")), None)
    user = meta.get("user_id")
    named = (("user_id", user), ("thread_id", thread))
    return {k: str(v) for k, v in named if v not in (None, "") and not isinstance(v, (dict, list))}


def run_events(runs: list[dict], filename: str) -> Iterator[Event | BadRecord]:
    """Contract events of runs, one session per trace. Runs whose parent is not among them (a payload holding
    part of a trace) join their trace's session under no parent; only the trace's own root ends the session."""
    roots, children = _roots(runs)
    traces: dict[str, list[dict]] = {}
    for i, top in enumerate(roots):
        traces.setdefault(str(top.get("trace_id") or top.get("id") or f"{filename}-{i}"), []).append(top)
    for i, (sid, tops) in enumerate(traces.items()):
        where = f"{filename}:[{i}]" if len(traces) > 1 else filename
        root = next((r for r in tops if str(r.get("id")) == sid or not r.get("parent_run_id")), None)
        head = root or tops[0]
        meta = compact(
            {"tags": None, "project": head.get("session_name"), "reference_example_id": head.get("reference_example_id")}
        )
        run = Run(
            sid,
            where,
            name=root.get("name") if root else None,
            started_at=parse_time(head.get("start_time")),
            agent_id=root.get("name") if root else None,
            tags=[str(t) for t in head.get("tags") or []] or None,
            metadata=meta,
            **_user_and_thread(head),
        )
        trace = _Trace(run, children)
        for j, top in enumerate(tops):
            trace.walk(top, None, where if len(tops) == 1 else f"{where}[{j}]")
        model = next((s.model for s in run.steps if s.model), None)
        if model:
            run.session["model"] = model
        if root is not None:
            ended, error = parse_time(root.get("end_time")), root.get("error")
            if error:
                error_class, message = _error(error)
                run.finish("failed", outcome=message[:2000], error_class=error_class, ended_at=ended)
            elif root.get("end_time") or root.get("outputs") is not None:
                run.finish("succeeded", outcome=_plain(root.get("outputs")), ended_at=ended)
        yield from run.events()


class LangChainFormat:
    name = "langchain"
    label = "LangChain / LangSmith run tree"

    def sniff(self, head: bytes, filename: str) -> bool:
        return (
            starts_json(head)
            and has_key(head, "run_type")
            and (
                has_key(head, "child_runs")
                or has_key(head, "parent_run_id")
                or has_key(head, "trace_id")
                or has_key(head, "inputs")
            )
        )

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord]:
        runs: list[dict] = []
        if is_json_lines(data):
            for item in json_lines(data, filename):
                if isinstance(item, BadRecord):
                    yield item
                elif isinstance(item[1], dict):
                    runs.append(item[1])
                else:
                    yield BadRecord(f"{filename}:{item[0]}", "expected a run object")
        else:
            doc = load_json(data, filename)
            if isinstance(doc, dict) and _is_payload(doc):
                runs, orphans = merge_halves(doc.get("post"), doc.get("patch"), filename)
                yield from orphans
            else:
                doc = doc.get("runs", doc) if isinstance(doc, dict) and isinstance(doc.get("runs"), list) else doc
                runs = [r for r in doc if isinstance(r, dict)] if isinstance(doc, list) else [doc] if doc else []
        if not runs or not all("run_type" in r or "child_runs" in r for r in runs):
            yield BadRecord(filename, "expected LangChain runs (objects with run_type)")
            return
        yield from run_events(runs, filename)


FORMAT = LangChainFormat()

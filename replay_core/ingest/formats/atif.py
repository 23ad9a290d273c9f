"""ATIF trajectories: the Agent Trajectory Interchange Format of harbor / terminal-bench.

One JSON object per run: `schema_version` ("ATIF-v1.x"), `session_id`, `agent` (`name`, `version`,
`model_name` — or `model`, as some writers put it), `steps` and `final_metrics`. A step has a `source`:
`system` and `user` steps are inputs; an `agent` step is one model turn — `reasoning_content` a think
step, `message` a think step (a decision when it calls no tool), `tool_calls` tool_call steps, and the
results in `observation.results` tool_result steps naming their call (`source_call_id`, else the
turn's calls in order). The turn's `metrics` (prompt/completion tokens, cost) go on its model step.
A result recorded before the step holding its call (some writers do) is placed after that call.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from .jsondoc import as_array, as_object, load_json, starts_json
from .reader import BadRecord, Event, Ignored, Records, kind_of
from .runs import Run, compact, parse_time, stable_id

_SCHEMA = re.compile(rb'"schema_version"\s*:\s*"ATIF')
SOURCES = ("system", "user", "agent")
_STEP_KEYS = frozenset(
    {"step_id", "source", "message", "reasoning_content", "tool_calls", "observation", "metrics", "model_name", "timestamp"}
)


def _text(value: Any) -> str | None:
    """A message as text: ATIF messages are text, or (multimodal) a list of parts with `text`."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(str(as_object(p).get("text", "")) for p in value if as_object(p).get("text"))
    return str(value)


class _Trajectory:
    def __init__(self, doc: dict, run: Run, where: str):
        self.run, self.where = run, where
        agent = as_object(doc.get("agent"))
        self.model = agent.get("model_name") or agent.get("model")
        self.seen_calls: set[str] = set()
        self.early: dict[str, list[tuple[str, dict, dict]]] = {}  # results whose call comes later, by call id

    def step(self, step: dict, where: str) -> None:
        source, key = step.get("source"), f"s{step.get('step_id', '')}"
        common: dict[str, Any] = {"where": where, "timestamp": parse_time(step.get("timestamp"))}
        extra = {k: v for k, v in step.items() if k not in _STEP_KEYS}
        if source in ("system", "user"):
            self.run.step(key, "input", content=_text(step.get("message")) or "", metadata={"role": source, **extra}, **common)
            return
        model = step.get("model_name") or self.model
        metrics = as_object(step.get("metrics"))
        usage = {
            "tokens_in": metrics.get("prompt_tokens"),
            "tokens_out": metrics.get("completion_tokens"),
            "cost_usd": metrics.get("cost_usd"),
        }
        calls = [c for c in as_array(step.get("tool_calls")) if isinstance(c, dict)]
        if step.get("reasoning_content"):
            self.run.step(f"{key}.reasoning", "think", content=_text(step["reasoning_content"]), model=model, **common)
        kept = {k: v for k, v in metrics.items() if k not in ("prompt_token_ids", "completion_token_ids", "logprobs")}
        self.run.step(
            key,
            "think" if calls else "decision",
            content=_text(step.get("message")) or "",
            model=model,
            metadata={**extra, "metrics": compact(kept)} if kept else extra,
            **usage,
            **common,
        )
        for i, call in enumerate(calls):
            call_id = call.get("tool_call_id")
            self.run.step(
                f"{key}.call{i}",
                "tool_call",
                tool_name=call.get("function_name"),
                tool_args=call.get("arguments"),
                tool_call_id=call_id,
                **common,
            )
            if call_id:
                self.seen_calls.add(call_id)
                for early_key, result, early_common in self.early.pop(call_id, []):
                    self.result(early_key, result, call_id, early_common)
        call_ids = [c.get("tool_call_id") for c in calls]
        for i, result in enumerate(as_array(as_object(step.get("observation")).get("results"))):
            result = as_object(result)
            call_id = result.get("source_call_id") or (call_ids[i] if i < len(call_ids) else None)
            if call_id and result.get("source_call_id") and call_id not in self.seen_calls:
                self.early.setdefault(call_id, []).append((f"{key}.result{i}", result, common))
            else:
                self.result(f"{key}.result{i}", result, call_id, common)

    def result(self, key: str, result: dict, call_id: str | None, common: dict) -> None:
        extra = {k: v for k, v in result.items() if k not in ("content", "source_call_id")}
        self.run.step(
            key, "tool_result", content=_text(result.get("content")) or "", tool_call_id=call_id, metadata=extra, **common
        )

    def orphans(self) -> None:
        """Results naming a call no step makes: kept, said so."""
        for call_id, results in self.early.items():
            for key, result, common in results:
                self.result(key, {**result, "call_not_found": call_id}, call_id, common)


def _run(doc: dict, filename: str, data: bytes, where: str, n: int) -> Iterator[Event | BadRecord | Ignored]:
    agent = as_object(doc.get("agent"))
    steps = as_array(doc.get("steps"))
    sid = doc.get("session_id") if isinstance(doc.get("session_id"), str) and doc.get("session_id") else None
    times = [t for s in steps if (t := parse_time(as_object(s).get("timestamp")))]
    meta = {k: v for k, v in doc.items() if k not in ("agent", "steps")}
    agent_extra = {k: v for k, v in agent.items() if k not in ("name", "version", "model_name", "model", "tool_definitions")}
    # the file's own session id, with the content's hash: writers reuse ids (harbor's golden files all say
    # NORMALIZED_SESSION_ID, a continuation file repeats its parent's), and two files are two runs
    run = Run(
        f"{sid[:150]}-{stable_id('', data, n).split('-', 1)[1]}" if sid else stable_id(filename, data, n),
        where,
        agent_id=agent.get("name"),
        agent_version=str(agent["version"])[:100] if agent.get("version") is not None else None,
        model=agent.get("model_name")
        or agent.get("model")
        or next((s.get("model_name") for s in steps if as_object(s).get("model_name")), None),
        started_at=min(times, default=None),
        metadata=compact({**meta, "agent": compact(agent_extra)}),
    )
    mapper = _Trajectory(doc, run, where)
    ignored: list[Ignored] = []
    for i, step in enumerate(steps):
        at = f"{where}:steps[{i}]"
        if not isinstance(step, dict) or step.get("source") not in SOURCES:
            kind = f"source={step.get('source')}"[:60] if isinstance(step, dict) and "source" in step else kind_of(step)
            ignored.append(Ignored(at, f"step {kind}", known=False))
            continue
        mapper.step(step, at)
    mapper.orphans()
    said = [s.content.strip() for s in run.steps if (s.metadata or {}).get("role") == "user" and s.content]
    if any(said):
        run.session["name"] = next(text for text in said if text).split("\n", 1)[0][:200]
    if times:
        run.session["ended_at"] = max(times)
    yield from ignored
    yield from run.events()


class AtifFormat:
    name = "atif"
    label = "ATIF trajectories (harbor / terminal-bench)"
    unwatchable = "one JSON document per run, rewritten whole"  # (watch refuses it)

    def sniff(self, head: bytes, filename: str) -> bool:
        return starts_json(head) and _SCHEMA.search(head) is not None

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored | Records]:
        doc = load_json(data, filename)
        docs = doc if isinstance(doc, list) else [doc]
        trajectories = [(i, d) for i, d in enumerate(docs) if isinstance(d, dict) and isinstance(d.get("steps"), list)]
        if not trajectories:
            yield BadRecord(filename, "expected an ATIF trajectory: an object with schema_version, agent and steps")
            return
        yield Records(sum(len(d["steps"]) for _, d in trajectories) + len(docs) - len(trajectories), "trajectory steps")
        for i, d in enumerate(docs):
            if not (isinstance(d, dict) and isinstance(d.get("steps"), list)):
                yield Ignored(f"{filename}[{i}]", kind_of(d), known=False)
        for i, d in trajectories:
            yield from _run(d, filename, data, filename if len(docs) == 1 else f"{filename}[{i}]", i)


FORMAT = AtifFormat()

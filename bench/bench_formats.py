"""Import speed of each agent-format importer (read, validate, redact, store into SQLite).

Each format gets a generated file of ~20,000 steps built by repeating a real or fixture
record with fresh ids; the baseline is parsing the same bytes with orjson alone, so the
ratio says how much the mapping and storing cost on top of reading the file. Reading alone
(`read_<format>`) is timed in CPU seconds of the process, best of three, the baseline too.
"""

from __future__ import annotations

import gc
import re
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import report, timed  # noqa: E402

from replay_core.ingest.pipeline import import_bytes, read_events  # noqa: E402
from replay_core.storage.store import Store  # noqa: E402

FIX = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
REPEAT = 2000
READERS_GOAL = {
    name: ">= 20000 steps per CPU-second read"
    for name in (
        *("claude_code", "codex_cli", "gemini_cli", "openhands", "inspect_ai"),
        *("atif", "langfuse", "letta", "phoenix", "pydantic_ai", "openai_agents", "aider"),
        *("autogen", "crewai", "goose"),
        "cline_ui",
        "openai_input_list",
        *("langchain", "langsmith_batch", "browser_use", "cline_api"),
    )
}


def swe_agent() -> bytes:
    doc = orjson.loads((FIX / "swe_agent/klieret__swe-agent-test-repo-i1.traj").read_bytes())
    doc["trajectory"] = doc["trajectory"] * (REPEAT * 2)
    return orjson.dumps(doc)


def mini_swe_agent() -> bytes:
    msgs = orjson.loads((FIX / "mini_swe_agent/github_issue.traj.json").read_bytes())
    return orjson.dumps(msgs[:2] + msgs[2:-1] * (REPEAT // 2) + msgs[-1:])


def openai_chat() -> bytes:
    turn = [
        {
            "role": "assistant",
            "content": "checking",
            "tool_calls": [
                {"id": "", "type": "function", "function": {"name": "get_order", "arguments": '{"order_id": "A-17"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "", "content": '{"status": "delivered"}'},
    ]
    msgs = [{"role": "user", "content": "refund A-17"}]
    for i in range(REPEAT * 3):
        a, t = orjson.loads(orjson.dumps(turn))
        a["tool_calls"][0]["id"] = t["tool_call_id"] = f"call_{i}"
        msgs += [a, t]
    return orjson.dumps(msgs)


def anthropic() -> bytes:
    msgs = orjson.loads((FIX / "anthropic/messages_transcript.json").read_bytes())
    out = msgs[:1]
    for i in range(REPEAT * 2):
        for m in msgs[1:5]:
            m = orjson.loads(orjson.dumps(m))
            for block in m["content"]:
                for key in ("id", "tool_use_id"):
                    if key in block:
                        block[key] = f"{block[key]}_{i}"
            out.append(m)
    return orjson.dumps(out)


def smolagents() -> bytes:
    line = (FIX / "smolagents/gpt-4o__tool-calling__math__2025-07-24.line2.jsonl").read_bytes().strip()
    return b"\n".join([line] * (REPEAT + 300)) + b"\n"


def notte() -> bytes:
    doc = orjson.loads((FIX / "notte/notte_agent_status.json").read_bytes())
    base = doc["steps"]
    doc["steps"] = []
    for i in range(REPEAT):
        for elem in base[:5]:
            elem = orjson.loads(orjson.dumps(elem))
            if elem["type"].startswith("agent_step"):
                elem["value"]["step_number"] = i
            if elem["type"] == "observation":
                elem["value"]["screenshot"] = None  # attachments are measured by the store, not here
            doc["steps"].append(elem)
    return orjson.dumps(doc)


def langchain() -> bytes:
    root = orjson.loads((FIX / "langchain/langsmith_agent_run.json").read_bytes())
    kids = root["child_runs"]
    root["child_runs"] = []
    for i in range(REPEAT * 2):
        for kid in kids:
            kid = dict(kid, id=f"{kid['id']}-{i}", dotted_order=f"{i:06d}{kid['dotted_order']}")
            root["child_runs"].append(kid)
    return orjson.dumps(root)


def openhands() -> bytes:
    """The real trajectory's run/read pairs, repeated with fresh event ids, causes and model response ids."""
    events = orjson.loads((FIX / "openhands/wrong_initial_state.json").read_bytes())
    out, body = events[:1], events[1:-1]
    for i in range(REPEAT):
        for ev in body:
            ev = orjson.loads(orjson.dumps(ev))
            ev["id"] = ev["id"] + 10 * (i + 1)
            if "cause" in ev:
                ev["cause"] = ev["cause"] + 10 * (i + 1)
            ev["tool_call_metadata"]["model_response"]["id"] += f"-{i}"
            out.append(ev)
    return orjson.dumps(out + events[-1:])


def inspect_ai() -> bytes:
    """The tool-using sample of a log inspect-ai 0.3.285 wrote, its model and tool events repeated with fresh tool call ids."""
    doc = orjson.loads((FIX / "inspect_ai/inspect-0.3.285_mockllm_tool_events.json").read_bytes())
    sample = doc["samples"][0]
    body = [e for e in sample["events"] if e["event"] in ("model", "tool")]
    events = sample["events"][:3]
    for i in range(REPEAT):
        for ev in body:
            ev = orjson.loads(orjson.dumps(ev))
            if ev["event"] == "tool":
                ev["id"] += f"_{i}"
                ev.pop("uuid", None)
            for choice in ev.get("output", {}).get("choices", []):
                for call in choice["message"].get("tool_calls") or []:
                    call["id"] += f"_{i}"
            events.append(ev)
    sample["events"] = events
    doc["samples"] = [sample]
    return orjson.dumps(doc)


def _renamed(line: bytes, i: int, keys: tuple[bytes, ...]) -> bytes:
    """A JSON line with the values of the id-like keys given made unique for copy `i`."""
    for key in keys:
        line = re.sub(rb'("' + key + rb'":\s*")([^"]+)"', lambda m: m.group(1) + m.group(2) + f"-{i}".encode() + b'"', line)
    return line


def claude_code() -> bytes:
    """The real yepanywhere session's 48 lines repeated, uuids, message ids and tool ids renamed per copy."""
    lines = (FIX / "claude_code/yepanywhere_claude-basic_native.jsonl").read_bytes().strip().split(b"\n")
    keys = (b"uuid", b"parentUuid", b"id", b"tool_use_id", b"leafUuid", b"sourceToolAssistantUUID")
    return b"\n".join(_renamed(line, i, keys) for i in range(REPEAT // 2) for line in lines) + b"\n"


def codex_cli() -> bytes:
    """The real 0.47 rollout's response items and token counts repeated (one session_meta), call ids renamed."""
    lines = (FIX / "codex_cli/yoavf_codex-pomodoro-timer_rollout.jsonl").read_bytes().strip().split(b"\n")
    body = [line for line in lines[1:] if b'"turn_context"' not in line]
    return b"\n".join([lines[0], *(_renamed(line, i, (b"call_id",)) for i in range(REPEAT // 6) for line in body)]) + b"\n"


def gemini_cli() -> bytes:
    """The real recording's messages repeated, message and tool-call ids renamed."""
    doc = orjson.loads((FIX / "gemini_cli/yoavf_gemini-cli-pomodoro-timer.json").read_bytes())
    base, doc["messages"] = doc["messages"], []
    for i in range(REPEAT // 6):
        for msg in base:
            msg = orjson.loads(orjson.dumps(msg))
            msg["id"] = f"{msg['id']}-{i}"
            for call in msg.get("toolCalls") or []:
                call["id"] = f"{call['id']}-{i}"
            doc["messages"].append(msg)
    return orjson.dumps(doc)


def atif() -> bytes:
    """harbor's real Terminus-2 trajectory: its agent turns repeated with fresh step and call ids."""
    doc = orjson.loads((FIX / "atif/terminus_2_hello-world-timeout.trajectory.json").read_bytes())
    first, turns = doc["steps"][:1], doc["steps"][1:]
    doc["steps"] = list(first)
    for i in range(REPEAT * 7 // len(turns)):
        for turn in turns:
            turn = orjson.loads(orjson.dumps(turn))
            turn["step_id"] = len(doc["steps"]) + 1
            for call in turn["tool_calls"]:
                call["tool_call_id"] += f"-{i}"
            doc["steps"].append(turn)
    return orjson.dumps(doc)


def langfuse() -> bytes:
    """The UI export's observations repeated under the agent span, ids renamed per copy."""
    doc = orjson.loads((FIX / "langfuse/ui_export_agent_run.json").read_bytes())
    root, body = doc["observations"][0], doc["observations"][1:]
    doc["observations"] = [root]
    for i in range(REPEAT * 5 // 4):
        for obs in body:
            doc["observations"].append({**obs, "id": f"{obs['id']}-{i}"})
    return orjson.dumps(doc)


def letta() -> bytes:
    """The real first-schema agent file's conversation repeated, tool call ids renamed per copy."""
    doc = orjson.loads((FIX / "letta/memgpt_agent_with_convo.af").read_bytes())
    base, doc["messages"] = doc["messages"], []
    for i in range(REPEAT // 12):
        for msg in base:
            msg = orjson.loads(orjson.dumps(msg))
            for call in msg.get("tool_calls") or []:
                call["id"] += f"-{i}"
            if msg.get("tool_call_id"):
                msg["tool_call_id"] += f"-{i}"
            doc["messages"].append(msg)
    return orjson.dumps(doc)


def phoenix() -> bytes:
    """Phoenix's real REST answer repeated as new traces: trace and span ids renumbered per copy."""
    rows = orjson.loads((FIX / "phoenix/rest_spans.json").read_bytes())["data"]
    out = []
    for i in range(REPEAT * 5 // 8):
        tag = f"{i:08x}"
        for row in rows:
            row = orjson.loads(orjson.dumps(row))
            row["context"] = {k: tag + v[8:] for k, v in row["context"].items()}
            row["parent_id"] = tag + row["parent_id"][8:] if row["parent_id"] else None
            out.append(row)
    return orjson.dumps({"data": out, "next_cursor": None})


def pydantic_ai() -> bytes:
    """The real history's tool round trips repeated, tool call ids renamed per copy."""
    msgs = orjson.loads((FIX / "pydantic_ai/messages_ok.json").read_bytes())
    head, body, tail = msgs[:1], msgs[1:-1], msgs[-1:]
    out = list(head)
    for i in range(REPEAT * 5 // 2):
        for msg in body:
            msg = orjson.loads(orjson.dumps(msg))
            for part in msg["parts"]:
                if part.get("tool_call_id"):
                    part["tool_call_id"] += f"-{i}"
            out.append(msg)
    return orjson.dumps(out + tail)


def openai_agents() -> bytes:
    """The real paused run state's generated items and model responses repeated, call ids renamed per copy."""
    doc = orjson.loads((FIX / "openai_agents/run_state_pending_approval.json").read_bytes())
    items, responses = doc["generated_items"], doc["model_responses"]
    doc["generated_items"], doc["model_responses"] = [], []
    for i in range(REPEAT * 5 // 2):
        for item in items[:3]:
            item = orjson.loads(orjson.dumps(item))
            item["raw_item"]["call_id"] += f"-{i}"
            doc["generated_items"].append(item)
        doc["model_responses"] += responses
    return orjson.dumps(doc)


def aider() -> bytes:
    """The real history's conversation repeated under one session header."""
    text = (FIX / "aider/simple-calculator.aider.chat.history.md").read_bytes()
    header, _, body = text.partition(b"\n\n")
    return header + b"\n\n" + body * (REPEAT // 16)


def autogen() -> bytes:
    """The real TaskResult's tool round trips repeated, message and call ids renamed per copy."""
    doc = orjson.loads((FIX / "autogen/task_result_ok.json").read_bytes())
    head, body, tail = doc["messages"][:1], doc["messages"][1:-1], doc["messages"][-1:]
    out = list(head)
    for i in range(REPEAT * 5 // 2):
        for msg in body:
            msg = orjson.loads(orjson.dumps(msg))
            msg["id"] += f"-{i}"
            for item in msg["content"]:
                item["id" if "id" in item else "call_id"] += f"-{i}"
            out.append(msg)
    return orjson.dumps({**doc, "messages": out + tail})


def crewai() -> bytes:
    """The real CrewOutput's task messages: its tool round trips repeated, call ids renamed per copy."""
    doc = orjson.loads((FIX / "crewai/crew_output_ok.json").read_bytes())
    task = doc["tasks_output"][0]
    head, body, tail = task["messages"][:2], task["messages"][2:-1], task["messages"][-1:]
    out = list(head)
    for i in range(REPEAT * 5 // 2):
        for msg in body:
            msg = orjson.loads(orjson.dumps(msg))
            for call in msg.get("tool_calls") or []:
                call["id"] += f"-{i}"
            if msg.get("tool_call_id"):
                msg["tool_call_id"] += f"-{i}"
            out.append(msg)
    task["messages"] = out + tail
    return orjson.dumps(doc)


def openai_input_list() -> bytes:
    """The real input list's tool round trips repeated, call ids renamed per copy."""
    items = orjson.loads((FIX / "openai_agents/result_input_list.json").read_bytes())
    out = items[:1]
    for i in range(REPEAT * 5 // 2):
        out += [{**item, "call_id": f"{item['call_id']}-{i}"} for item in items[1:5]]
    return orjson.dumps(out + items[-1:])


def cline_ui() -> bytes:
    """The real task's 61 UI messages repeated (times moved on per copy)."""
    msgs = orjson.loads((FIX / "cline/ui_messages.first61.json").read_bytes())
    span = msgs[-1]["ts"] - msgs[0]["ts"] + 1
    return orjson.dumps([{**m, "ts": m["ts"] + i * span} for i in range(REPEAT // 3) for m in msgs])


def goose() -> bytes:
    """The real export's call, result and answer repeated (request ids renamed per copy)."""
    doc = orjson.loads((FIX / "goose/export-session.json").read_bytes())
    first, body = doc["conversation"][:1], doc["conversation"][1:]
    out = list(first)
    for i in range(REPEAT * 5 // 2):
        for msg in body:
            text = orjson.dumps(msg).replace(b'"call_mqu1qxwk"', f'"call_mqu1qxwk-{i}"'.encode())
            out.append(orjson.loads(text))
    return orjson.dumps({**doc, "conversation": out})


FORMAT_OF = {"langsmith_batch": "langchain", "cline_api": "anthropic"}  # parts read by a reader of another name
_UUID = re.compile(rb"[0-9a-f]{8}(-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")


def langsmith_batch() -> bytes:
    """The LangSmith SDK's real `/runs/batch` bodies of one agent run (posts and patches, 5 requests) as one
    payload, repeated with every run id renewed per copy (its first 8 hex digits, in ids and dotted orders)."""
    posts: list = []
    patches: list = []
    for path in sorted((FIX / "langsmith/batch-ok").glob("0*.json")):
        body = orjson.loads(path.read_bytes())
        posts += body.get("post") or []
        patches += body.get("patch") or []
    text = orjson.dumps({"post": posts, "patch": patches})
    copies = [_UUID.sub(lambda m, i=i: f"{i:08x}".encode() + m.group(1), text) for i in range(REPEAT * 5 // 4)]
    halves = [orjson.loads(c) for c in copies]
    return orjson.dumps({k: [run for h in halves for run in h[k]] for k in ("post", "patch")})


def browser_use() -> bytes:
    """The real QA agent's history (5 steps of model output, actions and results) repeated, steps numbered on."""
    doc = orjson.loads((FIX / "browser_use/waigenie-qa_agent_history.json").read_bytes())
    base, doc["history"] = doc["history"], []
    for _ in range(REPEAT * 2 // 3):
        for item in base:
            item = orjson.loads(orjson.dumps(item))
            item["metadata"]["step_number"] = len(doc["history"]) + 1
            doc["history"].append(item)
    return orjson.dumps(doc)


def cline_api() -> bytes:
    """Cline's real `api_conversation_history.json` (its first 12 messages): the turns after the task repeated,
    tool_use ids renamed per copy."""
    msgs = orjson.loads((FIX / "cline/api_conversation_history.first12.json").read_bytes())
    out = msgs[:1]
    for i in range(REPEAT // 2):
        for msg in msgs[1:]:
            msg = orjson.loads(orjson.dumps(msg))
            for block in msg["content"] if isinstance(msg["content"], list) else []:
                if block.get("type") == "tool_use":
                    block["id"] = f"{block['id']}-{i}"
            out.append(msg)
    return orjson.dumps(out)


def _baseline(name: str, data: bytes):
    """What reading the same bytes costs at the least: orjson parsing them (each line of JSON Lines)."""
    if name == "aider":  # markdown, not JSON: the baseline is splitting its decoded lines
        return lambda data: data.decode().split("\n")
    if data.lstrip().startswith(b"{") and b"\n{" in data:
        return lambda data: [orjson.loads(x) for x in data.split(b"\n") if x]
    return orjson.loads


def cpu_best(fn, *args, runs: int = 3):
    """`fn(*args)`'s result and its best CPU time of `runs` (the process's CPU seconds, which a shared
    machine's load changes far less than the wall clock); the collector is run before each."""
    best, result = float("inf"), None
    for _ in range(runs):
        result = None
        gc.collect()
        start = time.process_time()
        result = fn(*args)
        best = min(best, time.process_time() - start)
    return result, best


def main() -> None:
    makers = {
        "swe_agent": swe_agent,
        "mini_swe_agent": mini_swe_agent,
        "openai_chat": openai_chat,
        "anthropic": anthropic,
        "smolagents": smolagents,
        "notte": notte,
        "langchain": langchain,
        "openhands": openhands,
        "inspect_ai": inspect_ai,
        "claude_code": claude_code,
        "codex_cli": codex_cli,
        "gemini_cli": gemini_cli,
        "atif": atif,
        "langfuse": langfuse,
        "letta": letta,
        "phoenix": phoenix,
        "pydantic_ai": pydantic_ai,
        "openai_agents": openai_agents,
        "aider": aider,
        "autogen": autogen,
        "crewai": crewai,
        "cline_ui": cline_ui,
        "openai_input_list": openai_input_list,
        "goose": goose,
        "langsmith_batch": langsmith_batch,
        "browser_use": browser_use,
        "cline_api": cline_api,
    }
    only = set(sys.argv[1:])  # e.g. `bench_formats.py claude_code codex_cli`: just these
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in makers.items():
            if only and name not in only:
                continue
            data = make()
            baseline = _baseline(name, data)
            _, parse = timed(baseline, data)
            store = Store(f"sqlite:///{tmp}/{name}.db")
            fmt = FORMAT_OF.get(name, name)
            result, seconds = timed(import_bytes, store, data, f"bench.{name}", fmt=fmt)
            store.close()
            steps = result.steps
            if name in READERS_GOAL:  # each reader reads >= 20,000 steps per CPU-second (reading alone, then with storing)
                events, read_cpu = cpu_best(read_events, data, f"bench.{name}", fmt)
                read_steps = sum(1 for e in events[0] if e.kind == "step")
                del events
                _, parse_cpu = cpu_best(baseline, data)
                report(
                    f"read_{name}_{read_steps}",
                    read_steps / read_cpu,
                    "steps/CPU-s",
                    READERS_GOAL[name],
                    read_steps / parse_cpu,
                    read_cpu_ms=round(read_cpu * 1000),
                    orjson_cpu_ms=round(parse_cpu * 1000),
                )
            report(f"import_{name}_sqlite_{steps}", steps / seconds, "steps/s", "measured; no goal set", steps / parse)


if __name__ == "__main__":
    main()

"""The timeline's selected step and the agent's state there: the step drawn by the browser as one
element (heading, facts, its call's arguments, content verbatim or as a tree, a file write as a diff),
what the agent saw (the context it was sent, each message marked recorded or rebuilt), the totals so
far, goal and memory, and where the step sits in the run's structure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
import streamlit as st

from replay_core.events import StepEvent
from replay_core.ingest.pricing import is_estimated
from replay_core.understand.file_writes import classify, file_write
from replay_core.understand.snapshot import Snapshot, rebuild_messages
from replay_core.understand.structure import Structure, node_label
from replay_core.understand.timeline import Timeline

from . import components
from .common import PAGE_PLAYGROUND, fmt_cost, fmt_duration, md, note_line, short, step_label
from .timeline_view import METRIC_WIDTH, args_text, go, is_error

MAX_MESSAGES = 12
MAX_TEXT = 20_000  # characters: longer text is cut, and says how much was left off
MAX_TREE_NODES = 200
MODEL_OUTPUT = ("think", "tool_call", "decision")  # the steps a playground opens
# who speaks in a step, as a chat bubble: the person's input, the model's words and calls, a tool's answer
SPEAKER = {"input": "user", "think": "assistant", "decision": "assistant", "tool_call": "assistant"}
SPEAKER |= {"tool_result": "tool", "observation": "tool"}


# ------------------------------------------------------------------ the selected step


def _answered_call(tl: Timeline, pos: int):
    """The tool call a result answers (same tool_call_id, looking back a little)."""
    step = tl.steps[pos]
    if step.type not in ("tool_result", "error", "observation") or not step.tool_call_id:
        return None
    for back in range(pos - 1, max(-1, pos - 200), -1):
        earlier = tl.steps[back]
        if earlier.type == "tool_call" and earlier.tool_call_id == step.tool_call_id:
            return earlier
    return None


def show_text(text: str | None) -> None:
    """Content exactly as recorded, drawn by Streamlit (goal & memory values), by content_view's rule."""
    view = content_view(text)
    if view is None:
        return
    if "tree" in view:
        st.json(view["tree"], expanded=2)
        with st.expander("As recorded"):
            st.code(_cut(view["recorded"]), language=None, wrap_lines=True)
    elif "box" in view:
        st.code(view["box"], language=None, wrap_lines=True)
    else:
        st.text(view["line"])


def _boxed(stripped: str) -> bool:
    """Text shown verbatim in a box (a line break, or longer than a line), not as one plain line."""
    return "\n" in stripped or len(stripped) > 200


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"\n… ({len(text) - MAX_TEXT:,} more characters)"


def args_view(tool: str | None, args: Any) -> dict:
    """A call's arguments as the step's view draws them: a tree, and each long or multi-line text value (a
    file's contents) verbatim in a box; arguments that are no object or list as their text."""
    if isinstance(args, (dict, list)):
        long = (
            [[key, _cut(value)] for key, value in args.items() if isinstance(value, str) and _boxed(value)]
            if isinstance(args, dict)
            else []
        )
        return {"tool": tool or "a tool", "tree": args, "long": long}
    return {"tool": tool or "a tool", "text": args_text(args) or "(no arguments)"}


def content_view(text: str | None) -> dict | None:
    """Content exactly as recorded, as the step's view (and show_text) draws it: JSON as a tree with the
    recorded text one click away, anything with a line break or longer than a line verbatim in a box (cut
    past MAX_TEXT, said), a short line as plain text."""
    if not text:
        return None
    stripped = text.strip()
    if stripped[:1] in "[{" and len(stripped) <= MAX_TEXT:
        try:
            return {"tree": orjson.loads(stripped), "recorded": text}
        except orjson.JSONDecodeError:
            pass
    return {"box": _cut(text)} if _boxed(stripped) else {"line": text}


def write_view(tl: Timeline, pos: int) -> None:
    """A call that writes a file: what it changes, as a diff against what the run last saw of that file (derived, said so)."""
    step = tl.steps[pos]
    # a call whose own arguments write no file is ruled out without file_write's pass over the whole run
    # (classify reads other steps only for a call recorded without arguments)
    if step.type != "tool_call" or (step.tool_args is not None and classify(step, {}) is None):
        return
    change = file_write(tl.steps, pos)
    if change is None:
        return
    st.markdown(f"**What it changes in {md(change.path)}**")
    st.caption(md(change.note))
    if change.diff:
        st.code(
            _cut(change.diff), language="diff" if change.base is not None or change.kind != "write" else None, wrap_lines=True
        )


def step_detail(tl: Timeline, pos: int, structure: Structure, notes: list[dict]) -> None:
    """The selected step, one element drawn by the browser (ui/components.py); then what a call changes in a
    file (derived, said so) and, when opened, everything recorded for it."""
    components.step_detail(step_view(tl, pos, structure, notes), key="step_view")
    step = tl.steps[pos]
    if step.type in MODEL_OUTPUT:
        st.page_link(
            PAGE_PLAYGROUND,
            label="Open in playground",
            icon=":material/edit_note:",
            query_params={"session": tl.id, "step": str(step.seq)},
            help="Edit the messages this model call was sent, ask a model again, and see its answer beside this one.",
        )
    write_view(tl, pos)
    # drawn only when opened (a click's repaint redrew the whole step's tree, hidden, every time)
    raw = st.expander("Everything recorded for this step", key="step_raw", on_change="rerun")
    if raw.open:
        with raw:
            st.json(tl.steps[pos].to_json_dict(), expanded=1)


def step_view(tl: Timeline, pos: int, structure: Structure, notes: list[dict]) -> dict:
    """What components.step_detail draws of a step: its heading and facts, where it sits, the call it
    answers, its arguments, whether it failed, its content and the notes on it, all as plain text."""
    step = tl.steps[pos]
    cycle = tl.cycle_index[pos]
    facts = [f"cycle {cycle + 1} of {len(tl.cycles)}" if cycle is not None else "outside any cycle"]
    if step.status != "ok":
        facts.append(
            f"{'❌' if step.status == 'error' else '⛔'} {step.status}" + (f" ({step.error_class})" if step.error_class else "")
        )
    elif step.error_class:
        facts.append(step.error_class)
    if step.timestamp:
        facts.append(step.timestamp.strftime("%H:%M:%S UTC"))
    if step.duration_ms is not None:
        facts.append(f"took {fmt_duration(step.duration_ms / 1000)}")
    if step.tokens_in or step.tokens_out:
        facts.append(f"{step.tokens_in or 0:,} tokens in / {step.tokens_out or 0:,} out")
    if step.cost_usd is not None:
        facts.append(fmt_cost(step.cost_usd) + (" estimated from list prices" if is_estimated(step.metadata) else ""))
    if step.retry:
        facts.append(f"retry {step.retry}")
    facts += [str(value) for value in (step.agent_id, step.model) if value]
    lines = []
    inside = structure.ancestors(pos)
    if inside:
        lines.append("Inside: " + " › ".join(short(node_label(tl.steps, structure.nodes[p]), 60) for p in inside))
    call = _answered_call(tl, pos)
    if call is not None:
        lines.append(f"Answers the call at step {call.seq}: {call.tool_name or 'tool'}({short(args_text(call.tool_args), 80)})")
    return {
        "heading": f"{step_label(step.type)} · step {step.seq}",
        "facts": " · ".join(facts),
        "lines": lines,
        "call": args_view(step.tool_name, step.tool_args) if step.type == "tool_call" else None,
        "error": f"This step failed{': ' + step.error_class if step.error_class else ''}." if is_error(step) else None,
        "content": content_view(step.content),
        "bubble": SPEAKER.get(step.type),
        "tool": step.tool_name,
        "raw": raw_json(step.to_json_dict()),
        "notes": [note_line(note, markdown=False) for note in notes],
    }


def raw_json(value: Any) -> str:
    """Stored JSON as the "Raw JSON" switch shows it: indented, keys as stored, cut past MAX_TEXT (said)."""
    return _cut(_json(value))


# ------------------------------------------------------------------ state at the step


def message_text(message: dict) -> str:
    """A chat message's text: its content, a list of parts as their texts one a line."""
    content = message.get("content")
    if isinstance(content, list):  # multimodal parts
        content = "\n".join(str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content)
    return "" if content is None else str(content)


def context_view(snap: Snapshot) -> None:
    """What the agent had in front of it, as chat bubbles (the latest messages), each saying where it came from.

    These are exactly the messages a replay starting at this step sends to the model (snapshot.agent_context).
    """
    context, origins = snap.context, snap.agent.origins
    notes = [snap.agent.note() + " This is what a replay from this step sends to the model."]
    hidden = max(0, len(context) - MAX_MESSAGES)
    if not context:
        notes.append("Nothing yet: this is the start of the run.")
    elif hidden:
        notes.append(f"{hidden} earlier message{'s' if hidden != 1 else ''} not shown.")
    tools = {c.get("id"): _call_name(c) for m in context for c in m.get("tool_calls") or () if isinstance(c, dict)}
    shown = zip(context[hidden:], origins[hidden:], strict=True)
    components.transcript(notes, [transcript_message(m, o, tools) for m, o in shown], key="transcript")
    if snap.agent.recorded is not None:
        with st.expander("Context the source recorded (not chat messages)"):
            st.json(snap.agent.recorded, expanded=1)


def _call_name(call: dict) -> str:
    fn = call.get("function")
    return str(fn.get("name") or "a tool") if isinstance(fn, dict) else "a tool"


def pretty_arguments(arguments: Any) -> str:
    """A call's arguments for a person (a JSON string parsed first): an object one `key: value` a line, a text with line
    breaks verbatim under its key (a file's contents as the file reads), other values as JSON on their line; text that
    is no JSON as it is. The stored form is one click away (Raw JSON)."""
    if isinstance(arguments, str):
        try:
            arguments = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments
    if not isinstance(arguments, dict):
        return _json(arguments)
    lines = []
    for key, value in arguments.items():
        if isinstance(value, str) and "\n" in value:
            lines += [f"{key}:", *("  " + line for line in value.splitlines())]
        else:
            lines.append(f"{key}: {orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()}")
    return "\n".join(lines) or "(no arguments)"


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str).decode()


def transcript_message(message: dict, origin: dict, tools: dict | None = None) -> dict:
    """One message as the transcript draws it: its role, where it came from, its text verbatim (JSON too: the text the
    model is sent), each tool call it makes (name, id, arguments indented), for a tool's answer the tool it answers
    (`tools`: call id → tool name), and the message as stored."""
    role = str(message.get("role"))
    where = "as recorded at" if origin["source"] == "recorded" else "rebuilt from"
    text = message_text(message)
    stripped = text.strip()
    calls = [
        {"name": _call_name(call), "id": call.get("id"), "arguments": _cut(pretty_arguments(call["function"].get("arguments")))}
        for call in message.get("tool_calls") or []
        if isinstance(call, dict) and isinstance(call.get("function"), dict)
    ]
    out = {
        "role": role,
        "origin": f"{role} · {where} step {origin['seq']}",
        "parts": [("text", _cut(text)) if _boxed(stripped) else ("line", text)] if stripped else [],
        "calls": calls,
        "json": raw_json(message),
    }
    if role == "tool":
        call_id = message.get("tool_call_id")
        out |= {"tool": message.get("name") or (tools or {}).get(call_id), "call_id": call_id}
    return out


def answer_message(steps: Sequence[StepEvent], origin: str) -> dict:
    """Model steps (an answer, a call, a tool's result) as one chat bubble, rebuilt as a replay sends them, saying
    whose it is; an error step is left out (say it apart)."""
    messages = rebuild_messages([s for s in steps if s.type != "error"]) or [{"role": "assistant", "content": ""}]
    shown = transcript_message(messages[-1], {"source": "rebuilt", "seq": steps[0].seq if steps else 0})
    return {**shown, "origin": origin}


def totals_view(snap: Snapshot) -> None:
    t, card = snap.totals, components.card
    cards = [
        card("Tokens in", f"{t['tokens_in']:,}"),
        card("Tokens out", f"{t['tokens_out']:,}"),
        card("Cost so far", fmt_cost(t["cost_usd"])),
        card("Time since start", fmt_duration(t["elapsed_s"])),
        card("Tool calls", f"{t['tool_calls']:,}"),
        card("Errors", f"{t['errors']:,}"),
        card("Retries", f"{t['retries']:,}"),
    ]
    if t["cost_unknown_steps"]:
        cards.append(card("Steps without a price", f"{t['cost_unknown_steps']:,}", help="Model steps whose cost is unknown"))
    components.metrics(cards, key="totals_metrics", width=METRIC_WIDTH)


def state_view(snap: Snapshot) -> None:
    for key, value in snap.state.items():
        st.markdown(f"**{md(key.replace('_', ' ').capitalize())}**")
        if isinstance(value, (dict, list)):
            st.json(value, expanded=1)
        else:
            show_text(str(value))


def structure_view(tl: Timeline, structure: Structure, pos: int) -> None:
    nodes = structure.walk()
    if not nodes:
        st.caption("This run is flat: no agents, groups or retries are nested in it.")
        return
    inside = set(structure.ancestors(pos))
    st.caption("Click a group to go to its first step.")
    with st.container(gap="xxsmall"):
        for node in nodes[:MAX_TREE_NODES]:
            label = md(node_label(tl.steps, node))
            if node.position in inside or node.position == pos:
                label = f"**{label}** ← you are here"
            st.button(
                "\u2003" * 2 * node.depth + label,
                key=f"node_{node.position}",
                type="tertiary",
                on_click=go,
                args=(tl.steps[node.position].seq,),
                help=f"Go to step {tl.steps[node.position].seq}",
            )
    if len(nodes) > MAX_TREE_NODES:
        st.caption(f"{len(nodes) - MAX_TREE_NODES} more groups not shown.")

"""browser-use `AgentHistoryList` files (`agent.history.save_to_file(...)`): a browser agent's steps.

One history item is one step of the agent: its `model_output` (thinking, the evaluation of the
previous goal, memory, next goal, a list of actions), the `result` of each action, the browser
`state` it saw (url, title, tabs, the element it acted on, a screenshot) and `metadata` (epoch
start/end, step number, tokens when recorded). Mapped: thinking/evaluation → think (goal and
memory in `metadata.state`, as the timeline's "Goal & memory" reads them); each action →
tool_call (the action's name, its parameters) and its result → tool_result (`error` → status
error; `extracted_content` → content); `done` → the run's end, succeeded or failed by its
`success`. A base64 `state.screenshot` (older releases) becomes an attachment of the step's first
action, with the interacted element's or the click's position as target when recorded; a
`screenshot_path` only names a file on the agent's machine, so it is kept as a reference. A
history without `done` ended without saying how: status unknown. The oldest histories (late 2024)
hold one `action` and one `result` object per item instead of lists, and a `state` with `items`,
`selector_map` and `screenshot` (the page's elements are not kept, the screenshot is).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from .jsondoc import as_array, as_object, has_key, load_json, starts_json
from .reader import BadRecord, Event, Ignored
from .runs import Run, compact, stable_id


def _time(value: Any) -> datetime | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 1e11:
        return datetime.fromtimestamp(value, UTC)
    return None


def _action(item: Any) -> tuple[str | None, Any]:
    """{"click_element": {"index": 3}} → ("click_element", {"index": 3})."""
    if isinstance(item, dict) and len(item) == 1:
        name, params = next(iter(item.items()))
        return str(name), params
    return None, item


def _listed(value: Any) -> list:
    """A list of actions or results; the oldest histories (late 2024) hold one object, not a list."""
    return [value] if isinstance(value, dict) else as_array(value)


def _target(state: dict, result: dict) -> dict | None:
    meta = as_object(result.get("metadata"))
    x, y = meta.get("click_x", meta.get("input_x")), meta.get("click_y", meta.get("input_y"))
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in (x, y)):
        return {"x": x, "y": y}
    return None


class BrowserUseFormat:
    name = "browser_use"
    label = "browser-use AgentHistoryList (history.json)"

    def sniff(self, head: bytes, filename: str) -> bool:
        return (
            starts_json(head)
            and has_key(head, "history")
            and (has_key(head, "model_output") or has_key(head, "interacted_element"))
        )

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored]:
        doc = load_json(data, filename)
        items = doc.get("history") if isinstance(doc, dict) else None
        if not isinstance(items, list):
            yield BadRecord(filename, 'expected {"history": [...]} (a browser-use AgentHistoryList)')
            return
        first = next((i for i in items if isinstance(i, dict)), {})
        start = _time((first.get("metadata") or {}).get("step_start_time")) if isinstance(first.get("metadata"), dict) else None
        run = Run(stable_id(filename, data), filename, agent_id="browser-use", started_at=start)
        done: tuple[bool | None, str | None] | None = None
        ended = None
        for i, item in enumerate(items):
            where = f"{filename}:history[{i}]"
            if not isinstance(item, dict):
                yield BadRecord(where, f"a history item is an object, not {type(item).__name__}")
                continue
            outcome = self._item(run, i, item, where)
            meta = as_object(item.get("metadata"))
            ended = _time(meta.get("step_end_time")) or ended
            done = outcome or done
            if not item.get("model_output") and not item.get("result"):
                yield Ignored(where, "empty history item")
        if done is not None:
            success, text = done
            run.finish(
                "succeeded" if success else "failed", outcome=text, error_class=None if success else "task_failed", ended_at=ended
            )
        else:
            run.finish("unknown", ended_at=ended)
        yield from run.events()

    def _item(self, run: Run, i: int, item: dict, where: str) -> tuple[bool | None, str | None] | None:
        out = as_object(item.get("model_output"))
        brain = current if isinstance(current := out.get("current_state"), dict) else out
        state = as_object(item.get("state"))
        meta = as_object(item.get("metadata"))
        when = _time(meta.get("step_start_time"))
        took = (
            meta.get("step_end_time") - meta["step_start_time"]
            if all(isinstance(meta.get(k), int | float) for k in ("step_start_time", "step_end_time"))
            else None
        )
        n = meta.get("step_number", i)
        goal_state = compact(
            {
                "goal": brain.get("next_goal"),
                "memory": brain.get("memory"),
                "page_summary": compact({"url": state.get("url"), "title": state.get("title")})
                and f"{state.get('title') or ''} — {state.get('url') or ''}".strip(" —"),
            }
        )
        thought = brain.get("thinking") or brain.get("evaluation_previous_goal")
        if thought:
            run.step(
                f"{n}.think",
                "think",
                where=where,
                timestamp=when,
                content=str(thought),
                tokens_in=meta.get("input_tokens"),
                metadata={"state": goal_state, "evaluation_previous_goal": brain.get("evaluation_previous_goal")},
            )
            goal_state = None  # said once, on the step's first event
        actions = _listed(out.get("action"))
        results = _listed(item.get("result"))
        shot = state.get("screenshot") if isinstance(state.get("screenshot"), str) else None
        elements = as_array(state.get("interacted_element"))
        done = None
        for j in range(max(len(actions), len(results))):
            name, params = _action(actions[j]) if j < len(actions) else (None, None)
            result = results[j] if j < len(results) and isinstance(results[j], dict) else {}
            element = elements[j] if j < len(elements) and isinstance(elements[j], dict) else None
            attachments = (
                [{"media_type": "image/png", "data": shot, "target": _target(state, result)}] if shot and j == 0 else None
            )
            call_meta = {
                "element": element,
                "screenshot_path": state.get("screenshot_path") if j == 0 else None,
                "attachments": attachments,
                "url": state.get("url"),
                "state": goal_state,
            }
            goal_state = None
            call_id = f"{n}.{j}"
            if name is not None:
                run.step(
                    f"{call_id}.call",
                    "tool_call",
                    where=where,
                    timestamp=when,
                    tool_name=name,
                    tool_args=params if isinstance(params, dict) else {"value": params},
                    tool_call_id=call_id,
                    metadata=call_meta,
                )
            error = result.get("error")
            text = result.get("extracted_content")
            run.step(
                f"{call_id}.result",
                "error" if name is None and error else "tool_result",
                where=where,
                timestamp=when,
                tool_name=name,
                tool_call_id=call_id if name else None,
                duration_ms=(took * 1000) if took and j == 0 else None,
                content=str(error if error else text if text is not None else ""),
                status="error" if error else "ok",
                error_class="action_error" if error else None,
                metadata={
                    "long_term_memory": result.get("long_term_memory"),
                    "is_done": result.get("is_done") or None,
                    "result_metadata": result.get("metadata"),
                    "attachments": None if name else attachments,
                },
            )
            if result.get("is_done") or name == "done":
                params = params if isinstance(params, dict) else {}
                success = result.get("success", params.get("success"))
                done = (success is True, str(params.get("text") or text or "")[:2000] or None)
        return done


FORMAT = BrowserUseFormat()

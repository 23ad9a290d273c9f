"""A run as pictures: for each step its screenshot (or the last one, dimmed and labelled, or a
card with the step's text where the run has none yet), the action's target drawn on it, and a
caption bar with the step number, type, action, goal and time. Used by the player and the video.
"""

from __future__ import annotations

import io
import textwrap
from dataclasses import dataclass
from functools import lru_cache

from PIL import Image, ImageDraw, ImageFont

from ..events import StepEvent
from ..storage.store import Store
from .images import decoding

SIZE = (1280, 800)
CAPTION_H = 64
RING = (230, 40, 40)


@dataclass
class Shot:
    """What the player shows at one step: the image to use, and whether it is the step's own."""

    step: StepEvent
    attachment: dict | None  # the screenshot shown (None: no screenshot so far in the run)
    own: bool  # False: an earlier step's screenshot, shown dimmed
    goal: str = ""  # the agent's goal as last recorded at or before this step
    target: dict | None = None  # where the step acted: the attachment's, or a click point in the step's arguments

    @property
    def acted_on(self) -> bool:
        """An action on the last screen (a click at x, y): that screen is what the agent acted on, not stale."""
        return not self.own and self.attachment is not None and self.target is not None


def shots(store: Store, session_id: str, steps: list[StepEvent] | None = None, *, only_with_screens: bool = False) -> list[Shot]:
    """One Shot per step, in seq order. The last screenshot of a step is its own.

    `only_with_screens`: none at all for a run without a screenshot (the player's question),
    rather than a Shot per step of a 100,000-step run that has nothing to show.
    """
    by_step: dict[str | None, dict] = {}  # a stored step always has its event_id
    for a in store.list_attachments(session_id):
        if (a.get("mime_type") or "").startswith("image/") and a.get("event_id"):
            by_step[a["event_id"]] = a
    if only_with_screens and not by_step:
        return []
    steps = steps if steps is not None else store.load_steps(session_id)
    out, last, goal = [], None, ""
    for step in steps:
        own = by_step.get(step.event_id)
        last = own or last
        goal = goal_of(step) or goal
        target = (own or {}).get("target") or (click_point(step) if own is None else None)
        out.append(Shot(step, last, own is not None, goal, target))
    return out


def click_point(step: StepEvent) -> dict | None:
    """A click recorded in the action's arguments: computer use's `coordinate: [x, y]`, or `x`/`y`."""
    args = step.tool_args if step.type == "tool_call" and isinstance(step.tool_args, dict) else {}
    coordinate = args.get("coordinate")
    xy = coordinate if isinstance(coordinate, list | tuple) else (args.get("x"), args.get("y"))
    numbers = [v for v in xy if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(xy) == 2 and len(numbers) == 2:
        return {"x": float(numbers[0]), "y": float(numbers[1])}
    return None


def action_of(step: StepEvent) -> str:
    if step.tool_name:
        args = step.tool_args if isinstance(step.tool_args, dict) else {}
        inner = ", ".join(f"{k}={str(v)[:40]}" for k, v in list(args.items())[:3])
        return f"{step.tool_name}({inner})"
    return (step.content or "").strip().splitlines()[0][:120] if step.content else ""


def goal_of(step: StepEvent) -> str:
    state = (step.metadata or {}).get("state") if isinstance(step.metadata, dict) else None
    return str(state.get("goal") or state.get("next_goal") or "")[:120] if isinstance(state, dict) else ""


def _font(size: int):
    try:
        return ImageFont.load_default(size)
    except TypeError:  # Pillow without FreeType sizes
        return ImageFont.load_default()


def draw_target(img: Image.Image, target: dict | None, scale: tuple[float, float] = (1.0, 1.0)) -> None:
    """A ring at a click point, a box around an element (coordinates in the source image's pixels)."""
    if not target:
        return
    d = ImageDraw.Draw(img)
    sx, sy = scale
    if "box" in target:
        x, y, w, h = target["box"]
        d.rectangle([x * sx, y * sy, (x + w) * sx, (y + h) * sy], outline=RING, width=4)
    else:
        x, y, r = target["x"] * sx, target["y"] * sy, 18
        d.ellipse([x - r, y - r, x + r, y + r], outline=RING, width=4)
        d.ellipse([x - 3, y - 3, x + 3, y + 3], fill=RING)


def card(step: StepEvent, size: tuple[int, int]) -> Image.Image:
    """A frame for a step with no screenshot so far: its text on a plain background."""
    img = Image.new("RGB", size, (245, 246, 248))
    d = ImageDraw.Draw(img)
    text = action_of(step) if step.tool_name else (step.content or "")
    lines = textwrap.wrap(text, 90)[:18] or ["(no content recorded)"]
    d.text((48, 48), f"{step.type}", fill=(90, 90, 90), font=_font(28))
    d.multiline_text((48, 100), "\n".join(lines), fill=(20, 20, 20), font=_font(22), spacing=8)
    return img


def caption(step: StepEvent, *, goal: str = "", note: str = "") -> str:
    when = step.timestamp.strftime("%H:%M:%S") if step.timestamp else "time not recorded"
    goal = goal or goal_of(step)
    parts = [f"step {step.seq}", step.type, action_of(step), goal and f"goal: {goal}", when, note]
    return "  ·  ".join(p for p in parts if p)


@lru_cache(maxsize=32)  # a screenshot shown on several steps (dimmed) is decoded and scaled once
def _fitted(store: Store, attachment_id: int, sha256: str | None, box: tuple[int, int]) -> tuple[Image.Image, float]:
    data = store.attachment_data(attachment_id)
    if data is None:  # deleted since the run's shots were listed
        raise LookupError(f"attachment {attachment_id} is no longer stored")
    with Image.open(io.BytesIO(data)) as src, decoding(src, rgb_copy=src.mode != "RGB"):
        rgb = src if src.mode == "RGB" else src.convert("RGB")
        scale = min(box[0] / rgb.width, box[1] / rgb.height)
        # bilinear: a third of bicubic's time, and a screenshot scaled by less than 2× looks the same
        return rgb.resize((max(1, int(rgb.width * scale)), max(1, int(rgb.height * scale))), Image.Resampling.BILINEAR), scale


def render(store: Store, shot: Shot, size: tuple[int, int] = SIZE, *, note: str = "", bar: bool = True) -> Image.Image:
    """One frame: the screenshot fitted into `size` (target drawn, dimmed when not the step's own), then the caption bar."""
    body_h = size[1] - (CAPTION_H if bar else 0)
    frame = Image.new("RGB", size, (0, 0, 0))
    if shot.attachment is None:
        frame.paste(card(shot.step, (size[0], body_h)), (0, 0))
    else:
        fitted, scale = _fitted(store, shot.attachment["id"], shot.attachment.get("sha256"), (size[0], body_h))
        fitted = fitted.copy()
        if shot.own or shot.acted_on:
            draw_target(fitted, shot.target, (scale, scale))
            if shot.acted_on:
                note = "; ".join(n for n in (note, "the screen it acted on (the last screenshot before this step)") if n)
        else:
            fitted = Image.blend(fitted, Image.new("RGB", fitted.size, (255, 255, 255)), 0.55)
            note = "; ".join(n for n in (note, "no screenshot at this step: the last one shown") if n)
        frame.paste(fitted, ((size[0] - fitted.width) // 2, (body_h - fitted.height) // 2))
    if bar:
        d = ImageDraw.Draw(frame)
        d.rectangle([0, body_h, size[0], size[1]], fill=(24, 26, 32))
        d.text((16, body_h + 20), caption(shot.step, goal=shot.goal, note=note)[:150], fill=(240, 240, 240), font=_font(20))
    return frame

"""The demo runs shipped in data/demo (and in the wheel), loaded so that they look recent.

The files are fixed (made by scripts/make_demo.py); on load every timestamp moves by
the same offset so that the newest demo event is a minute old. That keeps the
dashboard's "last 7 days" meaningful and the running demo run alive for a while.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from . import config
from .events import now_utc
from .ingest.formats import Event
from .ingest.pipeline import IngestReport, ingest, read_events
from .storage.store import Store

TIME_FIELDS = ("started_at", "ended_at", "timestamp")
BROWSER_DEMO = "demo-10-browser-change-address"


def demo_files(folder: Path | None = None) -> list[Path]:
    """The demo runs' files: data/demo in a checkout, or as a wheel installs it (config.demo_dir)."""
    return sorted((folder or config.demo_dir()).glob("*.jsonl"))


def read_demo(folder: Path | None = None) -> list[Event]:
    files = demo_files(folder)
    if not files:  # an install without its data would otherwise "load" nothing and say so as a success
        raise FileNotFoundError(f"no demo runs (*.jsonl) in {folder or config.demo_dir()}")
    events: list[Event] = []
    for path in files:
        parsed, bad, _ = read_events(path.read_bytes(), str(path), "native")
        if bad:
            raise ValueError(f"demo file is broken: {bad[0]}")
        events += parsed
    return events


def shifted(events: list[Event], now: datetime | None = None) -> list[Event]:
    """The same events, moved in time so that the newest is a minute before `now`."""
    stamps = [getattr(e, f) for e in events for f in TIME_FIELDS if getattr(e, f, None)]
    if not stamps:
        return events
    offset: timedelta = (now or now_utc()) - timedelta(minutes=1) - max(stamps)
    out = []
    for ev in events:
        update = {f: getattr(ev, f) + offset for f in TIME_FIELDS if getattr(ev, f, None)}
        out.append(ev.model_copy(update=update) if update else ev)
    return out


def load_demo(store: Store, *, only_if_empty: bool = True, now: datetime | None = None) -> IngestReport | None:
    """Load the demo runs; by default only into an empty database."""
    if only_if_empty and store.count_sessions() > 0:
        return None
    report = ingest(store, shifted(read_demo(), now), source="demo")
    if store.get_session(BROWSER_DEMO) is not None:
        screenshot_browser_demo(store)
    return report


def screenshot_browser_demo(store: Store) -> int:
    """Give the browser demo the screenshots a browser agent would have: each page it was shown, drawn
    from the tool result's text, on the result step, and the same page with the clicked element boxed on
    the click that follows (one stored image for both: the page did not change). Deterministic."""
    from .media.attachments import attach_image

    url, page, n = None, None, 0
    for step in store.load_steps(BROWSER_DEMO):
        args = step.tool_args if isinstance(step.tool_args, dict) else {}
        url = args.get("url", url)
        if step.type == "tool_result" and step.content:
            page = _draw_page(url or "about:blank", step.content)
            attach_image(store, BROWSER_DEMO, step.event_id, page[0], name=f"page-{step.seq}.png")
            n += 1
        elif step.type == "tool_call" and page is not None and "selector" in args:
            box = next((b for label, b in page[1].items() if label.lower() in str(args["selector"]).lower()), None)
            attach_image(
                store,
                BROWSER_DEMO,
                step.event_id,
                page[0],
                name=f"before-{step.seq}.png",
                target={"box": list(box)} if box else None,
            )
            n += 1
    return n


def _draw_page(url: str, text: str) -> tuple[bytes, dict[str, tuple[int, int, int, int]]]:
    """A plain rendered page: browser bar, title, lines, and [Buttons] as buttons; returns the PNG and
    each button's (or order id's) box, so a click on it can be drawn where it is."""
    import io
    import re

    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (1024, 640), (255, 255, 255))
    d = ImageDraw.Draw(img)
    font, big = ImageFont.load_default(18), ImageFont.load_default(28)
    d.rectangle([0, 0, 1024, 44], fill=(222, 225, 230))
    d.rounded_rectangle([16, 8, 1008, 36], radius=12, fill=(255, 255, 255))
    d.text((32, 12), url, fill=(60, 60, 60), font=font)
    title, _, body = text.partition(":")
    d.text((40, 70), title.strip().strip("'"), fill=(20, 40, 90), font=big)
    boxes: dict[str, tuple[int, int, int, int]] = {}
    y = 130
    for line in [part.strip() for part in re.split(r"[;.] ", body) if part.strip()]:
        buttons = re.findall(r"\[([^\]]+)\]", line)
        plain = re.sub(r"\[[^\]]+\]", "", line).strip()
        d.text((40, y), plain, fill=(30, 30, 30), font=font)
        for order in re.findall(r"W-\d+", plain):
            x = 40 + int(d.textlength(plain[: plain.index(order)], font=font))
            boxes.setdefault(order, (x, y - 2, int(d.textlength(order, font=font)), 24))
        x = 40 + int(d.textlength(plain, font=font)) + 16 if plain else 40
        for label in buttons:
            w = int(d.textlength(label, font=font)) + 24
            d.rounded_rectangle([x, y - 4, x + w, y + 26], radius=6, fill=(40, 110, 200))
            d.text((x + 12, y), label, fill=(255, 255, 255), font=font)
            boxes.setdefault(label, (x, y - 4, w, 30))
            x += w + 12
        y += 48
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue(), boxes

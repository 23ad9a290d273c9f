"""Opening a 10,000- and a 100,000-step session (load + cycles + running totals + first state), and state at a step;
and the same open as the timeline page does it (the rest of a long run's messages rebuilt behind the first
state: snapshot._rebuild), with what a far jump at once then waits. Beside the page's open: the span waterfall's
layout (flat, and the same steps nested three deep), the first window the page sends, and that window's first
draw in Chromium beside the steps-around-the-cursor list's (ui/assets/waterfall.js, step_rows.js)."""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # ui/, for the waterfall's window and scripts
import orjson  # noqa: E402
from common import generated_jsonl, report, timed  # noqa: E402

from replay_core.ingest.pipeline import import_bytes  # noqa: E402
from replay_core.storage.store import Store  # noqa: E402
from replay_core.understand.snapshot import state_at  # noqa: E402
from replay_core.understand.timeline import open_timeline  # noqa: E402
from replay_core.understand.waterfall import layout  # noqa: E402

ASSETS = Path(__file__).resolve().parent.parent / "ui" / "assets"
CHROMIUM = "/usr/bin/chromium"


def one(steps: int, label: str, goal_open: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{tmp}/tl.db")
        import_bytes(store, generated_jsonl(1, steps), "big.jsonl")
        sid = "bench-0"
        # baseline: the bare step rows through the store's connection, no objects built
        from sqlalchemy import text

        def raw():
            with store.engine.connect() as conn:
                return conn.execute(text("select * from steps where session_id = :s order by seq"), {"s": sid}).all()

        raw()
        tries = 5 if steps <= 10_000 else 3
        base = min(timed(raw)[1] for _ in range(tries)) * 1000

        def ready():  # what the timeline page needs before it can draw: the session open, its first state
            timeline = open_timeline(store, sid)
            state_at(timeline, 1, store)
            return timeline

        open_ms = min(timed(ready)[1] for _ in range(tries)) * 1000
        report(f"open_session_{label}_steps", open_ms, "ms", goal_open, base, higher_is_better=False)
        tl = ready()
        rng = random.Random(1)
        seqs = [rng.randint(1, steps) for _ in range(50)]
        state_ms = max(timed(state_at, tl, q, store)[1] for q in seqs) * 1000
        totals_ms = max(timed(tl.totals.at, tl.position_of(q))[1] for q in seqs) * 1000
        report(f"state_at_random_step_{label}_worst_of_50", state_ms, "ms", "<= 20", totals_ms, higher_is_better=False)

        def page_ready():  # as the timeline page opens it: the rest of a long run rebuilt behind the first state
            timeline = open_timeline(store, sid)
            state_at(timeline, 1, store, behind=True)
            return timeline

        page_ms = min(timed(page_ready)[1] for _ in range(tries)) * 1000
        report(f"open_session_{label}_steps_as_the_page_does", page_ms, "ms", goal_open, open_ms, higher_is_better=False)
        tl = page_ready()  # a far step at once: waits for the rebuild behind (a person's first click comes later)
        far_ms = timed(state_at, tl, steps, store)[1] * 1000
        report(f"state_at_last_step_right_after_the_page_open_{label}", far_ms, "ms", "-", state_ms, higher_is_better=False)
        waterfall(tl, label, page_ms, tries)
        store.close()


def nested(columns: dict) -> dict:
    """The same steps three deep: every tenth step holds the nine after it, every hundredth the tens under it."""
    parents = [None if seq % 100 == 0 else f"e{seq // 100 * 100}" if seq % 10 == 0 else f"e{seq // 10 * 10}"
               for seq in columns["seq"]]  # fmt: skip
    return {**columns, "parent_id": [p if p != "e0" else None for p in parents]}


def waterfall(tl, label: str, page_ms: float, tries: int) -> None:
    """The waterfall's layout and first window beside the page's open, then its first draw in Chromium."""
    from ui.timeline_view import window_rows
    from ui.waterfall_view import window_data

    flat_ms = min(timed(layout, tl.columns)[1] for _ in range(tries)) * 1000
    report(
        f"waterfall_layout_{label}_steps", flat_ms, "ms", "<= 300" if label == "100k" else "-", page_ms, higher_is_better=False
    )
    deep = nested(tl.columns)
    deep_ms = min(timed(layout, deep)[1] for _ in range(tries)) * 1000
    report(f"waterfall_layout_nested_{label}_steps", deep_ms, "ms", "-", flat_ms, higher_is_better=False)
    middle = len(tl.steps) // 2

    def first_window():
        tl.cache.pop("waterfall", None)
        return orjson.dumps(window_data(tl, middle, max(0, middle - 150)))

    sent, window_s = min((timed(first_window) for _ in range(tries)), key=lambda pair: pair[1])
    report(f"waterfall_first_window_{label}_steps", window_s * 1000, "ms", "-", page_ms, higher_is_better=False, bytes=len(sent))
    rows = window_rows(tl, middle, set(), middle - 6, middle + 10)
    draw_ms, list_ms, drawn = chromium_draw(orjson.loads(sent), rows)
    report(
        f"waterfall_first_draw_in_chromium_{label}_steps",
        draw_ms,
        "ms",
        "<= 100",
        list_ms,
        higher_is_better=False,
        rows_in_dom=drawn,
    )


def chromium_draw(data: dict, rows: list[dict]) -> tuple[float, float, int]:
    """Each component's script on a blank page as Streamlit runs it (its html, the shared css, el.js ahead of it):
    the waterfall's first draw and the steps list's, to the next frame, best of five; and the rows in the DOM."""
    from playwright.sync_api import sync_playwright

    from ui.waterfall_view import HTML

    def script(name: str, as_name: str) -> str:
        return (ASSETS / name).read_text().replace("export default function", f"window.{as_name} = function")

    timing = """async ([name, data]) => {
        const host = document.getElementById(name);
        const t0 = performance.now();
        window[name]({ parentElement: host, data, setTriggerValue: () => {} });
        document.body.offsetHeight;
        await new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
        return performance.now() - t0;
    }"""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        draws: dict[str, list[float]] = {"waterfall": [], "steps": []}
        for _ in range(5):
            pg = browser.new_page(viewport={"width": 1440, "height": 1200})
            css = (ASSETS / "components.css").read_text()
            pg.set_content(f'<style>{css}</style><div id="waterfall" style="width:560px">{HTML}</div>'
                           '<div id="steps"><nav class="rows"></nav></div>')  # fmt: skip
            pg.add_script_tag(content=(ASSETS / "el.js").read_text() + script("waterfall.js", "waterfall"))
            pg.add_script_tag(content=script("step_rows.js", "steps"))
            draws["waterfall"].append(pg.evaluate(timing, ["waterfall", data]))
            draws["steps"].append(pg.evaluate(timing, ["steps", {"rows": rows}]))
            drawn = pg.locator("#waterfall button.wrow").count()
            pg.close()
        browser.close()
    return min(draws["waterfall"]), min(draws["steps"]), drawn


def main() -> None:
    one(10_000, "10k", "<= 150")
    one(100_000, "100k", "<= 1000")


if __name__ == "__main__":
    main()

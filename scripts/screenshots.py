"""The README's and the docs' screenshots, made from the app itself: `make screenshots`.

The demo runs go into a fresh database (in a temporary AGENT_REPLAY_HOME), with what some pages
show only once something was done: a reviewer's verdict, a share link, an experiment over four demo
runs and a review queue, all with the run's own answers as the model (no key, no network). Then
`agent-replay serve` serves that database as a user starts it, Debian's headless Chromium opens
each page at 1440×900, and each view is saved as a PNG (a 256-colour palette: a tenth of the size). The emoji the pages use
need a colour emoji font (Debian: fonts-noto-color-emoji); without one they show as boxes.

    python scripts/screenshots.py [--out docs/images] [--only runs timeline …] [--timeline-run ID]

Run with another checkout's code first on PYTHONPATH (`PYTHONPATH=../main python scripts/screenshots.py
--out /tmp/before`) it shows that checkout's app: the server is started from the replay_core imported (one
older than `cli.serve.answering` needs its wait loop in a copy of this script: docs/images/before-after/).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack, contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
SIZE = {"width": 1440, "height": 900}
MAX_BYTES = 300_000
IDLE = "() => !document.querySelector('[data-testid=stSkeleton], [data-testid=stStatusWidget]')"

FAILED = "demo-02-coding-format-price-failed"  # a coding run whose tests failed: a Why worth reading
FLIGHTS = ("demo-08-flight-bos-sfo-a", "demo-09-flight-bos-sfo-b")  # one task, two runs that part ways
REVIEWER = "Dana"


# ---------------------------------------------------------------------------- the data


def seed(url: str) -> dict[str, str]:
    """The demo runs and what the pages show once used; the addresses that open them."""
    from replay_core.demo import load_demo
    from replay_core.storage.actor import Actor
    from replay_core.storage.store import Store
    from replay_core.team import queues, shares
    from replay_core.whatif import dataset as ds
    from replay_core.whatif import experiment as ex
    from replay_core.whatif.replay_config import ReplayConfig

    store = Store(url)
    try:
        load_demo(store, only_if_empty=False)
        editor = Actor("screenshots", "editor")
        note = "Gave up with the tests still failing; should have read format_price's signature first."
        store.annotate(FAILED, "bad", note, author=REVIEWER)
        link = shares.make(store, shares.RUN, session=FAILED, actor=editor)
        cases = [ds.Case(sid) for sid in (FAILED, *FLIGHTS, "demo-11-sql-weekly-revenue")]
        ds.create(store, "demo-four", cases)
        experiment, _ = ex.start(store, "demo-four", [ReplayConfig(model="recorded")])
        ex.run(store, experiment)
        queue = queues.create(store, "Failed runs this week", ids=[FAILED, *FLIGHTS], actor=editor)
        for _ in range(2):
            item = queues.next_item(store, queue["id"], REVIEWER, actor=editor)
            if item:
                queues.save_review(store, queue["id"], item["id"], REVIEWER, "Bad", note="Wrong answer", actor=editor)
    finally:
        store.close()
    return {"share": link["url"].split("/share", 1)[1], "experiment": experiment, "queue": str(queue["id"])}


# ---------------------------------------------------------------------------- the app


@contextmanager
def served(url: str, home: Path):
    """`agent-replay serve` on `url`, from the replay_core this process imported; yields its base URL."""
    from replay_core.cli.serve import answering, free_port

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("AGENT_REPLAY_")}
    env |= {"AGENT_REPLAY_HOME": str(home), "PYTHONPATH": os.pathsep.join(sys.path[1:] if sys.path[0] == "" else sys.path)}
    argv = [sys.executable, "-m", "replay_core.cli", "serve", "--db", url, "--port", str(port)]
    with answering(argv, f"http://127.0.0.1:{port}", "/_stcore/health", timeout=90, env=env, cwd=home) as base:
        yield base


# ---------------------------------------------------------------------------- the views


def settled(pg) -> None:
    pg.wait_for_selector("[data-testid=stAppViewContainer] h1", timeout=60_000)
    pg.wait_for_function(IDLE, timeout=120_000)


def wait_text(pg, text: str, timeout: float = 60_000) -> None:
    """Until `text` shows; a view that changed its words is still shot (and said so), not lost."""
    try:
        pg.get_by_text(text).first.wait_for(timeout=timeout)
    except Exception:
        print(f"  (no {text!r} on {pg.url}: shot as it is)", file=sys.stderr)
    pg.wait_for_function(IDLE, timeout=120_000)


def to_top(pg, text: str) -> None:
    """Scrolled so that `text` is near the top of the window, with a little of what is above it."""
    found = pg.get_by_text(text).first
    if found.count():
        found.evaluate("e => e.scrollIntoView({block: 'start'})")
        pg.mouse.move(720, 450)
        pg.mouse.wheel(0, -140)
        pg.wait_for_timeout(400)


def opened(pg, base: str, path: str, text: str | None = None) -> None:
    pg.goto(f"{base}/{path}")
    settled(pg)
    if text:
        wait_text(pg, text)


def runs(pg, base, seeded) -> None:
    opened(pg, base, "runs", "runs:")
    pg.locator("[data-testid=stDataFrame]").first.wait_for(timeout=60_000)


def timeline(pg, base, seeded) -> None:
    run = seeded.get("timeline", FAILED)
    opened(pg, base, f"timeline?session={run}", "Ended:")


def whatif(pg, base, seeded) -> None:
    opened(pg, base, f"whatif?session={FAILED}")
    pg.get_by_role("button", name="Launch").click()
    wait_text(pg, "Results", timeout=120_000)
    to_top(pg, "Results")


def experiments(pg, base, seeded) -> None:
    opened(pg, base, f"experiments?experiment={seeded['experiment']}", "replays done")
    to_top(pg, "Results")


def share(pg, base, seeded) -> None:
    opened(pg, base, f"share{seeded['share']}", "Shared read-only")
    wait_text(pg, REVIEWER, timeout=30_000)  # the reviewer's verdict, drawn after the header


def compare(pg, base, seeded) -> None:
    opened(pg, base, f"compare?a={FLIGHTS[0]}&b={FLIGHTS[1]}", "Side by side")


def analytics(pg, base, seeded) -> None:
    opened(pg, base, "analytics?period=All+time", "Runs by status")
    pg.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=stVegaLiteChart]')].every(e => e.querySelector('svg, canvas'))",
        timeout=60_000,
    )


def queue(pg, base, seeded) -> None:
    opened(pg, base, f"queues?queue={seeded['queue']}")
    name = pg.get_by_label("Your name")
    name.fill(REVIEWER)
    name.press("Enter")
    pg.wait_for_function(IDLE, timeout=60_000)
    wait_text(pg, "Verdict")


VIEWS: dict[str, Callable] = {
    "runs": runs,
    "timeline": timeline,
    "whatif": whatif,
    "experiments": experiments,
    "share": share,
    "compare": compare,
    "analytics": analytics,
    "queue": queue,
}


def small_png(raw: bytes) -> bytes:
    """A screenshot as a 256-colour PNG: UI screens have few colours, so it reads the same at a tenth of the size."""
    from PIL import Image

    image = Image.open(io.BytesIO(raw)).convert("RGB")
    out = io.BytesIO()
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(out, "PNG", optimize=True)
    return out.getvalue()


def shoot(out: Path, only: list[str], browser=None, timeline_run: str | None = None) -> list[Path]:
    """The views named in `only` saved in `out`, in `browser` (a Playwright Chromium) or one started here; the
    timeline view on `timeline_run` (default: the failed coding run)."""
    out.mkdir(parents=True, exist_ok=True)
    saved = []
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        if browser is None:
            from playwright.sync_api import sync_playwright

            browser = stack.enter_context(sync_playwright()).chromium.launch(executable_path=CHROMIUM, args=ARGS)
            stack.callback(browser.close)
        home = Path(tmp)
        url = f"sqlite:///{home / 'replay.db'}"
        seeded = seed(url) | ({"timeline": timeline_run} if timeline_run else {})
        with served(url, home) as base:
            for name in only:
                pg = browser.new_page(viewport=SIZE)  # each view in a fresh tab: no state carried over
                try:
                    VIEWS[name](pg, base, seeded)
                    png = small_png(pg.screenshot())
                finally:
                    pg.close()
                if len(png) > MAX_BYTES:
                    print(f"  {name}.png is {len(png):,} bytes (over {MAX_BYTES:,})", file=sys.stderr)
                path = out / f"{name}.png"
                path.write_bytes(png)
                saved.append(path)
                print(f"{path} {len(png) // 1024} KB")
    return saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images")
    parser.add_argument("--only", nargs="+", choices=list(VIEWS), default=list(VIEWS))
    parser.add_argument("--timeline-run", help="the demo run the timeline view opens (default: the failed coding run)")
    args = parser.parse_args()
    shoot(args.out, args.only, timeline_run=args.timeline_run)


if __name__ == "__main__":
    main()

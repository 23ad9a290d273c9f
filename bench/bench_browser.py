"""What a person waits for in a real browser (Debian's headless Chromium through Playwright).

The served app (`streamlit run streamlit_app.py`, as `make run` starts it) on a database of
2,000 runs × 50 steps plus one 10,000-step run, then on one with a 100,000-step run:
- the timeline's first open (goal ≤ 2 s at 100,000 steps) and the repaint after each
  Next / Previous / Next-cycle click (goal ≤ 150 ms p95 at 10,000 steps, ≤ 250 ms at 100,000),
  timed from the click until the step's heading shows the new step and Streamlit's running
  indicator is gone;
- the analytics page with all its charts drawn: its first open (the first for this browser and this server:
  Vega's scripts fetched and compiled, the page's caches cold) and the median of OPENS opens after it;
- the served app's memory (RSS) with the 100,000-step run open (goal ≤ 500 MB), beside the same
  process's RSS with only the runs page open;
- every page of the app (`pages/`, the timeline on the 10,000-step run) in a warm tab: the median of
  PAGE_OPENS opens after an untimed first, until it is drawn (what shows last on it is on screen and
  Streamlit's running indicator is gone), beside the runs page's (goal ≤ 1.5 s each);
- baselines, in the same run: the runs page's open (the median of OPENS after an untimed first; for the
  opens and the analytics page) and Streamlit's own floor for a click (for the clicks) and for a page's
  open: a one-button page (`FLOOR`) served by the same Streamlit to the same browser, timed the same
  way. What costs more is ours.
Each timeline line also says what it cost: the served app's CPU, the page's main-thread time and the
websocket bytes (Costs). No fixed sleeps inside a timed span: every wait is on the DOM.
"""

from __future__ import annotations

import glob
import itertools
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from apptest_helpers import served_app  # noqa: E402
from common import generated_jsonl, report  # noqa: E402

from replay_core.ingest.pipeline import import_bytes  # noqa: E402
from replay_core.storage.store import Store  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
CLICKS = 60  # a p95 of 20 clicks was their second slowest: it moved ±15 ms between two runs of the same build
OPENS = 5  # a page opened again: the median of this many
PAGE_OPENS = 3  # each page of the walk: the median of this many
# every chart on the page has drawn its SVG (how many there are depends on the data)
DRAWN = (
    "() => { const c = [...document.querySelectorAll('[data-testid=stVegaLiteChart]')];"
    " return c.length > 0 && c.every(e => e.querySelector('svg, canvas')); }"
)
# the selected step's heading (drawn in the shadow root of its component, ui/components.step_detail, or
# in the page itself, as before that and on FLOOR) names another step than `before`
STEP_SHOWN = (
    "(before) => { const box = document.querySelector('.st-key-step_detail') || document;  /* FLOOR has none */"
    " const roots = [box, ...[...box.querySelectorAll('*')].filter(e => e.shadowRoot).map(e => e.shadowRoot)];"
    " const h = roots.flatMap(r => [...r.querySelectorAll('h3')]).find(e => e.innerText.includes('· step'));"
    " return h && !h.innerText.endsWith('· step ' + before); }"
)
# every chart on the page, if any, has drawn its SVG or canvas
ALL_DRAWN = "[...document.querySelectorAll('[data-testid=stVegaLiteChart]')].every(e => e.querySelector('svg, canvas'))"
IDLE = "() => !document.querySelector('[data-testid=stSkeleton]') && !document.querySelector('[data-testid=stStatusWidget]')"


# Streamlit's floor: a click that reruns a page of one button and one heading
FLOOR = """import streamlit as st

st.session_state.setdefault("n", 1)


def step_on() -> None:
    st.session_state.n += 1


st.button("Next", key="jump_next", on_click=step_on)
st.subheader(f"Floor · step {st.session_state.n}")
"""


def one_run(sid: str, steps: int) -> bytes:
    """One generated run of `steps` steps under its own id."""
    return generated_jsonl(1, steps).replace(b'"bench-0"', f'"{sid}"'.encode())


def served_pid(base: str) -> int:
    """The app process that `served_app` started on `base`'s port (found by its command line)."""
    port = base.rsplit(":", 1)[1].encode()
    for proc in glob.glob("/proc/[0-9]*"):
        try:
            argv = Path(proc, "cmdline").read_bytes().split(b"\0")
            if b"--server.port" in argv and argv[argv.index(b"--server.port") + 1] == port:
                return int(Path(proc).name)
        except (OSError, IndexError):
            continue
    raise RuntimeError(f"no served app on port {port.decode()}")


def served_rss_mb(base: str) -> float:
    return int(re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{served_pid(base)}/status").read_text()).group(1)) / 1024


def cpu_ms(pid: int) -> float:
    """User + system CPU of one process, all its threads (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def quiet(pid: int) -> None:
    """Until the served app goes 0.3 s on under 20 ms of CPU (at most 10 s), so what an untimed page set
    going (Altair's import after the first page) is not timed with the next. Never inside a timed span."""
    deadline, last = time.monotonic() + 10, cpu_ms(pid)
    while time.monotonic() < deadline:
        time.sleep(0.3)
        now = cpu_ms(pid)
        if now - last < 20:
            return
        last = now


def chromium_cpu_ms() -> float:
    """CPU of every Chromium process this bench started (browser, renderers, helpers): what the page cost
    the machine, which its wall time on a loaded machine does not tell."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            text = Path(stat).read_text()
        except OSError:
            continue
        pid, rest = int(text.split(" ", 1)[0]), text.rsplit(")", 1)
        names[pid] = rest[0].split("(", 1)[1]
        children.setdefault(int(rest[1].split()[1]), []).append(pid)
    total, todo = 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        if names.get(pid, "").startswith("chrom"):
            try:
                total += cpu_ms(pid)
            except OSError:
                pass
    return total


class Costs:
    """What a timed span cost beside its wall time: the served app's CPU (all its threads, /proc), the
    Chromium processes' CPU, the page's main-thread busy time (CDP Performance.getMetrics' TaskDuration,
    wall time of its tasks) and the bytes the page received over Streamlit's websocket."""

    def __init__(self, pg, base: str):
        self.pid = served_pid(base)
        self.cdp = pg.context.new_cdp_session(pg)
        self.cdp.send("Performance.enable")
        self.ws_bytes = 0
        pg.on("websocket", lambda ws: ws.on("framereceived", self._received))

    def _received(self, payload) -> None:
        self.ws_bytes += len(payload)

    def now(self) -> tuple[float, float, float, int]:
        metrics = {m["name"]: m["value"] for m in self.cdp.send("Performance.getMetrics")["metrics"]}
        return cpu_ms(self.pid), chromium_cpu_ms(), metrics["TaskDuration"] * 1000, self.ws_bytes

    @staticmethod
    def spent(before: tuple, after: tuple) -> dict[str, float]:
        return {
            "server_cpu_ms": round(after[0] - before[0]),
            "chromium_cpu_ms": round(after[1] - before[1]),
            "browser_main_ms": round(after[2] - before[2]),
            "ws_kb": round((after[3] - before[3]) / 1024, 1),
        }


def settled(pg) -> None:
    pg.wait_for_function(IDLE, timeout=120_000)


def open_ms(pg, url: str, ready: str) -> float:
    start = time.perf_counter()
    pg.goto(url)
    pg.wait_for_selector(ready, timeout=120_000)
    settled(pg)
    return (time.perf_counter() - start) * 1000


def analytics_ms(pg, base: str) -> float:
    """The analytics page opened until every chart has drawn and the run is over."""
    start = time.perf_counter()
    pg.goto(f"{base}/analytics?period=All+time")
    pg.wait_for_selector("text=Runs by status", timeout=120_000)
    settled(pg)
    pg.wait_for_function(DRAWN, timeout=120_000)
    return (time.perf_counter() - start) * 1000


def page_addresses(token: str) -> dict[str, tuple[str, str]]:
    """Each page (by its file in pages/): its address on the bench's database and what shows once it is drawn."""
    heading = "[data-testid=stAppViewContainer] h1"
    table = "[data-testid=stDataFrame]"
    return {
        "home": ("", heading),
        "runs": ("runs", table),
        "timeline": ("timeline?session=big-10k&step=2", "h3:has-text('· step 2')"),
        "live": ("live", heading),
        "review": ("review", heading),
        "queues": ("queues", "text=of 50 runs done"),  # the list (a queue's work asks for a name first)
        "compare": ("compare?a=bench-0&b=bench-1", table),
        "whatif": ("whatif?session=bench-0", "text=Estimate"),
        "experiments": ("experiments", heading),
        "analytics": ("analytics?period=All+time", "text=Runs by status"),
        "monitors": ("monitors", heading),
        "import_runs": ("import", heading),
        "share": (f"share?token={token}", "text=Shared read-only"),
    }


def page_drawn_ms(pg, url: str, ready: str) -> float:
    """One page opened until `ready` shows, the run is over and any chart on it has drawn."""
    start = time.perf_counter()
    pg.goto(url)
    pg.wait_for_selector(ready, timeout=120_000)
    settled(pg)
    pg.wait_for_function(f"() => {ALL_DRAWN}", timeout=120_000)
    return (time.perf_counter() - start) * 1000


def every_page(pg, base: str, token: str) -> None:
    """Each page of pages/ in the same (warm) tab: an untimed open, then the median of PAGE_OPENS; beside its
    wall time, the page's main-thread time in the browser (CDP TaskDuration, counted from the navigation),
    which a loaded machine moves less."""
    pages = page_addresses(token)
    missing = {p.stem for p in (HERE.parent / "pages").glob("*.py")} - set(pages)
    assert not missing, f"pages with no address in the bench: {missing}"
    cdp = pg.context.new_cdp_session(pg)
    cdp.send("Performance.enable")
    for name, (path, ready) in pages.items():
        url = f"{base}/{path}"
        page_drawn_ms(pg, url, ready)
        walls, mains = [], []
        for _ in range(PAGE_OPENS):
            walls.append(page_drawn_ms(pg, url, ready))
            metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
            mains.append(metrics["TaskDuration"] * 1000)
        report(
            f"browser_page_drawn_{name}",
            statistics.median(walls),
            "ms",
            "<= 1500",
            BASELINE["runs_page"],
            higher_is_better=False,
            browser_main_ms=round(statistics.median(mains)),
        )


def heading_step(pg) -> int:
    text = pg.locator("h3:has-text('· step')").first.inner_text()
    return int(re.search(r"· step (\d+)", text).group(1))


def click_ms(pg, name: str) -> float:
    """One jump button clicked; milliseconds until the detail shows another step and the run is over."""
    before = heading_step(pg)
    start = time.perf_counter()
    pg.locator(f".st-key-strip button[data-jump={name}], .st-key-jump_{name} button").first.click()  # the app's, FLOOR's
    pg.wait_for_function(STEP_SHOWN, arg=before, timeout=60_000)
    settled(pg)
    return (time.perf_counter() - start) * 1000


def clicks(pg, names: list[str]) -> list[float]:
    return [click_ms(pg, name) for name in names]


def p95(times: list[float]) -> float:
    times = sorted(times)
    return times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]


def streamlit_floor(pg, tmp: str) -> None:
    """Streamlit's floor (FLOOR, one button and one heading, served by the same Streamlit to the same
    browser): a click-to-repaint, the clicks' baseline, and a page's open (median of 5, after a first
    untimed one), below which no page of the app can open on this machine."""
    script = Path(tmp, "floor.py")
    script.write_text(FLOOR)
    with served_app("sqlite://", script=str(script)) as base:
        open_ms(pg, base, "h3:has-text('· step 1')")
        opens = [open_ms(pg, base, "h3:has-text('· step 1')") for _ in range(5)]
        clicks(pg, ["next"] * 3)  # the first reruns: not timed
        times = clicks(pg, ["next"] * CLICKS)
    BASELINE["click_p50"], BASELINE["click_p95"] = statistics.median(times), p95(times)
    report("browser_streamlit_open_floor", statistics.median(opens), "ms", "-", None)
    report("browser_streamlit_click_floor_p50", BASELINE["click_p50"], "ms", "-", None)
    report("browser_streamlit_click_floor_p95", BASELINE["click_p95"], "ms", "-", None)


def timeline(pg, base: str, sid: str, label: str, click_goal: str) -> None:
    costs = Costs(pg, base)
    before = costs.now()
    first = open_ms(pg, f"{base}/timeline?session={sid}&step=2", "h3:has-text('· step 2')")
    opened = Costs.spent(before, costs.now())
    del opened["browser_main_ms"]  # a navigation starts the page's counters again
    report(f"browser_timeline_open_{label}", first, "ms", "<= 2000", BASELINE["runs_page"], higher_is_better=False, **opened)
    times, spent = [], []
    for name in itertools.islice(itertools.cycle(["next", "next_cycle", "prev"]), CLICKS):
        before = costs.now()
        times.append(click_ms(pg, name))
        spent.append(Costs.spent(before, costs.now()))
    per_click = {f"{k}_p50": statistics.median(c[k] for c in spent) for k in spent[0]}
    report(
        f"browser_timeline_click_p50_{label}",
        statistics.median(times),
        "ms",
        click_goal,
        BASELINE["click_p50"],
        higher_is_better=False,
        **per_click,
    )
    report(f"browser_timeline_click_p95_{label}", p95(times), "ms", click_goal, BASELINE["click_p95"], higher_is_better=False)


BASELINE: dict[str, float] = {}


def something_to_share_and_review(store: Store) -> str:
    """A share link to one run and a review queue of 50: the share and queue pages then draw what they are for."""
    from replay_core.storage.actor import Actor
    from replay_core.team import queues, shares

    editor = Actor("bench", "editor")
    token = shares.make(store, shares.RUN, session="bench-0", actor=editor)["token"]
    queues.create(store, "bench", ids=[f"bench-{i}" for i in range(50)], actor=editor)
    return token


def main() -> None:
    """`--only analytics|10k|100k|pages …`: some of the parts (the runs page's baseline is always measured)."""
    import argparse

    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--only", nargs="+", choices=["analytics", "10k", "100k", "pages"], default=["analytics", "10k", "100k", "pages"]
    )
    only = set(parser.parse_args().only)

    print(f"# load average {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        pg = browser.new_page(viewport={"width": 1500, "height": 1200})
        streamlit_floor(pg, tmp)
        many = f"sqlite:///{tmp}/many.db"
        store = Store(many)
        import_bytes(store, generated_jsonl(2000, 50), "many.jsonl")
        if only & {"10k", "pages"}:
            import_bytes(store, one_run("big-10k", 10_000), "big.jsonl")
        token = something_to_share_and_review(store)
        store.close()
        with served_app(many) as base:
            open_ms(pg, f"{base}/runs", "[data-testid=stDataFrame]")  # the server's first page load: not timed
            pid = served_pid(base)
            quiet(pid)
            runs_cpu = cpu_ms(pid)
            runs = [open_ms(pg, f"{base}/runs", "[data-testid=stDataFrame]")]
            runs_cpu = cpu_ms(pid) - runs_cpu
            runs += [open_ms(pg, f"{base}/runs", "[data-testid=stDataFrame]") for _ in range(OPENS - 1)]
            BASELINE["runs_page"] = statistics.median(runs)
            if "analytics" in only:
                server_cpu = cpu_ms(pid)
                first = analytics_ms(pg, base)  # the page's first open in this browser and this server
                # the served app's CPU for it, beside the runs page's (wall time on a loaded machine says little alone)
                server_cpu = cpu_ms(pid) - server_cpu
                report(
                    "browser_analytics_drawn_2k_runs_100k_steps",
                    first,
                    "ms",
                    "<= 1000",
                    BASELINE["runs_page"],
                    higher_is_better=False,
                )
                report("browser_analytics_served_app_cpu", server_cpu, "ms", "-", runs_cpu, higher_is_better=False)
                # opened again, as the runs page's baseline is: its scripts and Vega's compiled by now
                report(
                    "browser_analytics_drawn_again_median",
                    statistics.median(analytics_ms(pg, base) for _ in range(OPENS)),
                    "ms",
                    "<= 1000",
                    BASELINE["runs_page"],
                    higher_is_better=False,
                )
            if "pages" in only:
                every_page(pg, base, token)
            if "10k" in only:
                timeline(pg, base, "big-10k", "10k_steps", "<= 150")
        if "100k" in only:
            huge = f"sqlite:///{tmp}/huge.db"
            store = Store(huge)
            import_bytes(store, one_run("big-100k", 100_000), "huge.jsonl")
            store.close()
            with served_app(huge) as base:
                open_ms(pg, f"{base}/runs", "[data-testid=stDataFrame]")
                quiet(served_pid(base))
                idle_rss = served_rss_mb(base)
                timeline(pg, base, "big-100k", "100k_steps", "<= 250")
                report("served_app_rss_100k_step_run_open", served_rss_mb(base), "MB", "<= 500", idle_rss, higher_is_better=False)
        browser.close()
    print(f"# load average {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()

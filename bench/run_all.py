"""`make bench`: every bench/bench_*.py in turn, each line it prints checked to be one JSON object.

Prints the benches' lines as they come (stdout), and each bench's seconds and the total to
stderr; fails when a bench fails or prints anything but JSON lines on stdout. `--only NAME…`
runs some; `--budget S` (default 900: the 15 minutes `make bench` is held to) is reported
against, not enforced, so a slow machine still gets its figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Sizes that keep the whole set within the budget on 2 cores; each bench's own defaults stay
# as they were for a single run (e.g. `python bench/bench_search.py` is the 1M-step figure too).
ARGS: dict[str, list[str]] = {}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--budget", type=float, default=900)
    args = parser.parse_args()
    benches = sorted(HERE.glob("bench_*.py"))
    if args.only:
        benches = [b for b in benches if b.stem.removeprefix("bench_") in args.only or b.stem in args.only]
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    took, failed, start = [], [], time.perf_counter()
    for bench in benches:
        t = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, str(bench), *ARGS.get(bench.stem, [])], stdout=subprocess.PIPE, env=env, cwd=HERE.parent, text=True
        )
        for line in proc.stdout.splitlines():
            print(line, flush=True)
            try:
                if not isinstance(json.loads(line), dict):
                    raise ValueError
            except ValueError:
                failed.append(f"{bench.name}: not a JSON line: {line[:80]!r}")
        if proc.returncode:
            failed.append(f"{bench.name}: exit {proc.returncode}")
        took.append((bench.name, time.perf_counter() - t))
    total = time.perf_counter() - start
    for name, seconds in took:
        print(f"# {name:28} {seconds:7.1f} s", file=sys.stderr)
    print(
        f"# total {total:.0f} s (budget {args.budget:.0f} s{', OVER' if total > args.budget else ''}); "
        f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}",
        file=sys.stderr,
    )
    for line in failed:
        print(f"# FAILED {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

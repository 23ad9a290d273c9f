#!/usr/bin/env python
"""Write the demo runs shipped with the app into data/demo/ (one native JSONL file per run).

Deterministic: running this twice gives the same bytes (tests/test_demo_data.py holds it).
The runs are built in scripts/demo_runs/.

    python scripts/make_demo.py [--out DIR]      # default: data/demo

``EXPECTED`` records the facts the tests (and the UI's own tests) check about particular runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
ROOT = SCRIPTS.parent
for folder in (ROOT, SCRIPTS):  # replay_core, and demo_runs beside this file, also when loaded by path
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from demo_runs import EXPECTED, RUNS  # noqa: E402  (importable once the folders above are on sys.path)

__all__ = ["EXPECTED", "generate", "main"]

DEFAULT_OUT = ROOT / "data" / "demo"


def generate(out: Path) -> list[Path]:
    """Write every demo run into ``out``; remove demo files of ours that are no longer produced."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for make in RUNS:
        run = make()
        path = out / run.filename
        path.write_bytes(run.dump())
        written.append(path)
    names = {p.name for p in written}
    for stale in out.glob("[0-9][0-9]-*.jsonl"):
        if stale.name not in names:
            stale.unlink()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: data/demo)")
    args = parser.parse_args(argv)
    for path in generate(args.out):
        print(f"{path.name}: {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

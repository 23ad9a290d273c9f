"""`python -m replay_core.cli` and the console script (replay_core.command runs this): a plain `stats`
on a SQLite file is answered before Typer, rich's console and the Store are imported; the rest by `main`."""

import sys

from . import main
from .stats_fast_path import fast_stats

if not fast_stats(sys.argv[1:]):
    main()

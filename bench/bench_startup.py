"""How long the app takes to start: `streamlit run streamlit_app.py` (as `make run` starts it) from
process start until its first page is served (GET / and the API's /healthz both answer 200), beside
the interpreter's own start (`python -c pass`). Also `import replay_core` alone, and whether starting
imported litellm (it must not: 5–7 s; only replays and the recorder import it).

    python bench/bench_startup.py
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import report  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
RUNS = 3


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def served(db_url: str) -> float:
    """Seconds from starting the app's process until it serves its first page and /healthz."""
    port = _port()
    argv = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "streamlit_app.py",
        "--server.headless",
        "true",
        "--server.address",
        "127.0.0.1",
        "--server.port",
        str(port),
        "--server.fileWatcherType",
        "none",
        "--browser.gatherUsageStats",
        "false",
    ]
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=REPO, env={**os.environ, "AGENT_REPLAY_DB_URL": db_url}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        pending = ["/", "/healthz"]
        while pending:
            if proc.poll() is not None:
                raise RuntimeError(f"the app exited with {proc.returncode}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}{pending[0]}", timeout=5).status_code == 200:
                    pending.pop(0)
                    continue
            except httpx.TransportError:
                pass
            time.sleep(0.01)
        return time.perf_counter() - start
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def _process(code: str) -> float:
    """Best of RUNS: `python -c code` as a whole process."""
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    lazy = (
        subprocess.run(
            [sys.executable, "-c", "import sys, replay_core, streamlit_app; print('litellm' in sys.modules)"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()[-1]
        == "False"
    )
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/startup.db"
        served(url)  # the database made and migrated, and the OS file cache warm, as for a restart
        start = min(served(url) for _ in range(RUNS))
    python = _process("pass")
    report(
        "app_start_first_page_served",
        start,
        "s",
        "<= 2",
        python,
        higher_is_better=False,
        import_replay_core_s=round(_process("import replay_core"), 3),
        litellm_imported_at_start=not lazy,
    )


if __name__ == "__main__":
    main()

"""Memory under small hostile inputs, on the served API (uvicorn, SQLite): the server's resident
memory over its own idle figure (same run), with /healthz polled throughout.

- eight 155 KB PNGs of 40 megapixels uploaded at once (each decodes to 160 MB);
- a 40 KB zstd inspect_ai `.eval` whose member unpacks to 1 GB, imported as the Import page does
  (in the importing process: its peak is measured in a process of its own).

Goal: each under +300 MB over idle, every /healthz answered 200. (A live-stream client that stops
reading is bounded by tests/test_stream.py, in process: a served probe of it measured no growth on
either side of the change, so it gives no figure here.) `make bench` runs it; figures in
bench/RESULTS.md."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from common import SERVE_API, report  # noqa: E402

TOKEN = "bench-memory-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
IMPORT = """
import resource, sys
from pathlib import Path
from replay_core.ingest.pipeline import ImportRejected, import_bytes
from replay_core.storage.store import Store
store = Store(sys.argv[1])
data = Path(sys.argv[2]).read_bytes()
idle = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    import_bytes(store, data, "bomb.eval")
    said = "imported"
except ImportRejected as exc:
    said = str(exc).splitlines()[0][:160]
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - idle) // 1024, said, sep="\\t")
"""


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise LookupError(field)


class Health(threading.Thread):
    """Polls /healthz until stopped; counts answers that were not 200, and the server's peak memory."""

    def __init__(self, base: str, pid: int):
        super().__init__(daemon=True)
        self.base, self.pid, self.stopped = base, pid, threading.Event()
        self.polls = self.failed = 0
        self.peak = 0.0

    def run(self) -> None:
        with httpx.Client(base_url=self.base, timeout=30) as http:
            while not self.stopped.is_set():
                self.peak = max(self.peak, rss_mb(self.pid))
                try:
                    self.failed += http.get("/healthz").status_code != 200
                except httpx.HTTPError:
                    self.failed += 1
                self.polls += 1
                time.sleep(0.05)

    def stop(self) -> Health:
        self.stopped.set()
        self.join(60)
        return self


def png_bomb() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGBA", (8000, 5000), (20, 30, 40, 255)).save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def eval_bomb(folder: Path) -> Path:
    from test_unpack_caps import MEMBER, real_members, zstd_zip

    pad = b'{"pad": "' + b"a" * (1 << 30) + b'"}'
    path = folder / "bomb.eval"
    path.write_bytes(zstd_zip({**real_members(), MEMBER: pad}))
    return path


def main(only: set[str]) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-memory-"))
    url = f"sqlite:///{folder / 'm.db'}"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-c", SERVE_API, url, str(port), TOKEN, str(64 * 1024 * 1024)])
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
        with httpx.Client(base_url=base, headers=AUTH, timeout=300) as http:
            http.post("/api/v1/sessions", json={"session_id": "shots"})
            http.post(
                "/api/v1/sessions/shots/steps", json=[{"event_id": f"e{i}", "seq": i, "type": "observation"} for i in range(8)]
            )
        idle = rss_mb(server.pid)

        png = png_bomb() if "png" in only else b""
        health = Health(base, server.pid)
        health.start()
        answers: list[int] = []

        def upload(i: int) -> None:
            with httpx.Client(base_url=base, headers=AUTH, timeout=300) as http:
                r = http.post(
                    f"/api/v1/sessions/shots/steps/e{i}/attachments", content=png, headers={"Content-Type": "image/png"}
                )
                answers.append(r.status_code)

        threads = [threading.Thread(target=upload, args=(i,)) for i in range(8 if png else 0)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        health.stop()
        if png:
            report(
                "memory: 8 × 40 Mpx PNG uploads at once",
                health.peak - idle,
                "MB over idle",
                "< 300",
                idle,
                higher_is_better=False,
                png_kb=len(png) // 1024,
                answers=sorted(answers),
                healthz=health.polls,
                healthz_failed=health.failed,
            )

    finally:
        server.terminate()
        server.wait(30)

    if "eval" not in only:
        return
    bomb = eval_bomb(folder)
    out = subprocess.run(
        [sys.executable, "-c", IMPORT, f"sqlite:///{folder / 'i.db'}", str(bomb)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ},
    )
    grown, said = out.stdout.strip().split("\t", 1)
    report(
        "memory: a zstd .eval unpacking to 1 GB, imported",
        float(grown),
        "MB over idle",
        "< 300",
        None,
        higher_is_better=False,
        eval_kb=bomb.stat().st_size // 1024,
        answer=said,
    )


if __name__ == "__main__":
    main(set(sys.argv[1:]) or {"png", "eval"})  # a part alone: png, eval

"""Decoded pixels are bounded by design: the pixel cap is read from the header before any decoding, and
every decode in a process takes what it holds from one budget, so eight 40-megapixel PNGs of 155 KB sent
at once decode a few at a time. The probe runs in its own process and reads its peak memory."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from PIL import Image

from replay_core.media.images import DecodeBudget, MediaError, check

PROBE = textwrap.dedent("""
    import resource, sys, threading
    from replay_core.media.images import check
    data = open(sys.argv[1], "rb").read()
    idle = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kept = []
    threads = [threading.Thread(target=lambda: kept.append(check(data).width)) for _ in range(8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    print(len(data), len(kept), (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - idle) // 1024)
""")


def test_eight_40_megapixel_pngs_at_once_grow_the_process_by_less_than_300_mb(tmp_path):
    png = tmp_path / "bomb.png"
    Image.new("RGBA", (8000, 5000), (20, 30, 40, 255)).save(png, format="PNG", optimize=True)
    out = subprocess.run([sys.executable, "-c", PROBE, str(png)], capture_output=True, text=True, timeout=300, check=True)
    size, kept, grown_mb = map(int, out.stdout.split())
    assert size < 200_000 and kept == 8  # small files, all kept
    assert grown_mb < 300, f"grew {grown_mb} MB"


def test_a_decode_waits_for_the_budget_and_one_larger_than_it_is_refused():
    budget = DecodeBudget(100)
    order: list[str] = []
    release = threading.Event()

    def second() -> None:
        with budget.hold(60, "second"):
            order.append(f"second holds {budget.used}")
            release.wait(5)

    with budget.hold(60, "first"):
        waiting = threading.Thread(target=second)
        waiting.start()
        time.sleep(0.2)
        order.append("first done")
    time.sleep(0.2)
    release.set()
    waiting.join(5)
    assert order == ["first done", "second holds 60"] and budget.used == 0
    with pytest.raises(MediaError, match="over the 100-byte decode budget"):
        with budget.hold(101, "image of 1×101 pixels"):
            pass


def test_the_pixel_cap_is_a_setting(monkeypatch):
    png = io.BytesIO()
    Image.new("P", (3000, 2000)).save(png, format="PNG")
    assert check(png.getvalue()).width == 3000
    monkeypatch.setenv("AGENT_REPLAY_MAX_IMAGE_PIXELS", "5000000")
    with pytest.raises(MediaError, match="3000×2000 pixels is over the 5,000,000-pixel cap"):
        check(png.getvalue())


@pytest.mark.parametrize("mode", ["P", "L", "RGB", "RGBA", "1", "I;16"])
def test_thumbnails_are_made_small_first_in_every_mode(mode):
    png = io.BytesIO()
    Image.new(mode, (4800, 3000)).save(png, format="PNG")
    with Image.open(io.BytesIO(check(png.getvalue()).thumbnail)) as thumb:
        assert (thumb.mode, thumb.size) == ("RGB", (240, 150))

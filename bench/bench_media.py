"""Visual replay at size: a video of a 500-step run with screenshots, and opening the player on a run
of 2,000 screenshots (the shots and the filmstrip's thumbnails, what the page fetches before drawing).

Baselines in the same run: encoding the same number of frames of one fixed image (what ffmpeg alone
costs), and listing the run's attachments (one query, what the player cannot do less than).
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import report, timed  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

from replay_core.events import SessionEvent, StepEvent  # noqa: E402
from replay_core.ingest.pipeline import ingest  # noqa: E402
from replay_core.media import video  # noqa: E402
from replay_core.media.attachments import attach_image  # noqa: E402
from replay_core.media.frames import SIZE, render, shots  # noqa: E402
from replay_core.storage.store import Store  # noqa: E402


def page(i: int) -> bytes:
    img = Image.new("RGB", (1024, 640), (255, 255, 255))
    d = ImageDraw.Draw(img)
    d.rectangle([0, 0, 1024, 44], fill=(222, 225, 230))
    d.text((30, 12), f"https://shop.example/step/{i}", fill=(40, 40, 40))
    for row in range(8):
        d.rectangle([40, 80 + row * 60, 40 + (i * 37 + row * 91) % 900, 110 + row * 60], fill=(40 + row * 20, 110, 200))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def run_with_shots(store: Store, sid: str, steps: int, every: int) -> None:
    events = [SessionEvent(session_id=sid, name="bench browser run")]
    events += [
        StepEvent(
            session_id=sid,
            event_id=f"e{i}",
            seq=i,
            type="tool_call" if i % 2 else "tool_result",
            tool_name="browser.click",
            tool_args={"index": i},
            content=None if i % 2 else f"page {i}",
            duration_ms=900,
        )
        for i in range(1, steps + 1)
    ]
    ingest(store, events)
    for i in range(1, steps + 1, every):
        attach_image(store, sid, f"e{i}", page(i), target={"x": 100 + i % 700, "y": 90})


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{tmp}/media.db")
        run_with_shots(store, "v500", 500, 1)
        out = Path(tmp) / "run.mp4"
        rep, seconds = timed(video.export, store, "v500", out, fps=2, max_seconds=None)
        import imageio_ffmpeg

        frame = render(store, shots(store, "v500")[0]).tobytes()

        def ffmpeg_only():
            w = imageio_ffmpeg.write_frames(
                str(Path(tmp) / "base.mp4"),
                SIZE,
                fps=2,
                codec="libx264",
                macro_block_size=2,
                ffmpeg_log_level="error",
                quality=None,
            )
            w.send(None)
            for _ in range(rep.frames):
                w.send(frame)
            w.close()

        _, base = timed(ffmpeg_only)
        report("video_export_500_steps_mp4", seconds, "s", "<= 30", base, higher_is_better=False)

        run_with_shots(store, "f2000", 2000, 1)
        from replay_core.understand.timeline import open_timeline

        def open_player():
            all_shots = shots(store, "f2000")
            mid = len(all_shots) // 2
            window = [s for s in all_shots[mid - 4 : mid + 4] if s.own]
            store.thumbnails([s.attachment["sha256"] for s in window])
            render(store, all_shots[mid], bar=False)
            return all_shots

        open_timeline(store, "f2000")
        open_player()
        best = min(timed(open_player)[1] for _ in range(3))
        listing = min(timed(store.list_attachments, "f2000")[1] for _ in range(3))
        report("player_open_2000_screenshots", best * 1000, "ms", "<= 1000", listing * 1000, higher_is_better=False)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"# bench_media done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)

"""A run (or two runs side by side) as a video a teammate can watch without the app.

One frame per step, held for the step's recorded duration (capped, so a 10-minute wait
does not become 10 minutes of film) at `fps`; long runs are cut at `max_seconds` with a note in
the last frame. MP4 and WebM go through imageio-ffmpeg's bundled ffmpeg (imported only here,
only when writing); GIF through Pillow. Frames are all one size (even, as H.264 needs).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw

from ..storage.store import Store
from .frames import SIZE, Shot, _font, render, shots

FORMATS = (".mp4", ".webm", ".gif")
HOLD_MIN_S, HOLD_MAX_S = 0.5, 3.0
# screenshots held for several frames: the fast presets lose nothing visible and encode several times faster
_SPEED = {"libx264": ["-preset", "veryfast", "-tune", "stillimage"], "libvpx-vp9": ["-deadline", "realtime", "-cpu-used", "8"]}


@dataclass
class VideoReport:
    path: str
    frames: int
    steps: int
    seconds: float
    truncated: bool


def _hold(shot: Shot, fps: float) -> int:
    seconds = (shot.step.duration_ms or 0) / 1000
    return max(1, round(min(max(seconds, HOLD_MIN_S), HOLD_MAX_S) * fps))


def _check(path: Path, fps: float) -> None:
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"{path}: a video is .mp4, .webm or .gif")
    if not 0.5 <= fps <= 30:
        raise ValueError("--fps is between 0.5 and 30")


def _budget(holds: list[int], fps: float, max_seconds: float | None) -> tuple[int, bool]:
    """How many of the frames fit in max_seconds."""
    if not max_seconds:
        return len(holds), False
    total, limit = 0, max_seconds * fps
    for i, n in enumerate(holds):
        if total + n > limit:
            return max(i, 1), True
        total += n
    return len(holds), False


def _write(path: Path, frames: Iterator[tuple[Image.Image, int]], size: tuple[int, int], fps: float) -> int:
    suffix, count = path.suffix.lower(), 0
    if suffix == ".gif":
        images, durations = [], []
        for img, n in frames:
            images.append(img.convert("P", palette=Image.Palette.ADAPTIVE))
            durations.append(int(1000 * n / fps))
            count += n
        images[0].save(path, save_all=True, append_images=images[1:], duration=durations, loop=0)
        return count
    import imageio_ffmpeg

    codec = {"mp4": "libx264", "webm": "libvpx-vp9"}[suffix[1:]]
    writer = imageio_ffmpeg.write_frames(
        str(path),
        size,
        fps=fps,
        codec=codec,
        macro_block_size=2,
        ffmpeg_log_level="error",
        quality=None,
        output_params=_SPEED.get(codec, []),
    )
    writer.send(None)
    try:
        for img, n in frames:
            raw = img.tobytes()
            for _ in range(n):
                writer.send(raw)
                count += 1
    finally:
        writer.close()
    return count


def _end_note(img: Image.Image, text: str) -> Image.Image:
    img = img.copy()
    d = ImageDraw.Draw(img)
    d.rectangle([0, 0, img.width, 44], fill=(180, 30, 30))
    d.text((16, 10), text, fill=(255, 255, 255), font=_font(22))
    return img


def export(
    store: Store,
    session_id: str,
    path: str | Path,
    *,
    fps: float = 2.0,
    max_seconds: float | None = 300,
    from_seq: int | None = None,
    to_seq: int | None = None,
    size: tuple[int, int] = SIZE,
) -> VideoReport:
    """Write the run's video; raises ValueError for an unknown session, format or an empty range."""
    path = Path(path)
    _check(path, fps)
    if store.get_session(session_id) is None:
        raise ValueError(f"no session {session_id!r}")
    picked = [
        s
        for s in shots(store, session_id)
        if (from_seq is None or (s.step.seq or 0) >= from_seq) and (to_seq is None or (s.step.seq or 0) <= to_seq)
    ]  # a stored step always has its seq
    if not picked:
        raise ValueError(f"session {session_id!r} has no steps in that range")
    holds = [_hold(s, fps) for s in picked]
    keep, truncated = _budget(holds, fps, max_seconds)

    def frames():
        for i, shot in enumerate(picked[:keep]):
            img = render(store, shot, size)
            if truncated and i == keep - 1:
                hidden, last = len(picked) - keep, picked[-1].step.seq
                img = _end_note(img, f"video cut at {max_seconds:g} s: {hidden} more steps not shown (step {last} is the last)")
            yield img, holds[i]

    n = _write(path, frames(), size, fps)
    return VideoReport(str(path), n, keep, n / fps, truncated)


def export_pair(
    store: Store,
    a: str,
    b: str,
    pairs: Sequence[tuple[int | None, int | None]],
    path: str | Path,
    *,
    first_divergence: int | None = None,
    fps: float = 2.0,
    max_seconds: float | None = 300,
    size: tuple[int, int] = SIZE,
) -> VideoReport:
    """Two runs side by side, one frame per aligned pair (`pairs` of seqs from compare's alignment;
    None where only one side has the step); the pair at index `first_divergence` is marked."""
    path = Path(path)
    _check(path, fps)
    half = (size[0] // 2 // 2 * 2, size[1])
    by_seq = {sid: {s.step.seq: s for s in shots(store, sid)} for sid in (a, b)}
    if not pairs:
        raise ValueError("nothing to show: the two runs have no aligned steps")
    hold = max(1, round(fps))  # a second per aligned pair
    keep, truncated = _budget([hold] * len(pairs), fps, max_seconds)

    def side(sid: str, seq: int | None, note: str) -> Image.Image:
        if seq is None:
            img = Image.new("RGB", half, (60, 60, 60))
            ImageDraw.Draw(img).text((24, half[1] // 2), f"{sid}: no matching step", fill=(230, 230, 230), font=_font(22))
            return img
        return render(store, by_seq[sid][seq], half, note=note)

    def frames():
        for i, (sa, sb) in enumerate(pairs[:keep]):
            note = "FIRST DIVERGENCE" if i == first_divergence else ""
            img = Image.new("RGB", (half[0] * 2, size[1]))
            img.paste(side(a, sa, note), (0, 0))
            img.paste(side(b, sb, note), (half[0], 0))
            if i == first_divergence:
                ImageDraw.Draw(img).rectangle([0, 0, img.width - 1, img.height - 1], outline=(230, 40, 40), width=8)
            if truncated and i == keep - 1:
                img = _end_note(img, f"video cut at {max_seconds:g} s: {len(pairs) - keep} more aligned steps not shown")
            yield img, hold

    n = _write(path, frames(), (half[0] * 2, size[1]), fps)
    return VideoReport(str(path), n, keep, n / fps, truncated)

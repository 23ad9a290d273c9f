"""Media: a video of a run's screenshots, or of two runs side by side."""

from pathlib import Path
from typing import Annotated

import typer

from .options import DbOption, JsonOption, fail, open_store, out
from .output import print_json

commands = typer.Typer()


@commands.command("video")
def video_cmd(
    session: Annotated[str, typer.Argument(help="The run to film.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="run.mp4, run.webm or run.gif")],
    fps: Annotated[float, typer.Option("--fps", help="Frames per second.")] = 2.0,
    max_seconds: Annotated[float, typer.Option("--max-seconds", help="Cut longer videos here (a note says so).")] = 300,
    from_seq: Annotated[int | None, typer.Option("--from", help="First step (seq).")] = None,
    to_seq: Annotated[int | None, typer.Option("--to", help="Last step (seq).")] = None,
    compare_with: Annotated[
        str | None, typer.Option("--compare", help="Film this run beside the other, aligned, the first divergence marked.")
    ] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """A video of a run's screenshots (or cards with the step's text where it has none), with a caption per step."""
    from ..media import video

    store = open_store(db)
    try:
        if compare_with:
            from ..understand.compare import compare

            try:
                result = compare(store, session, compare_with)
            except KeyError as exc:
                fail(f"no such session: {exc.args[0]}")
            div = result.first_divergence
            report = video.export_pair(
                store,
                session,
                compare_with,
                result.seq_pairs,
                output,
                fps=fps,
                max_seconds=max_seconds,
                first_divergence=div.row if div else None,
            )
        else:
            report = video.export(store, session, output, fps=fps, max_seconds=max_seconds, from_seq=from_seq, to_seq=to_seq)
    except ValueError as exc:
        fail(str(exc))
    if json:
        print_json(report.__dict__)
        return
    cut = " (cut at --max-seconds; the last frame says so)" if report.truncated else ""
    out.print(f"wrote {report.path}: {report.steps} steps, {report.frames} frames, {report.seconds:.1f} s{cut}")

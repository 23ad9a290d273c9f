"""The visual replay on the timeline: the selected step's screenshot large (the action's target drawn, an
earlier step's screenshot dimmed and labelled), a filmstrip of the nearby screenshots, play/pause at
1×, 2×, 4× over steps, and the run as a video to download.

The filmstrip loads only the thumbnails it shows (a window around the cursor), so a run with
thousands of screenshots costs what is on screen.
"""

from __future__ import annotations

import base64
import io
import tempfile
import time
from bisect import bisect_right
from pathlib import Path

import streamlit as st

from replay_core.media import video
from replay_core.media.frames import Shot, render, shots
from replay_core.storage.store import Store
from replay_core.understand.timeline import Timeline

FILMSTRIP = 8  # thumbnails either side of the cursor at most
SPEEDS = {"1×": 1.0, "2×": 2.0, "4×": 4.0}


def _go(seq: int) -> None:
    st.session_state["step"] = seq


@st.cache_resource(max_entries=16, show_spinner=False)
def _shots(_store: Store, _steps: list, url: str, session_id: str, stamp: tuple) -> list[Shot]:
    """Shared, never copied: cache_data would unpickle a Shot per step on every rerun (9 s at 100,000 steps)."""
    return shots(_store, session_id, _steps, only_with_screens=True)


def player(store: Store, tl: Timeline, pos: int) -> bool:
    """Draw the player when the run has screenshots; False (and nothing drawn) when it has none."""
    row = tl.session
    stamp = (row.get("steps"), row.get("max_seq"), str(row.get("last_event_at")))
    run_shots = _shots(store, tl.steps, store.url, tl.session["id"], stamp)
    if not any(s.own for s in run_shots):
        return False
    by_seq = {s.step.seq: s for s in run_shots}
    shot = by_seq.get(tl.steps[pos].seq)
    with st.container(border=True, key="player"):
        st.subheader("What the agent saw on screen")
        controls(tl, pos)
        if shot is None or shot.attachment is None:
            st.info("No screenshot yet at this point of the run.")
        else:
            frame = io.BytesIO()
            render(store, shot, bar=False).save(frame, format="PNG")
            st.image(inline(frame.getvalue(), "image/png"), width=SHOT_PX)
            if shot.acted_on:
                st.caption(f"Step {shot.step.seq} acted on the last screen before it; red: where.")
            elif not shot.own:
                st.caption(f"No screenshot at step {shot.step.seq}: showing the last one before it, dimmed.")
            elif shot.target:
                st.caption("Red: where the agent acted (click point or element).")
        filmstrip(store, run_shots, tl.steps[pos].seq)
        download(store, tl)
    return True


def inline(data: bytes, mime: str) -> str:
    """The image as a data URI, sent with the page. Streamlit's media files of an interrupted or overlapping
    rerun can be deleted while the browser still fetches them; the <img> then stays broken, as its address does
    not change when the next run adds the same file back. An image sent inline cannot go missing."""
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


SHOT_PX = 820  # the large screenshot: read at a glance, the filmstrip under it, the steps still near
THUMB_PX = 120


def filmstrip(store: Store, run_shots: list[Shot], seq: int) -> None:
    """The nearby screenshots in one row under the large one (a column of them was mostly white space)."""
    own = [s for s in run_shots if s.own]
    here = next((i for i, s in enumerate(own) if s.step.seq >= seq), len(own) - 1)
    window = own[max(0, here - FILMSTRIP // 2) : max(0, here - FILMSTRIP // 2) + FILMSTRIP]
    thumbs = store.thumbnails([s.attachment["sha256"] for s in window if s.attachment.get("sha256")])
    st.caption(f"Screenshots {own.index(window[0]) + 1}–{own.index(window[-1]) + 1} of {len(own)}")
    with st.container(horizontal=True, gap="small", key="filmstrip"):
        for s in window:
            with st.container(width=THUMB_PX, gap=None):
                data = thumbs.get(s.attachment.get("sha256") or "")
                if data is not None:
                    st.image(inline(data, "image/jpeg"), width=THUMB_PX)  # stored as JPEG (media.images)
                st.button(
                    f"Step {s.step.seq}",
                    key=f"film_{s.step.seq}",
                    on_click=_go,
                    args=(s.step.seq,),
                    type="primary" if s.step.seq == seq else "secondary",
                    width="stretch",
                )


def controls(tl: Timeline, pos: int) -> None:
    with st.container(horizontal=True, gap="small"):
        playing = st.toggle("Play", key="player_playing", help="Move through the steps on their own")
        speed = st.segmented_control("Speed", list(SPEEDS), default="1×", key="player_speed", label_visibility="collapsed")
    if playing and pos < len(tl.steps) - 1:
        _ticker(tl, 1.0 / SPEEDS.get(speed or "1×", 1.0))
    elif playing:
        st.caption("End of the run.")


def _ticker(tl: Timeline, every: float) -> None:
    @st.fragment(run_every=every)
    def tick() -> None:
        # the fragment also runs with the page: move on only once a full interval has passed
        last = st.session_state.get("player_last_tick")
        now = time.monotonic()
        if last is None or now - last < every * 0.9:
            st.session_state.setdefault("player_last_tick", now)
            return
        st.session_state["player_last_tick"] = now
        seq = st.session_state.get("step", tl.steps[0].seq)
        seqs = tl.columns["seq"]  # in order: the next step is a bisection away, no step built
        later = bisect_right(seqs, seq)
        if later < len(seqs):
            st.session_state["step"] = seqs[later]
            st.rerun(scope="app")

    tick()


def download(store: Store, tl: Timeline) -> None:
    sid = tl.session["id"]

    def make() -> bytes:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "run.mp4"
            video.export(store, sid, out)
            return out.read_bytes()

    st.download_button(
        "Download as video (MP4)",
        make,
        file_name=f"{sid[:80]}.mp4",
        mime="video/mp4",
        icon=":material/movie:",
        key="player_video",
        on_click="ignore",
    )

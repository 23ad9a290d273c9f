"""Screenshots from every way in (SDK, HTTP, the native contract, importers), kept once per content hash,
refused with a reason naming the step, and runs exported as MP4, WebM and GIF that decode."""

from __future__ import annotations

import base64
import io

import imageio_ffmpeg
import pytest
from PIL import Image, ImageDraw, ImageFile
from starlette.testclient import TestClient

from replay_core.events import SessionEvent, StepEvent, parse_event
from replay_core.ingest.pipeline import import_bytes, ingest
from replay_core.media import video
from replay_core.media.attachments import attach_image, screenshots
from replay_core.media.frames import CAPTION_H, SIZE, shots
from replay_core.media.images import MediaError, check
from replay_core.sdk.recorder import Recorder
from replay_core.server.api import create_app
from replay_core.server.auth import Access

TOKEN = "media-test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def page(label: str, size=(640, 400), fmt="PNG") -> bytes:
    """A rendered page (header bar, a field, a button), not noise: what a browser agent sees."""
    img = Image.new("RGB", size, (255, 255, 255))
    d = ImageDraw.Draw(img)
    d.rectangle([0, 0, size[0], 48], fill=(32, 80, 160))
    d.text((12, 14), label, fill=(255, 255, 255))
    d.rectangle([40, 120, 400, 150], outline=(120, 120, 120), width=2)
    d.rectangle([40, 180, 160, 214], fill=(40, 160, 90))
    buf = io.BytesIO()
    img.save(buf, format=fmt)
    return buf.getvalue()


def a_run(store, sid="b1", n=6):
    steps = [
        StepEvent(
            session_id=sid,
            event_id=f"e{i}",
            seq=i,
            type="tool_call" if i % 2 else "think",
            tool_name="click" if i % 2 else None,
            tool_args={"index": i} if i % 2 else None,
            content=None if i % 2 else f"look at the page {i}",
            duration_ms=700,
            metadata={"state": {"goal": "change the address"}},
        )
        for i in range(1, n + 1)
    ]
    ingest(store, [SessionEvent(session_id=sid, name="change address"), *steps])


# ------------------------------------------------------------------ checking


def test_check_reads_the_real_type_and_size():
    img = check(page("x"))
    assert (img.mime_type, img.width, img.height) == ("image/png", 640, 400)
    assert check(page("x", fmt="JPEG"), "image/jpg").mime_type == "image/jpeg"


@pytest.mark.parametrize(
    "data, declared, says",
    [
        (b"", None, "empty image"),
        (b"<html>not an image</html>", None, "not a readable image"),
        (page("t")[:300], None, "not a readable image"),  # truncated PNG: fails when decoded, not later
        (page("t"), "image/jpeg", "declared as image/jpeg but the bytes are image/png"),
    ],
)
def test_bad_images_are_refused_with_a_reason(data, declared, says):
    with pytest.raises(MediaError, match=says):
        check(data, declared)


def test_giant_images_are_refused_before_decoding():
    with pytest.raises(MediaError, match="over the 1,000-byte cap"):
        check(page("big"), max_bytes=1000)
    bomb = io.BytesIO()
    Image.new("1", (9000, 9000)).save(bomb, format="PNG")  # 81 Mpx, a few KB on disk
    with pytest.raises(MediaError, match="pixel cap"):
        check(bomb.getvalue())


# ------------------------------------------------------------------ storing


def test_same_image_is_stored_once_and_thumbnailed_once(store):
    a_run(store)
    shot = page("checkout")
    first = attach_image(store, "b1", "e2", shot, target={"x": 100, "y": 130})
    second = attach_image(store, "b1", "e3", shot)  # the page did not change
    again = attach_image(store, "b1", "e2", shot)  # the same screenshot twice on one step
    assert first["sha256"] == second["sha256"] and first["new"] and second["new"] and not again["new"]
    listed = screenshots(store, "b1")
    assert [(a["event_id"], a["target"]) for a in listed] == [("e2", {"x": 100.0, "y": 130.0}), ("e3", None)]
    assert store.attachment_data(listed[0]["id"]) == store.attachment_data(listed[1]["id"]) == shot
    thumbs = store.thumbnails([first["sha256"]])
    with Image.open(io.BytesIO(thumbs[first["sha256"]])) as t:
        assert t.width == 240
    assert store.delete_sessions(["b1"]) == 1
    assert store.thumbnails([first["sha256"]]) == {}  # the bytes went with the last run that used them


def test_a_bad_inline_image_keeps_the_step_and_names_it(store):
    good = base64.b64encode(page("ok")).decode()
    line = (
        b'{"kind":"session","session_id":"n1"}\n'
        b'{"kind":"step","session_id":"n1","event_id":"s1","seq":1,"type":"observation","content":"page",'
        b'"attachments":[{"media_type":"image/png","data":"' + good.encode() + b'","target":{"box":[40,120,360,30]}},'
        b'{"media_type":"image/png","data":"aGVsbG8="},{"url":"http://127.0.0.1:9/x.png"}]}\n'
    )
    report = import_bytes(store, line, "inline.jsonl", fmt="native")
    assert report.steps == 1
    assert len(report.media_refused) == 1
    assert report.media_refused[0].startswith("session n1, step 1, attachment 2: not a readable image (UnidentifiedImageError")
    step = store.load_steps("n1")[0]
    assert step.metadata["attachments_refused"] == report.media_refused
    assert step.metadata["attachment_urls"] == ["http://127.0.0.1:9/x.png"]  # a reference, never fetched
    assert "attachments" not in step.metadata  # no base64 left in the step row
    assert [a["target"] for a in screenshots(store, "n1")] == [{"box": [40.0, 120.0, 360.0, 30.0]}]
    again = import_bytes(store, line, "inline.jsonl", fmt="native")
    assert again.steps == 0 and len(screenshots(store, "n1")) == 1


def test_an_imported_image_is_decoded_once_and_its_thumbnail_is_of_it(store, monkeypatch):
    """Checking decodes every byte; the import then stores what it checked, thumbnail included, without
    decoding it again (a second and third decoding were two thirds of keeping a screenshot)."""
    shot = page("decoded once", size=(960, 600))
    decodes = []
    real_load = ImageFile.ImageFile.load
    monkeypatch.setattr(
        ImageFile.ImageFile,
        "load",  # a load with tiles left is a decoding; later loads are no-ops
        lambda img: (img.tile and decodes.append(img.format)) or real_load(img),
    )
    line = (
        b'{"kind":"session","session_id":"d1"}\n'
        b'{"kind":"step","session_id":"d1","event_id":"s1","seq":1,"type":"observation","content":"page",'
        b'"attachments":[{"media_type":"image/png","data":"' + base64.b64encode(shot) + b'"}]}\n'
    )
    report = import_bytes(store, line, "inline.jsonl", fmt="native")
    assert report.steps == 1 and report.media_refused == []
    assert decodes == ["PNG"]
    monkeypatch.undo()
    [listed] = screenshots(store, "d1")
    assert store.attachment_data(listed["id"]) == shot
    with (
        Image.open(io.BytesIO(store.thumbnails([listed["sha256"]])[listed["sha256"]])) as thumb,
        Image.open(io.BytesIO(shot)) as whole,
    ):
        assert (thumb.format, thumb.mode, thumb.size) == ("JPEG", "RGB", (240, 150))
        header = whole.convert("RGB").resize((240, 150)).getpixel((120, 5))  # the page's blue header bar
        assert all(abs(a - b) <= 24 for a, b in zip(thumb.getpixel((120, 5)), header, strict=True))


# ------------------------------------------------------------------ SDK and HTTP


def test_sdk_screenshots_from_bytes_path_and_pil_land_on_their_steps(store, tmp_path):
    path = tmp_path / "shot.jpg"
    path.write_bytes(page("from a file", fmt="JPEG"))
    with Recorder(store.url, spool_dir=str(tmp_path / "spool")) as rec:
        with rec.session("browser", session_id="sdk-1") as run:
            first = run.tool_call("click", {"index": 3})
            assert run.screenshot(page("after click"), target=(120, 130)) == first
            run.think("the form is open")
            run.screenshot(str(path))
            run.screenshot(Image.open(io.BytesIO(page("pil"))), step=first)
            with pytest.raises(MediaError, match="not a readable image"):
                run.screenshot(b"not an image")
    listed = screenshots(store, "sdk-1")
    steps = {s.event_id: s.seq for s in store.load_steps("sdk-1")}
    assert [(steps[a["event_id"]], a["mime_type"], a["target"]) for a in listed] == [
        (1, "image/png", {"x": 120.0, "y": 130.0}),
        (2, "image/jpeg", None),
        (1, "image/png", None),
    ]


@pytest.fixture
def client(store):
    with TestClient(create_app(store, access=Access(api_tokens=(TOKEN,)))) as c:
        yield c


def test_http_takes_raw_json_and_multipart_images(client, store):
    a_run(store)
    base = "/api/v1/sessions/b1/steps"
    r = client.post(f"{base}/e1/attachments", content=page("raw"), headers={**AUTH, "content-type": "image/png"})
    assert r.status_code == 200, r.text
    body = {"media_type": "image/jpeg", "data": base64.b64encode(page("json", fmt="JPEG")).decode(), "target": {"x": 5, "y": 6}}
    assert client.post(f"{base}/e2/attachments", json=body, headers=AUTH).status_code == 200
    r = client.post(
        f"{base}/e3/attachments",
        headers=AUTH,
        files={"file": ("p.png", page("multipart"), "image/png")},
        data={"target": '{"box": [1, 2, 3, 4]}'},
    )
    assert r.status_code == 200, r.text
    listed = screenshots(store, "b1")
    assert [(a["event_id"], a["target"]) for a in listed] == [
        ("e1", None),
        ("e2", {"x": 5.0, "y": 6.0}),
        ("e3", {"box": [1.0, 2.0, 3.0, 4.0]}),
    ]
    got = client.get(f"/api/v1/attachments/{listed[1]['id']}", headers=AUTH)
    assert got.status_code == 200 and got.headers["content-type"] == "image/jpeg" and got.content.startswith(b"\xff\xd8")


def test_http_refuses_broken_images_naming_the_step(client, store):
    a_run(store)
    r = client.post(
        "/api/v1/sessions/b1/steps/e4/attachments", content=page("x")[:200], headers={**AUTH, "content-type": "image/png"}
    )
    assert r.status_code == 422 and r.json()["detail"].startswith("session b1, step e4: not a readable image")
    r = client.post(
        "/api/v1/sessions/nope/steps/e1/attachments", content=page("x"), headers={**AUTH, "content-type": "image/png"}
    )
    assert r.status_code == 404
    r = client.post("/api/v1/sessions/b1/steps/e1/attachments", json={"media_type": "image/png"}, headers=AUTH)
    assert r.status_code == 422 and "data" in r.text
    assert screenshots(store, "b1") == [] and len(store.load_steps("b1")) == 6  # nothing stored, nothing lost


def test_the_attachment_event_is_part_of_the_contract():
    ev = parse_event({"kind": "attachment", "session_id": "s", "event_id": "e", "data": "aGk="})
    assert ev.to_json_dict()["kind"] == "attachment"
    with pytest.raises(ValueError, match="one of the two"):
        parse_event({"kind": "attachment", "session_id": "s", "event_id": "e"})


# ------------------------------------------------------------------ video


def _mp4_frames(path):
    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    frames = [bytes(f) for f in reader]
    return meta["size"], frames


@pytest.mark.parametrize("suffix", [".mp4", ".webm", ".gif"])
def test_export_decodes_with_one_size_and_a_caption_per_step(sqlite_store, tmp_path, suffix):
    store = sqlite_store
    a_run(store)
    attach_image(store, "b1", "e1", page("one", size=(800, 500)), target={"x": 60, "y": 130})
    attach_image(store, "b1", "e3", page("three", size=(1024, 700)))  # another size: frames are normalised
    out = tmp_path / f"run{suffix}"
    report = video.export(store, "b1", out, fps=2)
    assert report.steps == 6 and report.frames == 6 and not report.truncated  # 0.7 s steps → 1 frame each at 2 fps
    if suffix == ".gif":
        with Image.open(out) as gif:
            assert gif.size == SIZE and gif.n_frames == 6
            bars = []
            for i in range(gif.n_frames):
                gif.seek(i)
                bars.append(gif.convert("RGB").crop((0, SIZE[1] - CAPTION_H, SIZE[0], SIZE[1])).tobytes())
    else:
        size, frames = _mp4_frames(out)
        assert tuple(size) == SIZE and len(frames) == 6
        row = SIZE[0] * 3
        bars = [f[(SIZE[1] - CAPTION_H) * row :] for f in frames]
    assert len(set(bars)) == 6  # each frame's caption names its own step


def test_long_runs_are_cut_with_a_note_and_ranges_pick_steps(sqlite_store, tmp_path):
    a_run(sqlite_store, n=12)
    cut = video.export(sqlite_store, "b1", tmp_path / "cut.gif", fps=1, max_seconds=4)
    assert cut.truncated and cut.steps == 4
    part = video.export(sqlite_store, "b1", tmp_path / "part.gif", from_seq=3, to_seq=5)
    assert part.steps == 3
    with pytest.raises(ValueError, match="no steps in that range"):
        video.export(sqlite_store, "b1", tmp_path / "none.gif", from_seq=99)
    with pytest.raises(ValueError, match="is .mp4, .webm or .gif"):
        video.export(sqlite_store, "b1", tmp_path / "run.avi")


def test_a_step_without_its_own_screenshot_shows_the_last_one_dimmed(sqlite_store):
    a_run(sqlite_store)
    attach_image(sqlite_store, "b1", "e2", page("two"))
    got = [(s.step.seq, s.attachment is not None, s.own) for s in shots(sqlite_store, "b1")]
    assert got == [(1, False, False), (2, True, True), (3, True, False), (4, True, False), (5, True, False), (6, True, False)]


def test_cli_films_a_run_and_a_pair_side_by_side(sqlite_store, tmp_path):
    from typer.testing import CliRunner

    from replay_core.cli import app
    from replay_core.demo import load_demo

    load_demo(sqlite_store)
    runner = CliRunner()
    a, b = "demo-08-flight-bos-sfo-a", "demo-09-flight-bos-sfo-b"
    one = runner.invoke(app, ["video", a, "-o", str(tmp_path / "a.mp4"), "--db", sqlite_store.url, "--json"])
    assert one.exit_code == 0, one.output
    size, frames = _mp4_frames(tmp_path / "a.mp4")
    assert tuple(size) == SIZE and len(frames) >= len(sqlite_store.load_steps(a))
    pair = runner.invoke(
        app, ["video", a, "--compare", b, "-o", str(tmp_path / "pair.gif"), "--fps", "1", "--db", sqlite_store.url]
    )
    assert pair.exit_code == 0, pair.output
    with Image.open(tmp_path / "pair.gif") as gif:
        assert gif.n_frames > 1 and gif.size == SIZE
    bad = runner.invoke(app, ["video", "no-such-run", "-o", str(tmp_path / "x.mp4"), "--db", sqlite_store.url])
    assert bad.exit_code == 1 and str(bad.exception) == "no session 'no-such-run'"  # main() prints it as one line


# ------------------------------------------------------------------ importers


def test_computer_use_screenshots_in_anthropic_and_openai_transcripts_become_attachments(store):
    import orjson

    shot = base64.b64encode(page("desktop")).decode()
    anthropic = {
        "messages": [
            {"role": "user", "content": "open the settings"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "tu1",
                        "name": "computer",
                        "input": {"action": "left_click", "coordinate": [320, 200]},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "tu1",
                        "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": shot}}],
                    }
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "Settings are open."}]},
        ]
    }
    report = import_bytes(store, orjson.dumps(anthropic), "computer_use.json", fmt="anthropic")
    sid = report.sessions[0]
    result = next(s for s in store.load_steps(sid) if s.type == "tool_result")
    listed = screenshots(store, sid)
    assert [(a["event_id"], a["mime_type"], a["width"]) for a in listed] == [(result.event_id, "image/png", 640)]
    assert "desktop" not in orjson.dumps(result.metadata).decode() and shot not in orjson.dumps(result.metadata).decode()
    openai = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is on screen?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{shot}"}},
            ],
        },
        {"role": "assistant", "content": "A settings window."},
    ]
    report = import_bytes(store, orjson.dumps(openai), "vision.json", fmt="openai_chat")
    first = store.load_steps(report.sessions[0])[0]
    assert first.type == "input" and first.metadata["content_parts"] == [{"type": "image_url", "moved_to": "attachments"}]
    assert [a["event_id"] for a in screenshots(store, report.sessions[0])] == [first.event_id]
    assert len(store.thumbnails([listed[0]["sha256"]])) == 1  # the same screenshot in both files: one blob


def test_a_click_in_the_arguments_is_drawn_on_the_screen_it_acted_on(sqlite_store):
    ingest(
        sqlite_store,
        [
            SessionEvent(session_id="cu", name="computer use"),
            StepEvent(session_id="cu", event_id="r0", seq=1, type="tool_result", tool_name="computer", content="screen"),
            StepEvent(
                session_id="cu",
                event_id="c1",
                seq=2,
                type="tool_call",
                tool_name="computer",
                tool_args={"action": "left_click", "coordinate": [320, 200]},
            ),
            StepEvent(session_id="cu", event_id="t2", seq=3, type="think", content="wait"),
        ],
    )
    attach_image(sqlite_store, "cu", "r0", page("before the click"))
    got = [(s.step.seq, s.own, s.acted_on, s.target) for s in shots(sqlite_store, "cu")]
    assert got == [(1, True, False, None), (2, False, True, {"x": 320.0, "y": 200.0}), (3, False, False, None)]

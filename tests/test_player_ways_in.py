"""Screenshots from every way in reach the timeline's filmstrip (AppTest): recorded with the SDK's
`run.screenshot()`, posted over HTTP, and Claude Code image blocks (a screenshot tool's result, an
image Read, a pasted image) imported from a transcript."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

import orjson
from apptest_helpers import cursor, empty_store, page  # noqa: F401  (fixtures)
from starlette.testclient import TestClient
from test_media import page as rendered_page

from replay_core.ingest.pipeline import import_bytes
from replay_core.media.attachments import screenshots
from replay_core.sdk.recorder import Recorder
from replay_core.server.api import create_app
from replay_core.server.auth import Access

TIMELINE = "pages/timeline.py"
TOKEN = "player-ways-in-token-0123456789"
# kzahel/yepanywhere packages/server/test/fixtures/captured/claude-basic-2026-09-12/native.jsonl @ 76ea6130fd95
CLAUDE = Path(__file__).resolve().parent / "fixtures/claude_code/yepanywhere_claude-basic_native.jsonl"


def filmstrip(at) -> list[str]:
    return [b.label for b in at.button if b.key and b.key.startswith("film_")]


def strip_caption(at) -> str:
    return next(c.value for c in at.caption if c.value.startswith("Screenshots "))


def test_sdk_screenshots_appear_in_the_filmstrip(empty_store, tmp_path):
    with Recorder(empty_store.url, spool_dir=str(tmp_path / "spool")) as rec:
        with rec.session("change the address", session_id="sdk-shots") as run:
            run.input("change my delivery address")
            click = run.tool_call("click", {"index": 3})
            run.screenshot(rendered_page("address form"), target=(120, 130))
            run.think("the form is open")
            run.tool_call("type", {"text": "1 Main St"})
            run.screenshot(rendered_page("typed"))
            run.decision("saved")
    assert [a["event_id"] for a in screenshots(empty_store, "sdk-shots")][0] == click
    at = page(TIMELINE, params={"session": "sdk-shots", "step": "2"})
    assert not at.exception
    assert "What the agent saw on screen" in [h.value for h in at.subheader]
    assert filmstrip(at) == ["Step 2", "Step 4"] and strip_caption(at) == "Screenshots 1–2 of 2"
    assert len(at.get("image")) == 3  # the large one and the two thumbnails
    assert any("Red: where the agent acted" in c.value for c in at.caption)  # the target recorded with it
    at.button(key="film_4").click().run()
    assert cursor(at) == 4


def test_http_screenshots_appear_in_the_filmstrip(empty_store):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(create_app(empty_store, access=Access(api_tokens=(TOKEN,)))) as client:
        steps = [
            {
                "event_id": f"e{i}",
                "type": "tool_call" if i % 2 else "think",
                "tool_name": "click" if i % 2 else None,
                "content": None if i % 2 else f"page {i}",
            }
            for i in range(1, 6)
        ]
        r = client.post("/api/v1/sessions", json={"session_id": "http-shots", "name": "over http"}, headers=auth)
        assert r.status_code in (200, 201), r.text
        r = client.post(
            "/api/v1/sessions/http-shots/steps", json=[{k: v for k, v in s.items() if v is not None} for s in steps], headers=auth
        )
        assert r.status_code in (200, 201), r.text
        base = "/api/v1/sessions/http-shots/steps"
        assert (
            client.post(
                f"{base}/e1/attachments", content=rendered_page("raw"), headers={**auth, "content-type": "image/png"}
            ).status_code
            == 200
        )
        body = {"media_type": "image/png", "data": base64.b64encode(rendered_page("json")).decode(), "target": {"x": 5, "y": 6}}
        assert client.post(f"{base}/e5/attachments", json=body, headers=auth).status_code == 200
    at = page(TIMELINE, params={"session": "http-shots", "step": "5"})
    assert not at.exception
    assert filmstrip(at) == ["Step 1", "Step 5"] and strip_caption(at) == "Screenshots 1–2 of 2"
    assert len(at.get("image")) == 3


def _line(**rec) -> bytes:
    return (
        orjson.dumps(
            {
                "isSidechain": False,
                "userType": "external",
                "cwd": "/work/app",
                "version": "2.1.258",
                "sessionId": "30499b10-b34f-4546-a431-c77d14d042e1",
                **rec,
            }
        )
        + b"\n"
    )


def with_images(shot: str, pasted: str) -> tuple[bytes, list[str]]:
    """The real transcript, then a hand-made supplement shaped as Claude Code writes images (no public transcript
    with an image block was found): a Read of a screenshot whose tool_result holds an `image` block (base64 source)
    and whose `toolUseResult` repeats it under `file.base64`, then a user message with a pasted image and text."""
    real = CLAUDE.read_bytes()
    last = orjson.loads(real.strip().rsplit(b"\n", 1)[1])
    ids = [str(uuid.UUID(int=n)) for n in (1, 2, 3)]
    call = {"type": "tool_use", "id": "toolu_shot", "name": "Read", "input": {"file_path": "/work/app/shot.png"}}
    lines = [
        _line(
            parentUuid=last["uuid"],
            uuid=ids[0],
            type="assistant",
            timestamp="2026-09-12T09:56:00.000Z",
            message={
                "id": "msg_shot",
                "type": "message",
                "role": "assistant",
                "model": "claude-haiku-4-5-20251001",
                "content": [call],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 5, "output_tokens": 9},
            },
        ),
        _line(
            parentUuid=ids[0],
            uuid=ids[1],
            type="user",
            timestamp="2026-09-12T09:56:01.000Z",
            message={
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_shot",
                        "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": shot}}],
                    }
                ],
            },
            toolUseResult={"type": "image", "file": {"base64": shot, "type": "image/png", "originalSize": 4096}},
        ),
        _line(
            parentUuid=ids[1],
            uuid=ids[2],
            type="user",
            timestamp="2026-09-12T09:56:30.000Z",
            message={
                "role": "user",
                "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": pasted}},
                    {"type": "text", "text": "this button is misaligned"},
                ],
            },
        ),
    ]
    return real + b"".join(lines), ids


def test_claude_code_image_blocks_become_screenshots_on_their_steps(empty_store):
    shot = base64.b64encode(rendered_page("screenshot")).decode()
    pasted = base64.b64encode(rendered_page("pasted")).decode()
    data, ids = with_images(shot, pasted)
    report = import_bytes(empty_store, data, "session.jsonl")
    assert report.files[0]["format"] == "claude_code" and not report.media_refused
    (sid,) = report.sessions
    steps = {s.event_id: s for s in empty_store.load_steps(sid)}
    result, prompt = steps[f"{ids[1]}.0"], steps[ids[2]]
    assert (result.type, result.tool_name, result.tool_call_id) == ("tool_result", "Read", "toolu_shot")
    assert (prompt.type, prompt.content) == ("input", "this button is misaligned")
    listed = screenshots(empty_store, sid)
    assert [(a["event_id"], a["mime_type"]) for a in listed] == [(result.event_id, "image/png"), (prompt.event_id, "image/png")]
    # the bytes left the step rows: the toolUseResult mirror and the parts say where they went
    assert shot not in orjson.dumps(result.metadata).decode() and pasted not in orjson.dumps(prompt.metadata).decode()
    assert result.metadata["tool_use_result"]["file"]["base64"] == {"moved_to": "attachments"}
    assert prompt.metadata["content_parts"] == [{"type": "image", "moved_to": "attachments"}]
    # what the reader must not claim: an outcome, a cost, a target the transcript never recorded
    row = empty_store.get_session(sid)
    assert row["status"] == "unknown" and row["cost_usd"] is None and all(a["target"] is None for a in listed)
    again = import_bytes(empty_store, data, "session.jsonl")
    assert again.steps == 0 and len(screenshots(empty_store, sid)) == 2  # once per content hash
    at = page(TIMELINE, params={"session": sid, "step": str(result.seq)})
    assert not at.exception
    assert filmstrip(at) == [f"Step {result.seq}", f"Step {prompt.seq}"]


def test_a_broken_claude_code_image_is_refused_naming_the_step_and_the_step_is_kept(empty_store):
    data, ids = with_images(base64.b64encode(rendered_page("x")[:200]).decode(), "not base64 at all")
    report = import_bytes(empty_store, data, "session.jsonl")
    (sid,) = report.sessions
    assert screenshots(empty_store, sid) == []
    assert len(report.media_refused) == 2 and all(r.startswith(f"session {sid}, step ") for r in report.media_refused)
    steps = {s.event_id: s for s in empty_store.load_steps(sid)}
    assert steps[f"{ids[1]}.0"].metadata["attachments_refused"] and steps[ids[2]].content == "this button is misaligned"

"""Images in OTLP model spans (GenAI message parts of type blob / uri, OpenAI image_url content) become the
step's screenshots through the media path: spans made by the real OpenTelemetry SDK, encoded by its OTLP
exporter's own encoder, sent over HTTP to /v1/traces and imported as a file, on SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import io
import json

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from PIL import Image
from starlette.testclient import TestClient

from replay_core.ingest.pipeline import import_bytes
from replay_core.server.api import create_app
from replay_core.server.auth import Access

TOKEN = "images-token-0000"


def _png(color: tuple[int, int, int], size=(40, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, format="PNG")
    return out.getvalue()


RED, BLUE, CHART = _png((200, 0, 0)), _png((0, 0, 200)), _png((0, 150, 0), (64, 48))


@pytest.fixture(scope="module")
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("vision-bot")
    conv = {"gen_ai.conversation.id": "vision-1"}
    user = {
        "role": "user",
        "parts": [
            {"type": "text", "content": "What is on these screens?"},
            {"type": "blob", "modality": "image", "mime_type": "image/png", "content": base64.b64encode(RED).decode()},
            {"type": "uri", "modality": "image", "mime_type": "image/png", "uri": "https://example.invalid/screen.png"},
            {
                "type": "blob",
                "modality": "image",
                "mime_type": "image/png",
                "content": base64.b64encode(b"not an image").decode(),
            },
        ],
    }
    openai_style = {
        "role": "user",
        "content": [
            {"type": "text", "text": "and this one"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(BLUE).decode()}},
        ],
    }
    answer = {
        "role": "assistant",
        "parts": [
            {"type": "text", "content": "Two screens and a chart."},
            {"type": "blob", "modality": "image", "mime_type": "image/png", "content": base64.b64encode(CHART).decode()},
        ],
    }
    with tracer.start_as_current_span("invoke_agent vision", attributes={**conv, "gen_ai.operation.name": "invoke_agent"}):
        with tracer.start_as_current_span(
            "chat gpt-4o",
            kind=SpanKind.CLIENT,
            attributes={
                **conv,
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.input.messages": json.dumps([user, openai_style]),
                "gen_ai.output.messages": json.dumps([answer]),
            },
        ):
            pass
    return exporter.get_finished_spans()


def _check(store) -> None:
    (think,) = [s for s in store.load_steps("vision-1") if s.type == "think"]
    kept = [a for a in store.list_attachments("vision-1") if a["event_id"] == think.event_id]
    assert [a["name"] for a in kept] == ["input.1", "input.4", "output.1"]
    assert [store.attachment_data(a["id"]) for a in kept] == [RED, BLUE, CHART]
    assert [(a["width"], a["height"]) for a in kept] == [(40, 30), (40, 30), (64, 48)]
    context = store.step_context("vision-1", think.event_id)
    text = json.dumps(context)
    assert base64.b64encode(RED).decode()[:40] not in text and "data:image" not in text  # bytes kept once, as the attachment
    assert {"type": "blob", "modality": "image", "mime_type": "image/png", "attachment": "input.1"} in context[0]["parts"]
    assert context[1]["content"][1] == {"type": "image_url", "image_url": {"attachment": "input.4"}}
    meta = think.metadata
    assert meta["attachment_urls"] == ["https://example.invalid/screen.png"]  # a reference, never fetched
    (refused,) = meta["attachments_refused"]  # the part that is no image: named, and the step kept
    assert "attachment 3" in refused
    assert think.content == "Two screens and a chart."
    assert "CHART" not in json.dumps(meta) and base64.b64encode(CHART).decode()[:40] not in json.dumps(meta)


def test_images_sent_over_otlp_http_are_the_steps_screenshots(store, spans):
    access = Access.load(env={"AGENT_REPLAY_API_TOKENS": f"editor:{TOKEN}"}, secrets={})
    with TestClient(create_app(store, access=access)) as client:
        r = client.post(
            "/v1/traces",
            content=encode_spans(spans).SerializeToString(),
            headers={"Content-Type": "application/x-protobuf", "Authorization": f"Bearer {TOKEN}"},
        )
        assert r.status_code == 200, r.text
    _check(store)


def test_images_in_an_imported_otlp_file_are_the_steps_screenshots(store, spans):
    report = import_bytes(store, encode_spans(spans).SerializeToString(), "vision.bin")
    assert report.files[0]["format"] == "otlp-proto"
    assert len(report.media_refused) == 1 and "attachment 3" in report.media_refused[0]
    _check(store)
    again = import_bytes(store, encode_spans(spans).SerializeToString(), "vision.bin")
    assert again.steps == 0 and again.duplicates > 0 and len(store.list_attachments("vision-1")) == 3  # once per hash and step

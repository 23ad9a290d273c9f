"""Request bodies read under the size limit: raw bytes (gzip unpacked), JSON, a JSON object, a
multipart image. A body over the limit is refused (413) as soon as it passes it, not once read."""

from __future__ import annotations

import base64
import os
import zlib
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from ..events import error_message
from .responses import ApiError
from .validation import validation_failed

Model = TypeVar("Model", bound=BaseModel)


def max_body_bytes() -> int:
    """The body size limit: AGENT_REPLAY_MAX_BODY_MB megabytes (default 10)."""
    return int(float(os.environ.get("AGENT_REPLAY_MAX_BODY_MB", "10")) * 1024 * 1024)


def _too_big(limit: int) -> ApiError:
    return ApiError(413, f"body larger than {limit / 1024 / 1024:g} MB (AGENT_REPLAY_MAX_BODY_MB)")


async def body_bytes(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it passes `limit` (gzip is unpacked)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_big(limit)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_big(limit)
        chunks.append(chunk)
    data = b"".join(chunks)
    encoding = request.headers.get("content-encoding", "identity").lower()
    if encoding == "gzip":
        unpacker = zlib.decompressobj(wbits=31)
        try:
            data = await run_in_threadpool(unpacker.decompress, data, limit + 1)
        except zlib.error as exc:
            raise ApiError(400, f"body: not valid gzip ({exc})") from None
        if len(data) > limit or unpacker.unconsumed_tail:
            raise _too_big(limit)
    elif encoding != "identity":
        raise ApiError(415, f"content-encoding {encoding!r} is not supported (use gzip or none)")
    return data


async def json_body(request: Request, limit: int, *, empty: Any = None) -> Any:
    """The body as JSON; `empty` stands for an empty body (refused with 400 when None)."""
    data = await body_bytes(request, limit)
    if not data.strip():
        if empty is not None:
            return empty
        raise ApiError(400, "body: empty, expected JSON", [{"loc": "body", "msg": "empty"}])
    try:
        return await run_in_threadpool(orjson.loads, data)  # a big body must not hold the event loop
    except orjson.JSONDecodeError as exc:
        raise ApiError(400, f"body: invalid JSON ({exc.args[0]})", [{"loc": "body", "msg": "invalid JSON"}]) from None


async def object_body(request: Request, limit: int) -> dict:
    body = await json_body(request, limit)
    if not isinstance(body, dict):
        raise ApiError(422, "body: expected a JSON object", [{"loc": "body", "msg": "expected a JSON object"}])
    return body


async def typed_body(request: Request, limit: int, model: type[Model]) -> dict:
    """A JSON object validated into `model`: every field at fault is named (422), nothing is coerced from
    another JSON type. Returns the fields the body gave, by their JSON names, as the model made them."""
    body = await object_body(request, limit)
    try:
        checked = model.model_validate(body)
    except ValidationError as exc:
        errors = [
            {"loc": ".".join(str(p) for p in err["loc"]) or "body", "msg": error_message(err)}
            for err in exc.errors(include_url=False)
        ]
        raise validation_failed(errors) from None
    return checked.model_dump(by_alias=True, exclude_unset=True)


async def multipart_image(request: Request, limit: int) -> dict:
    """A multipart body's `file` part (and optional `target` JSON) as an attachment's fields."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_big(limit)
    async with request.form(max_files=1, max_fields=4, max_part_size=limit) as form:
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise ApiError(422, "multipart: expected a `file` part holding the image")
        data = await upload.read()
        target = form.get("target")
    body = {"media_type": upload.content_type, "data": base64.b64encode(data).decode(), "name": upload.filename}
    if isinstance(target, str) and target.strip():
        try:
            body["target"] = orjson.loads(target)
        except orjson.JSONDecodeError:
            raise ApiError(422, 'multipart: `target` is JSON: {"x", "y"} or {"box": [x, y, w, h]}') from None
    return body

"""A small OpenAI-compatible chat-completions server on 127.0.0.1, scripted per test.

Tests queue what the next requests get (an answer, tool calls, an HTTP error, a
delay, a malformed body) and read back what the client sent, so litellm is exercised
over a real HTTP connection without any provider.

    with OpenAIServer() as server:
        server.script(server.text("Done."), server.tool_calls(("search", {"q": "x"})))
        litellm.completion(model="openai/fake", api_base=server.base_url, api_key="x", messages=[...])

Concurrent tests (experiments) script per model instead of a queue: `server.route("fake-a",
fn)` answers every request for model "fake-a" with `fn(payload)`, whatever the order the
requests arrive in; `server.count(model)` says how many requests a model got.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict → JSON; str/bytes → sent as is (malformed on purpose)
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    drop: bool = False  # close the connection without answering


class OpenAIServer:
    """Serves POST /v1/chat/completions from a queue of Replies; records requests."""

    def __init__(self, default: Reply | None = None):
        self.replies: deque[Reply] = deque()
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []  # request headers (lower-case names), in the order of `requests`
        self.in_flight = 0
        self.max_in_flight = 0  # most requests being served at once (fan-out tests)
        # With `hold_until` n, each answer waits (up to 30 s) until n requests have been in flight at once:
        # a fan-out test sees its limit reached whatever the machine's load, where a delay only makes it likely.
        self.hold_until = 0
        self._all_in = threading.Event()
        self.default = default
        self.routes: dict[str, Callable[[dict], Reply]] = {}  # model name -> responder (see route)
        self._lock = threading.Lock()
        self._counter = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                if self.path.rstrip("/").endswith("/models"):
                    return self._send(Reply(body={"object": "list", "data": [{"id": "fake", "object": "model"}]}))
                self._send(Reply(status=404, body={"error": {"message": "not found"}}))

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    payload = json.loads(raw or b"{}")
                except ValueError:
                    payload = {"_raw": raw.decode(errors="replace")}
                reply = server._next(payload, {k.lower(): v for k, v in self.headers.items()})
                server._enter()
                try:
                    if server.hold_until:
                        server._all_in.wait(30)
                    if reply.delay_s:
                        time.sleep(reply.delay_s)
                    self._send(reply)
                finally:
                    server._leave()

            def _send(self, reply: Reply):
                if reply.drop:
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                body = reply.body
                data = body if isinstance(body, bytes) else body.encode() if isinstance(body, str) else json.dumps(body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", reply.content_type)
                    self.send_header("content-length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # client gave up (timeout tests)
                    pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> OpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # ------------------------------------------------------------------ scripting
    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def route(self, model: str, responder: Callable[[dict], Reply]) -> None:
        """Answer every request for `model` (the name without litellm's provider prefix) with responder(payload)."""
        with self._lock:
            self.routes[model] = responder

    def count(self, model: str | None = None) -> int:
        """Requests received (for one model, when named)."""
        with self._lock:
            return sum(1 for p in self.requests if model is None or p.get("model") == model)

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if self.in_flight >= self.hold_until:
                self._all_in.set()

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _next(self, payload: dict, headers: dict[str, str] | None = None) -> Reply:
        with self._lock:
            self.requests.append(payload)
            self.headers.append(headers or {})
            self._counter += 1
            responder = self.routes.get(payload.get("model"))
            if responder is None and self.replies:
                return self.replies.popleft()
        if responder is not None:
            return responder(payload)
        if self.default is not None:
            return self.default
        return Reply(status=500, body={"error": {"message": "test server: no scripted reply left", "type": "server_error"}})

    def _completion(self, message: dict, finish: str, usage: tuple[int, int], model: str) -> dict:
        return {
            "id": f"chatcmpl-test-{self._counter}",
            "object": "chat.completion",
            "created": 1767225600,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
        }

    def text(self, content: str, *, usage: tuple[int, int] = (20, 5), model: str = "fake-model", delay_s: float = 0.0) -> Reply:
        return Reply(body=self._completion({"role": "assistant", "content": content}, "stop", usage, model), delay_s=delay_s)

    def tool_calls(
        self, *calls: tuple[str, dict], content: str | None = None, usage: tuple[int, int] = (30, 10), model: str = "fake-model"
    ) -> Reply:
        message = {
            "role": "assistant",
            "content": content,
            "tool_calls": [
                {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                for i, (name, args) in enumerate(calls)
            ],
        }
        return Reply(body=self._completion(message, "tool_calls", usage, model))

    @staticmethod
    def error(status: int, message: str = "error", kind: str = "server_error", headers: dict | None = None) -> Reply:
        return Reply(status=status, body={"error": {"message": message, "type": kind}}, headers=headers or {})

    @staticmethod
    def malformed() -> Reply:
        return Reply(body="{this is not json")

"""Two local stand-ins, stdlib only: a scripted OpenAI-compatible model and an OTLP collector.

The model answers the same conversation to every framework, so captures differ only in how each
framework and its instrumentation report it. The collector keeps every request body byte for byte,
in arrival order, because the reader must cope with exactly what exporters send.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL_NAME = "gpt-4o-mini"
MODEL_SNAPSHOT = "gpt-4o-mini-2024-07-18"
CITY = "Paris"
FINAL_ANSWER_OK = "In Paris it is sunny and 21 °C, and the local time is 14:05."
FINAL_ANSWER_TOOL_FAILED = "In Paris it is sunny and 21 °C; I could not get the local time."
# Header values never kept in fixtures: keys, tokens and cookies.
SECRET_HEADERS = {"authorization", "x-api-key", "api-key", "cookie", "proxy-authorization"}


def _text(content) -> str:
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def _tool_results(messages: list[dict]) -> list[str]:
    """Text of every tool result the framework sent back, in order.

    Most frameworks send OpenAI `tool` role messages; smolagents sends each result as a user message
    block opened by a line "Observation:" (or "Error:" when the tool raised), and merges consecutive
    blocks into one message.
    """
    results = []
    for message in messages:
        text = _text(message.get("content"))
        if message.get("role") in ("tool", "function"):
            results.append(text)
        elif message.get("role") == "user":
            for line in text.splitlines():
                if line.strip() in ("Observation:", "Error:"):
                    results.append(line)
                elif results and line.strip() and results[-1] in ("Observation:", "Error:"):
                    results[-1] += " " + line
    return results


def _offered_tools(body: dict) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        function = tool.get("function") or {}
        names.append(function.get("name") or tool.get("name") or "?")
    return names


def _looks_failed(text: str) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in ("error", "unavailable", "exception", "traceback", "failed"))


class ScriptedModel:
    """get_weather(Paris), then get_time(Paris), then a final answer; decided from the tool results seen.

    Deciding from the conversation (not from a call counter) keeps the script right when a framework
    retries, re-sends history, or runs two agents against the same server.
    """

    def __init__(self, delay_seconds: float = 0.0):
        self.delay_seconds = delay_seconds
        self.calls: list[dict] = []
        self._lock = threading.Lock()

    def respond(self, body: dict) -> dict:
        if self.delay_seconds:
            time.sleep(self.delay_seconds)
        messages = body.get("messages") or []
        results = _tool_results(messages)
        offered = _offered_tools(body)
        with self._lock:
            call_number = len(self.calls) + 1
        if len(results) == 0:
            step, message = "get_weather", self._tool_call("get_weather", {"city": CITY}, call_number)
        elif len(results) == 1:
            step, message = "get_time", self._tool_call("get_time", {"city": CITY}, call_number)
        else:
            answer = FINAL_ANSWER_TOOL_FAILED if _looks_failed(results[-1]) else FINAL_ANSWER_OK
            if "final_answer" in offered:
                step, message = "final_answer tool", self._tool_call("final_answer", {"answer": answer}, call_number)
            else:
                step, message = "final answer", {"role": "assistant", "content": answer}
        with self._lock:
            self.calls.append(
                {
                    "call": call_number,
                    "messages_in": len(messages),
                    "roles_in": [message.get("role") for message in messages],
                    "last_message_start": _text(messages[-1].get("content"))[:120] if messages else None,
                    "tool_results_seen": len(results),
                    "tools_offered": offered,
                    "stream": bool(body.get("stream")),
                    "answered": step,
                }
            )
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return {
            "id": f"chatcmpl-scripted-{call_number}",
            "object": "chat.completion",
            "created": 1796565600 + call_number,
            "model": MODEL_SNAPSHOT,
            "system_fingerprint": "fp_scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {
                "prompt_tokens": 100 * call_number + 20,
                "completion_tokens": 10 + call_number,
                "total_tokens": 100 * call_number + 30 + call_number,
            },
        }

    @staticmethod
    def _tool_call(name: str, arguments: dict, call_number: int) -> dict:
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{name}_{call_number}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
            ],
        }


def _stream_chunks(completion: dict) -> list[dict]:
    """The same completion as server-sent chunks, for a framework that insists on streaming."""
    choice = completion["choices"][0]
    message = choice["message"]
    base = {key: completion[key] for key in ("id", "created", "model", "system_fingerprint")}
    base["object"] = "chat.completion.chunk"
    delta: dict = {"role": "assistant"}
    if message.get("tool_calls"):
        delta["tool_calls"] = [dict(call, index=i) for i, call in enumerate(message["tool_calls"])]
    else:
        delta["content"] = message["content"]
    return [
        dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}]),
        dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]),
        dict(base, choices=[], usage=completion["usage"]),
    ]


class _ModelHandler(BaseHTTPRequestHandler):
    model: ScriptedModel

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            self._send_json({"object": "list", "data": [{"id": MODEL_NAME, "object": "model", "owned_by": "local"}]})
        else:
            self._send_json({"error": {"message": f"no route {self.path}"}}, status=404)

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json({"error": {"message": f"only chat completions here, not {self.path}"}}, status=404)
            return
        completion = self.model.respond(body)
        if body.get("stream"):
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for chunk in _stream_chunks(completion):
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")
        else:
            self._send_json(completion)

    def _send_json(self, payload: dict, status: int = 200):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Collector:
    """Keeps every OTLP request as received: path, headers (secrets blanked) and the raw body."""

    def __init__(self):
        self.requests: list[dict] = []
        self._lock = threading.Lock()

    def keep(self, method: str, path: str, headers, body: bytes):
        kept_headers = {
            name.lower(): ("<dropped>" if name.lower() in SECRET_HEADERS else value) for name, value in headers.items()
        }
        with self._lock:
            self.requests.append(
                {
                    "arrival": len(self.requests) + 1,
                    "at": time.time(),
                    "method": method,
                    "path": path,
                    "headers": kept_headers,
                    "body": body,
                }
            )

    def take(self) -> list[dict]:
        with self._lock:
            taken, self.requests = self.requests, []
        return taken


class _CollectorHandler(BaseHTTPRequestHandler):
    collector: Collector

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        self.collector.keep("POST", self.path, self.headers, body)
        if "json" in (self.headers.get("content-type") or ""):
            data, content_type = b"{}", "application/json"
        else:
            data, content_type = b"", "application/x-protobuf"  # an empty Export*ServiceResponse
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _serve(handler_class: type, **attributes) -> ThreadingHTTPServer:
    handler = type(handler_class.__name__, (handler_class,), attributes)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def serve_model(model: ScriptedModel) -> ThreadingHTTPServer:
    return _serve(_ModelHandler, model=model)


def serve_collector(collector: Collector) -> ThreadingHTTPServer:
    return _serve(_CollectorHandler, collector=collector)

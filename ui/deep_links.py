"""A page opened by its own address (`/runs`, `/timeline?session=…`) logs no 404 in the browser.

Streamlit's browser code does not know where the server's root is: on `/runs` it tries `/runs/` first
(`/runs/_stcore/health` and `/runs/_stcore/host-config`, two 404s in the console of every deep link)
and then `/`. It takes the root from `window.__streamlit.BACKEND_BASE_URL` when a page sets it, so
`DeepLinks`, an ASGI middleware in front of the app, sets it in the app's HTML page: the folder the
page's own scripts load from (`./`, as Streamlit's index.html links them), whatever prefix a proxy adds.
"""

from __future__ import annotations

# Only Streamlit's index.html has this line; the script goes before it, to be read before the app's code.
MARKER = b'<script type="module" crossorigin src="./static/js/index.'
SCRIPT = b'<script>window.__streamlit = {BACKEND_BASE_URL: new URL("./", window.location.href).href}</script>\n    '


def _asks_for_a_page(scope) -> bool:
    """A browser's GET of a page (it accepts HTML), not a call of the API or a script's fetch."""
    if scope["type"] != "http" or scope["method"] != "GET" or "/_stcore/" in scope["path"]:
        return False
    accept = next((v for k, v in scope["headers"] if k == b"accept"), b"")
    return b"text/html" in accept


class DeepLinks:
    """ASGI middleware: the app's HTML page names the server's root (BACKEND_BASE_URL) for its scripts."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if not _asks_for_a_page(scope):  # the API, scripts, health checks: untouched, gzip and all
            await self.app(scope, receive, send)
            return
        # unzipped and sent as a body, not as a file path, so that the page can be read and changed here
        headers = [(k, v) for k, v in scope["headers"] if k != b"accept-encoding"]
        extensions = {k: v for k, v in scope.get("extensions", {}).items() if k != "http.response.pathsend"}
        scope = {**scope, "headers": headers, "extensions": extensions}
        start: dict | None = None
        body = b""

        async def send_page(message):
            nonlocal start, body
            if message["type"] == "http.response.start":
                if dict(message.get("headers", [])).get(b"content-type", b"").startswith(b"text/html"):
                    start = message  # held until the whole body is in
                    return
            elif start is not None and message["type"] == "http.response.body":
                body += message.get("body", b"")
                if message.get("more_body"):
                    return
                if MARKER in body:
                    body = body.replace(MARKER, SCRIPT + MARKER, 1)
                headers = [(k, v) for k, v in start["headers"] if k != b"content-length"]
                await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
                message = {"type": "http.response.body", "body": body}
            await send(message)

        await self.app(scope, receive, send_page)

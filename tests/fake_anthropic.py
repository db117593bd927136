"""A stand-in for Anthropic's Messages API on loopback, for the tests that run the real Claude
Code CLI.

It is a stand-in because no model can run here (no weights, no network): it answers
``POST /v1/messages`` (streamed as server-sent events when the request asks for a stream, as
Claude Code does, or as one JSON message) with a canned text reply, and records every request,
so a test can read what Claude Code sent the model: the hooks' added context included.
Everything on the client's side of the socket is the real CLI.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REPLY = "The deploy key is kept in vault 7."


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def do_HEAD(self) -> None:
        self._send(200, b"", "text/plain")

    def do_GET(self) -> None:
        self._send(404, json.dumps({"type": "error", "error": {"type": "not_found"}}).encode())

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.loads(raw or b"{}")
        with self.server.lock:
            self.server.requests.append({"path": self.path, "body": body})
        if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
            usage = {"input_tokens": 10}
            return self._send(200, json.dumps(usage).encode())
        message = {
            "id": f"msg_{len(self.server.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "stand-in"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 0},
        }
        if not body.get("stream"):
            message.update(
                content=[{"type": "text", "text": REPLY}],
                stop_reason="end_turn",
                usage={"input_tokens": 10, "output_tokens": 8},
            )
            return self._send(200, json.dumps(message).encode())
        events = [
            ("message_start", {"type": "message_start", "message": message}),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": REPLY},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 8},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        stream = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
        self._send(200, stream.encode(), "text/event-stream")

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def messages(self) -> list[dict[str, Any]]:
        """The bodies of the Messages API requests received, oldest first."""
        with self.lock:
            return [r["body"] for r in self.requests if r["path"].startswith("/v1/messages")]


@contextmanager
def stand_in_model() -> Iterator[_Server]:
    """The stand-in serving on a free loopback port until the block ends."""
    server = _Server()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)

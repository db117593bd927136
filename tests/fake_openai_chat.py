"""A fake OpenAI-compatible chat server on loopback, for the chat client's tests.

It is a fake because no LLM can run in the test environment (no model weights, no GPU, no
network): it speaks the same protocol as Ollama, llama.cpp's server, vLLM or a hosted API at
``POST /v1/chat/completions`` and answers with a canned reply, so everything on the client's
side of the socket is real. Run it as ``python tests/fake_openai_chat.py``: it prints its port
on the first line of stdout and serves until it is killed.

Test-only control routes (not part of the OpenAI API):

* ``POST /_script`` with a JSON list of answers to give next, in order; each may set
  ``status`` (default 200), ``body`` (JSON), ``raw`` (a text body instead, e.g. broken JSON),
  ``delay`` (seconds before answering) and ``headers``. When the script is used up, answers
  are 200 with the reply.
* ``POST /_reply`` with ``{"content": ...}``: the reply's message content (default: one line
  naming the model and the number of messages).
* ``GET /_requests``: every chat request received, ``{"headers", "body"}``, oldest first.
* ``POST /_reset``: forget the script, reply and requests.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.script: list[dict[str, Any]] = []
        self.reply: str | None = None
        self.requests: list[dict[str, Any]] = []


STATE = State()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet: the tests read stdout for the port
        pass

    def do_GET(self) -> None:
        if self.path == "/_requests":
            with STATE.lock:
                return self._send(200, json.dumps(STATE.requests))
        self._send(404, json.dumps({"error": {"message": f"no route GET {self.path}"}}))

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            return self._send(400, json.dumps({"error": {"message": "request is not JSON"}}))
        if self.path == "/_script":
            with STATE.lock:
                STATE.script.extend(body)
            return self._send(204, "")
        if self.path == "/_reply":
            with STATE.lock:
                STATE.reply = body["content"]
            return self._send(204, "")
        if self.path == "/_reset":
            with STATE.lock:
                STATE.reset()
            return self._send(204, "")
        if self.path != "/v1/chat/completions":
            return self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}))
        with STATE.lock:
            STATE.requests.append({"headers": dict(self.headers.items()), "body": body})
            step = STATE.script.pop(0) if STATE.script else {}
            reply = STATE.reply
        time.sleep(float(step.get("delay", 0)))
        if "raw" in step or "body" in step:
            text = step["raw"] if "raw" in step else json.dumps(step["body"])
            return self._send(int(step.get("status", 200)), text, step.get("headers"))
        if reply is None:
            reply = f"- {len(body['messages'])} message(s) for {body['model']}"
        self._send(int(step.get("status", 200)), json.dumps(_completion(body, reply)))

    def _send(self, status: int, text: str, headers: dict[str, str] | None = None) -> None:
        data = text.encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up waiting (the timeout tests)


def _completion(request: dict[str, Any], content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request["model"],
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    sys.stdout.close()
    server.serve_forever()


if __name__ == "__main__":
    main()

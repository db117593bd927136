"""Running servers a hook can reach: where each ``noteseek serve`` listens, and for which project.

An agent's prompt hook is a fresh process, and opening the index is most of its time (importing
the engine and the index's first reads: about 0.6 s cold on 2 cores). A ``noteseek serve`` of
the same project holds the index open. So while it runs, each server keeps a small file in
noteseek's data folder (``servers/<pid>.json``: its URL, its project file, its index folder and,
when it requires one, its API token), and a hook in a project with a running server asks it over
loopback instead (``interfaces/cli/hook.py``). Only the user can read the file: it holds no more
than the user's own configuration does. A file whose process is gone (killed, so it could not
remove its file) is removed by the next look-up.

Standard library only beyond :mod:`noteseek.places`: a hook reads this before any of the
engine, the settings or the HTTP framework is imported.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported by the listener when it starts: a hook never needs them
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from noteseek.places import data_dir

SERVERS_DIR = "servers"
RECALL_ROUTE = "/memories/recall"
PROMPT_CHARS = 20_000
"""The most of a prompt a hook sends a server's recall route: its search is the prompt's first
content words (at most 4,000 characters of them), which this holds many times over; and any
such prompt, JSON-escaped, fits within ``serve.max_body_bytes``."""


@dataclass(frozen=True, slots=True)
class Server:
    """A running server: its process, where it listens, what it serves."""

    pid: int
    url: str
    project_file: str
    index_dir: str
    token: str | None = None


class Unreachable(Exception):
    """The server did not answer, or answered with an error (its message says which)."""


def folder() -> Path:
    return data_dir() / SERVERS_DIR


def register(
    url: str,
    project_file: Path,
    index_dir: Path,
    *,
    token: str | None = None,
    pid: int | None = None,
) -> Path:
    """Say that this process serves ``project_file``'s index at ``url`` (asking for ``token``
    when not None); the file that says it (remove it with :func:`unregister`). Only the user
    can read it."""
    pid = os.getpid() if pid is None else pid
    entry = {
        "pid": pid,
        "url": url,
        "project_file": str(project_file.resolve()),
        "index_dir": str(index_dir.resolve()),
        "token": token,
    }
    where = folder()
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"{pid}.json"
    temp = where / f".{pid}.json.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(entry, out)
    os.replace(temp, path)
    return path


def unregister(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def find(project_file: Path) -> Server | None:
    """A running server of ``project_file``'s project (the newest when there are several)."""
    want = str(project_file.resolve())
    found: list[Server] = []
    try:
        entries = list(folder().glob("*.json"))
    except OSError:
        return None
    for path in entries:
        server = _read(path)
        if server is None or server.project_file != want:
            continue
        if not _alive(server.pid):
            unregister(path)
            continue
        found.append(server)
    return max(found, key=lambda s: s.pid, default=None)


def ask(server: Server, route: str, body: dict[str, Any], *, timeout: float) -> dict[str, Any]:
    """POST ``body`` as JSON to ``route`` of ``server``; its JSON answer.
    :class:`Unreachable` when it does not answer in ``timeout`` seconds or answers an error."""
    import urllib.error
    import urllib.request

    headers = {"Content-Type": "application/json"}
    if server.token is not None:
        headers["Authorization"] = f"Bearer {server.token}"
    request = urllib.request.Request(
        server.url + route, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            data = json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        raise Unreachable(f"{server.url} answered {exc.code}") from None
    except (OSError, ValueError) as exc:
        raise Unreachable(f"{server.url} did not answer: {exc}") from None
    if not isinstance(data, dict):
        raise Unreachable(f"{server.url} answered something other than a JSON object")
    return data


def _read(path: Path) -> Server | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        token = data.get("token")
        return Server(
            int(data["pid"]),
            str(data["url"]),
            str(data["project_file"]),
            str(data["index_dir"]),
            None if token is None else str(token),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process of that number: not ours
        return False
    return True


# -- a listener for hooks beside a server that speaks no HTTP ---------------------------------

MAX_BODY_BYTES = 256 * 1024
"""The most a hook's request may carry: a prompt of :data:`PROMPT_CHARS` characters, each
JSON-escaped to six at worst, and the braces."""
REQUEST_TIMEOUT = 10.0


class HookListener:
    """The prompt hook's one route (:data:`RECALL_ROUTE`) on a loopback port, for a server that
    has no HTTP of its own (``noteseek mcp`` talks over stdio): started with :meth:`start`,
    which registers it (with a token of its own that the hook sends back), ended with
    :meth:`stop`. ``answer`` takes the request's JSON object and returns the HTTP status and
    the JSON object to send; it runs on the listener's request threads."""

    def __init__(
        self,
        answer: Callable[[dict[str, Any]], tuple[int, dict[str, Any]]],
        project_file: Path,
        index_dir: Path,
    ) -> None:
        import secrets

        self.answer = answer
        self.project_file = project_file
        self.index_dir = index_dir
        self.token = secrets.token_urlsafe(32)
        self.url = ""
        self._server: ThreadingHTTPServer | None = None
        self._entry: Path | None = None

    def start(self) -> None:
        """Listen on a free loopback port and say so in the registry (OSError if it cannot)."""
        from http.server import ThreadingHTTPServer

        handler = _handler(self.answer, self.token)
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        self._server = server
        host, port = server.server_address[:2]
        self.url = f"http://{host!s}:{port}"
        threading.Thread(target=server.serve_forever, name="noteseek-hooks", daemon=True).start()
        self._entry = register(self.url, self.project_file, self.index_dir, token=self.token)

    def stop(self) -> None:
        if self._entry is not None:
            unregister(self._entry)
            self._entry = None
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()


def _handler(
    answer: Callable[[dict[str, Any]], tuple[int, dict[str, Any]]], token: str
) -> type[BaseHTTPRequestHandler]:
    import hmac
    from http.server import BaseHTTPRequestHandler

    expected = f"Bearer {token}".encode()

    class Handler(BaseHTTPRequestHandler):
        timeout = REQUEST_TIMEOUT  # a client that stalls gives its thread back

        def do_POST(self) -> None:
            if self.path != RECALL_ROUTE:
                return self._send(404, {"error": f"no route {self.path[:100]!r}"})
            given = (self.headers.get("Authorization") or "").encode()
            if not hmac.compare_digest(given, expected):
                return self._send(401, {"error": "wrong or missing token"})
            try:
                length = int(self.headers.get("Content-Length") or "")
            except ValueError:
                return self._send(411, {"error": "Content-Length is required"})
            if not 0 <= length <= MAX_BODY_BYTES:
                return self._send(413, {"error": f"the body is over {MAX_BODY_BYTES} bytes"})
            try:
                body = json.loads(self.rfile.read(length))
            except ValueError:
                return self._send(400, {"error": "the body is not JSON"})
            if not isinstance(body, dict):
                return self._send(400, {"error": "the body is not a JSON object"})
            status, payload = answer(body)
            return self._send(status, payload)

        def do_GET(self) -> None:
            self._send(405, {"error": f"POST {RECALL_ROUTE} only"})

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return  # beside an MCP server on stdio: nothing on the terminal

    return Handler

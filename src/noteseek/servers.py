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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

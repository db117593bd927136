"""The writer role: one process per index holds an advisory lock and does every write.

The lock is an OS file lock (``flock`` through filelock) on ``<index>/writer.lock``: the kernel
releases it when the holder exits, however it exits (kill -9 included), so a stale lock is
never left behind. Beside it, ``writer.json`` says who holds the role (pid, host, since when,
and the command, such as ``serve`` or ``index``, when the holder said) for ``status`` and for
the message a refused writer shows; a file whose process no longer holds the lock is stale and
is overwritten by the next writer.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

LOCK_FILE = "writer.lock"
INFO_FILE = "writer.json"

_HELD: set[Path] = set()
"""The index folders whose writer role this process holds."""


def holds_writer(index_dir: Path) -> bool:
    """Whether this process holds the writer role of the index in ``index_dir`` now."""
    return Path(index_dir).resolve() in _HELD


class WriterLock:
    """Try to become the writer of the index in ``index_dir``; never blocks."""

    def __init__(self, index_dir: Path) -> None:
        self.index_dir = Path(index_dir)
        self._lock = FileLock(
            str(self.index_dir / LOCK_FILE), timeout=0, thread_local=False, is_singleton=False
        )

    @property
    def held(self) -> bool:
        return bool(self._lock.is_locked)

    def try_acquire(self, command: str | None = None) -> bool:
        """Take the role if nobody holds it; True if this process holds it now.

        ``command`` (``serve``, ``mcp``, ``watch``, ``index`` ...) is recorded in
        ``writer.json``, so another process refused the role can say who holds it.
        """
        if self.held:
            return True
        self.index_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            return False
        info: dict[str, Any] = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.time(),
        }
        if command:
            info["command"] = command
        tmp = self.index_dir / f"{INFO_FILE}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(info), encoding="utf-8")
        os.replace(tmp, self.index_dir / INFO_FILE)
        _HELD.add(self.index_dir.resolve())
        return True

    def release(self) -> None:
        if not self.held:
            return
        try:
            info = read_writer_info(self.index_dir)
            if info and info.get("pid") == os.getpid():
                (self.index_dir / INFO_FILE).unlink(missing_ok=True)
        finally:
            _HELD.discard(self.index_dir.resolve())
            self._lock.release(force=True)


def read_writer_info(index_dir: Path) -> dict[str, Any] | None:
    """Who holds (or last held) the writer role, from ``writer.json``; None if unknown."""
    try:
        data = json.loads((Path(index_dir) / INFO_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None

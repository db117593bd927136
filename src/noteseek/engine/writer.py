"""The writer role: one process per index writes it (``indexing/lock.py``: an OS file lock).

Live commands (``serve``, ``mcp``, ``watch``) hold the role for as long as they run
(``engine/live.py``); a one-shot command that writes (``noteseek index``, ``noteseek rebuild``)
holds it for its duration with :func:`writer_role`, or is refused with :class:`WriterBusy`,
which names the holder and how to ask it instead.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from noteseek.indexing.lock import WriterLock, read_writer_info
from noteseek.store.folder import folder_error

LIVE_COMMANDS = ("serve", "mcp", "watch")
"""The commands that run a live index (and so hold the writer role for as long as they run)."""
HOLDER_WAIT = 1.0
"""Seconds a refused writer waits to learn who holds the role: the holder writes
``writer.json`` just after it takes the lock, so for a moment the file may be missing or
still name the previous, dead holder."""


class NotWriter(RuntimeError):
    """Raised for a write request in a process that does not hold the writer role."""


class WriterBusy(NotWriter):
    """Another process holds the writer role; ``pid`` and ``command`` say which, if known."""

    def __init__(self, pid: int | None, command: str | None) -> None:
        self.pid = pid
        self.command = command
        super().__init__(_busy_message(pid, command))


def _busy_message(pid: int | None, command: str | None) -> str:
    who = f"noteseek {command}" if command else "another process"
    if pid is not None:
        who += f" (pid {pid})"
    if command in ("index", "rebuild", "migrate", "roots"):
        return f"{who} is writing this index; wait for it to finish, then try again"
    if command == "watch":
        return (
            f"{who} is the writer of this index and keeps it fresh, indexing every change; "
            "stop it first"
        )
    ask = "MCP tool reindex" if command == "mcp" else "MCP tool reindex, POST /reindex"
    return (
        f"{who} is the writer of this index and keeps it fresh; ask it to re-index ({ask}) "
        "or stop it first"
    )


@contextlib.contextmanager
def writer_role(index_dir: Path, command: str) -> Iterator[WriterLock]:
    """Hold the writer role of the index in ``index_dir`` while the block runs.

    For one-shot commands that write (``index``, ``rebuild``): raises :class:`WriterBusy` when
    another process holds the role, without waiting for it (only up to ``HOLDER_WAIT`` to learn
    who it is). Released when the block exits, and by the kernel if the process dies.
    """
    lock = WriterLock(index_dir)
    deadline = time.monotonic() + HOLDER_WAIT
    while not try_acquire_role(lock, index_dir, command):
        holder = live_holder(index_dir)
        if holder is not None or time.monotonic() >= deadline:
            info = holder or {}
            raise WriterBusy(info.get("pid"), info.get("command"))
        time.sleep(0.05)  # the holder is writing writer.json, or has just exited
    try:
        yield lock
    finally:
        lock.release()


def try_acquire_role(lock: WriterLock, index_dir: Path, command: str | None) -> bool:
    """Take the role; a folder that cannot be created or written raises a store error that
    says which folder and what to do."""
    try:
        return lock.try_acquire(command)
    except OSError as exc:
        raise folder_error(index_dir, exc) from None


def live_holder(index_dir: Path) -> dict[str, Any] | None:
    """``writer.json`` if it names a process that is running (or one on another host)."""
    info = read_writer_info(index_dir)
    if info is None or not isinstance(info.get("pid"), int):
        return None
    if info.get("host") != socket.gethostname():
        return info  # a process on another machine: no way to check, believe the file
    try:
        os.kill(info["pid"], 0)
    except ProcessLookupError:
        return None
    except OSError:  # it exists, but belongs to someone else
        pass
    return info


def command_from_argv(argv: Sequence[str]) -> str | None:
    """The live command this process runs (``noteseek serve`` ...), when the caller did not say."""
    return next((arg for arg in argv[1:] if arg in LIVE_COMMANDS), None)

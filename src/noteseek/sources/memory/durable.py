"""Durable file writes for the memory folder: a reader sees the old file or the new one, never
a part, and a write the call returned from survives a crash (temporary file, fsync, rename,
fsync of the folder)."""

from __future__ import annotations

import os
import secrets
import stat
from contextlib import suppress


def write_atomic(path: str, data: bytes) -> None:
    """Replace ``path`` by ``data`` so that readers see the old file or the new one, never a
    part: a hidden temporary file in the same folder (removed on any error), fsync, rename,
    fsync of the folder. An existing file's permissions are kept."""
    folder = os.path.dirname(path)
    make_dirs(folder)
    temp = os.path.join(folder, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as fh:
            with suppress(OSError):
                os.fchmod(fh.fileno(), stat.S_IMODE(os.stat(path).st_mode))
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp)
        raise
    fsync_dir(folder)


def make_dirs(path: str) -> None:
    """Create ``path`` and its missing parents, each made durable in its parent."""
    if os.path.isdir(path):
        return
    parent = os.path.dirname(path)
    if parent and parent != path:
        make_dirs(parent)
    try:
        os.mkdir(path)
    except FileExistsError:
        if not os.path.isdir(path):
            raise
    else:
        fsync_dir(parent)


def fsync_dir(path: str) -> None:
    """Make a folder's entries durable (a rename is not, until its folder is synced)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)

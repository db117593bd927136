"""The index folder around a backend's files: its OS errors explained, damage, saved roots.

* **Damage.** When any handle finds the index damaged (a malformed page, a file that is not a
  database, an I/O error), it records why in ``damaged.json``, so every process (a CLI
  search, ``status``, a server's ``/health``, the live writer that rebuilds) learns it, not
  only the one that hit the bad page. The record names the index file it is about (device and
  inode): once the file is deleted and created again, a record about the old one is stale and
  ignored, so a reader still holding the old file cannot mark the new one damaged.
* **Full checks.** ``checked.json`` says when the index file was last checked through (a
  full ``PRAGMA integrity_check``, by the live writer in the background or ``noteseek status
  --check``), how long it took and what it found; like a damage record it names the file it
  is about, so a rebuilt index is not taken for checked.
* **Roots.** ``roots.json`` keeps the roots an index was built from. Roots given on the
  command line live only in the index, so without this copy a damaged index could not say
  what to rebuild from.
* **Errors.** An ``OSError`` on the folder (read-only, a file in the way, a full disk) becomes
  a :class:`~noteseek.store.errors.StoreError` whose message names the folder and what to do.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from noteseek.store.errors import IndexFull, IndexUnwritable, StoreError

DAMAGE_FILE = "damaged.json"
CHECK_FILE = "checked.json"
ROOTS_FILE = "roots.json"

FileIdentity = tuple[int, int]
"""(device, inode) of an index file: which file a damage record is about."""

FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
READ_ONLY_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


def identity(path: Path) -> FileIdentity | None:
    """The file's (device, inode), None when it does not exist."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def writable(path: Path) -> bool:
    """Whether this process may write ``path`` (create files in it, for a folder); False on
    a read-only mount."""
    return os.access(path, os.W_OK)


# -- damage ---------------------------------------------------------------------------------------


def mark_damaged(folder: Path, reason: str, file: FileIdentity | None) -> None:
    """Record that the index file ``file`` in ``folder`` is damaged, and why.

    Best effort: in a read-only folder (or on a full disk) nothing can be written, and the
    process that found the damage still reports it with its error.
    """
    record = {"reason": reason, "since": time.time(), "pid": os.getpid(), "file": file}
    _write_json(folder, DAMAGE_FILE, record)


def damage(folder: Path, file: FileIdentity | None) -> str | None:
    """Why the index file ``file`` is damaged, or None (no record, or one about another file).

    ``file`` None (no index file) means nothing is damaged: there is nothing to distrust.
    """
    if file is None:
        return None
    try:
        text = (folder / DAMAGE_FILE).read_text(encoding="utf-8")
    except OSError:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        record = {}
    if not isinstance(record, dict):
        record = {}
    about = record.get("file")
    if isinstance(about, list) and len(about) == 2 and tuple(about) != file:
        return None  # about a file since deleted and created again
    return str(record.get("reason") or "recorded as damaged")


def clear_damage(folder: Path) -> None:
    with contextlib.suppress(OSError):
        (folder / DAMAGE_FILE).unlink(missing_ok=True)


def damaged_message(folder: Path, reason: str) -> str:
    """What every door says about a damaged index: where, why, and what rebuilds it."""
    return (
        f"the index in {folder} is damaged ({reason}); run `noteseek rebuild` to build it "
        "again from the files (a running `noteseek serve` or `noteseek mcp` does it by itself)"
    )


# -- full checks ----------------------------------------------------------------------------------


def record_check(
    folder: Path, file: FileIdentity | None, found: str | None, seconds: float
) -> None:
    """Record that the index file ``file`` was checked through just now: what the check
    ``found`` (None: sound) and how many ``seconds`` it took. Best effort, as for damage."""
    record = {"at": time.time(), "seconds": round(seconds, 3), "found": found, "file": file}
    _write_json(folder, CHECK_FILE, record)


def clear_check(folder: Path) -> None:
    """Forget the last full check (the index was built again: a new file may reuse the old
    one's inode, so the record's file identity alone cannot tell)."""
    with contextlib.suppress(OSError):
        (folder / CHECK_FILE).unlink(missing_ok=True)


def last_check(folder: Path, file: FileIdentity | None) -> dict[str, object] | None:
    """The last full check of the index file ``file`` (``at``, ``seconds``, ``found``), or
    None: never checked, or only an earlier file of that name was."""
    if file is None:
        return None
    try:
        record = json.loads((folder / CHECK_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("at"), (int, float)):
        return None
    about = record.get("file")
    if not (isinstance(about, list) and tuple(about) == file):
        return None
    found = record.get("found")
    return {
        "at": float(record["at"]),
        "seconds": float(record.get("seconds") or 0.0),
        "found": None if found is None else str(found),
    }


def _write_json(folder: Path, name: str, record: Mapping[str, object]) -> None:
    """Replace ``folder/name`` with ``record`` as JSON, atomically; nothing on an OS error."""
    tmp = folder / f"{name}.{os.getpid()}.{threading.get_native_id()}.tmp"
    with contextlib.suppress(OSError):
        tmp.write_text(json.dumps(record), encoding="utf-8")
        os.replace(tmp, folder / name)
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)


# -- roots ----------------------------------------------------------------------------------------


def save_roots(folder: Path, roots: Mapping[str, tuple[str, str]]) -> None:
    """Keep ``{name: (path, kind)}`` beside the index, for a rebuild of a damaged one."""
    data = {name: {"path": path, "kind": kind} for name, (path, kind) in sorted(roots.items())}
    target = folder / ROOTS_FILE
    text = json.dumps(data, indent=1, ensure_ascii=False)
    with contextlib.suppress(OSError):
        if target.read_text(encoding="utf-8") == text:
            return
    tmp = folder / f"{ROOTS_FILE}.{os.getpid()}.tmp"
    with contextlib.suppress(OSError):
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)


def saved_roots(folder: Path) -> dict[str, tuple[str, str]]:
    """The roots :func:`save_roots` kept (empty when there are none or the file is unreadable)."""
    try:
        data = json.loads((folder / ROOTS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(name): (str(v["path"]), str(v.get("kind") or "files"))
        for name, v in data.items()
        if isinstance(v, dict) and isinstance(v.get("path"), str)
    }


# -- errors ---------------------------------------------------------------------------------------


def folder_error(folder: Path, exc: OSError) -> StoreError:
    """An OS error on the index folder as the store error that says what to do about it."""
    what = exc.strerror or str(exc)
    if exc.errno in FULL_ERRNOS:
        return IndexFull(full_message(folder, what))
    blocker = _file_in_the_way(folder)
    if blocker is not None:
        return IndexUnwritable(
            f"cannot create the index folder {folder}: {blocker} is a file, not a folder; "
            "choose another folder (--index-dir or index.dir)"
        )
    if exc.errno in READ_ONLY_ERRNOS:
        return IndexUnwritable(
            f"cannot write the index folder {folder} ({what}): it is read-only for this "
            "process; make it writable, or choose another folder (--index-dir or index.dir). "
            "A complete index there can still be searched"
        )
    return IndexUnwritable(
        f"cannot use the index folder {folder} ({what}); choose another folder "
        "(--index-dir or index.dir)"
    )


def full_message(folder: Path, what: str = "database or disk is full") -> str:
    return (
        f"the disk holding the index folder {folder} is full ({what}): nothing indexed before "
        "is lost; free some space (or choose another folder with --index-dir), then run the "
        "command again"
    )


def _file_in_the_way(folder: Path) -> Path | None:
    """The nearest of ``folder`` and its parents that exists and is not a folder, if any."""
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None
